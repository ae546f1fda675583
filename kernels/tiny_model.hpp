// tiny_model.hpp: the lesson's smallest trainable attention (section 4, "Deeper: Train W_V
// too") and its training loop, one model per call, shared by the CUDA kernel and the CPU.
//
// Two words, apple = [1, 0] and sweet = [0, 1], so X = I_2 and X W = W. Parameters W_Q, W_K,
// W_V (2x2 each, row-major). Forward for sweet only (spec/EXPERIMENTS.md, training):
//   q = X[1] W_Q = row 1 of W_Q;   s_j = (X W_K)_j . q / sqrt(2);   a = softmax(s);
//   out = a (X W_V) = a0 W_V[0] + a1 W_V[1];   loss = (out_x - 1)^2 + out_y^2.
// "Weight on apple" is a0. Arithmetic follows the lesson's numpy code operation by operation
// (division by sqrt(2), exp(s - max), e / sum), so results match it to rounding.
//
// Training: `steps` steps of gradient descent with rate lr. Sequential schedule (the lesson's):
// within a step the trained matrices are visited in order W_Q, W_K, W_V; each one's gradient
// is taken at the current parameters (already holding this step's earlier updates) and applied
// at once. Simultaneous: all gradients at the same parameters, then all updates. Gradients are
// numeric (central differences, step h, one element at a time, as the lesson) or analytic:
//   dout = 2 (out - [1, 0]);  da_j = W_V[j] . dout;  ds_j = a_j (da_j - a . da)
//   dW_Q[1][c] = sum_j ds_j W_K[j][c] / sqrt(2)   (row 0 of W_Q never reaches the loss)
//   dW_K[j][c] = ds_j q_c / sqrt(2);   dW_V[j][c] = a_j dout_c
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "hd.hpp"
#include "kernels/numpy_random/numpy_random.hpp"

namespace attn::tiny {

enum class Config : int { qk_identity, all_identity, all_random, qk_random };
enum class Grad : int { numeric, analytic };
enum class Schedule : int { sequential, simultaneous };

struct TrainOptions {
  int steps = 3000;
  double lr = 0.5;
  Grad grad = Grad::numeric;
  double h = 1e-5;
  Schedule schedule = Schedule::sequential;
};

// w[0] = W_Q, w[1] = W_K, w[2] = W_V; w[m][row][col].
template <class T>
struct Params {
  T w[3][2][2];
};

template <class T>
struct Forward {
  T q[2], a[2], out[2];
};

// What a training run leaves: sweet's weight on apple, its output and the loss (in double
// whatever T is).
struct TrainResult {
  double weight_on_apple, out_x, out_y, loss;
};

// x as a T: the scalar itself, or (in the CPU twin's lane packs, lanes.hpp) every lane set to x.
template <class T>
ATTN_HD ATTN_INLINE T splat(double x) {
  if constexpr (std::is_arithmetic_v<T>)
    return static_cast<T>(x);
  else
    return T{} + static_cast<decltype(T{}[0])>(x);  // a lane pack: every lane
}

ATTN_HD inline bool trains_values(Config c) {
  return c == Config::all_identity || c == Config::all_random;
}

// Written so that T may also be a pack of lanes (lanes.hpp): comparisons pick with ?:, never
// branch, and every lane does exactly what the scalar code does. The training loop's functions
// are always inlined, so that the CPU twin's per-ISA copies (cpu_clones.hpp) compile all of it
// for their ISA: out of line, GCC built them once for baseline x86-64 (SSE2) and every copy
// called that.
template <class T>
ATTN_HD ATTN_INLINE Forward<T> forward(const Params<T>& p) {
  const T sqrt2 = splat<T>(1.4142135623730951);  // np.sqrt(2.0)
  const T one = splat<T>(1.0);
  Forward<T> f;
  f.q[0] = p.w[0][1][0];
  f.q[1] = p.w[0][1][1];
  T s[2];
  for (int j = 0; j < 2; ++j) s[j] = (p.w[1][j][0] * f.q[0] + p.w[1][j][1] * f.q[1]) / sqrt2;
  // exp(s - max(s)): the larger score gives exp(0) = 1 exactly, so one exp suffices.
  const T ex = exp_t(pick_ge(s[0], s[1], s[1] - s[0], s[0] - s[1]));
  const T e[2] = {pick_ge(s[0], s[1], one, ex), pick_ge(s[0], s[1], ex, one)};
  const T sum = e[0] + e[1];
  f.a[0] = e[0] / sum;
  f.a[1] = e[1] / sum;
  for (int c = 0; c < 2; ++c) f.out[c] = f.a[0] * p.w[2][0][c] + f.a[1] * p.w[2][1][c];
  return f;
}

template <class T>
ATTN_HD ATTN_INLINE T loss_of(const Forward<T>& f) {
  const T dx = f.out[0] - splat<T>(1.0), dy = f.out[1] - splat<T>(0.0);
  return dx * dx + dy * dy;
}

template <class T>
ATTN_HD ATTN_INLINE T loss(const Params<T>& p) {
  return loss_of(forward(p));
}

// Central-difference gradient of the loss with respect to matrix m (the lesson's loop).
template <class T>
ATTN_HD ATTN_INLINE void numeric_grad(Params<T>& p, int m, T h, T g[2][2]) {
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c) {
      const T keep = p.w[m][r][c];
      p.w[m][r][c] = keep + h;
      const T hi = loss(p);
      p.w[m][r][c] = keep - h;
      const T lo = loss(p);
      p.w[m][r][c] = keep;
      g[r][c] = (hi - lo) / (splat<T>(2.0) * h);
    }
}

// Analytic gradient with respect to matrix m (formulas in the file comment).
template <class T>
ATTN_HD ATTN_INLINE void analytic_grad(const Params<T>& p, int m, T g[2][2]) {
  const T sqrt2 = splat<T>(1.4142135623730951);
  const T two = splat<T>(2.0);
  const Forward<T> f = forward(p);
  const T dout[2] = {two * (f.out[0] - splat<T>(1.0)), two * (f.out[1] - splat<T>(0.0))};
  const T da[2] = {p.w[2][0][0] * dout[0] + p.w[2][0][1] * dout[1],
                   p.w[2][1][0] * dout[0] + p.w[2][1][1] * dout[1]};
  const T a_da = f.a[0] * da[0] + f.a[1] * da[1];
  const T ds[2] = {f.a[0] * (da[0] - a_da) / sqrt2, f.a[1] * (da[1] - a_da) / sqrt2};
  for (int c = 0; c < 2; ++c) {
    if (m == 0) {
      g[0][c] = splat<T>(0.0);
      g[1][c] = ds[0] * p.w[1][0][c] + ds[1] * p.w[1][1][c];
    } else {
      for (int j = 0; j < 2; ++j) g[j][c] = m == 1 ? ds[j] * f.q[c] : f.a[j] * dout[c];
    }
  }
}

template <class T>
ATTN_HD ATTN_INLINE void grad(Params<T>& p, int m, const TrainOptions& o, T g[2][2]) {
  if (o.grad == Grad::numeric)
    numeric_grad(p, m, splat<T>(o.h), g);
  else
    analytic_grad(p, m, g);
}

template <class T>
ATTN_HD ATTN_INLINE void apply(Params<T>& p, int m, T lr, const T g[2][2]) {
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c) p.w[m][r][c] = p.w[m][r][c] - lr * g[r][c];
}

// The gradient of matrix m as the options say (numeric or analytic): train_step's default.
template <class T>
struct GradOf {
  const TrainOptions& o;
  ATTN_HD ATTN_INLINE void operator()(Params<T>& p, int m, T g[2][2]) const { grad(p, m, o, g); }
};

// One step of gradient descent on matrices 0 .. n_trained-1 (2: W_Q, W_K; 3: all three), the
// gradients from grad_of(p, m, g) (GradOf; the CPU twin passes one that takes the numeric
// gradient's eight loss evaluations as the lanes of one pack, training_cpu.cpp). With n_trained
// a constant where it is inlined (the CUDA kernel's), the loops over m unroll, every index into
// p and g is a constant, and the parameters and gradients live in registers, not in a stack
// frame.
template <class T, class GradFn>
ATTN_HD ATTN_INLINE void train_step(Params<T>& p, int n_trained, const TrainOptions& o,
                                    const GradFn& grad_of) {
  const T lr = splat<T>(o.lr);
  if (o.schedule == Schedule::sequential) {
    ATTN_UNROLL
    for (int m = 0; m < n_trained; ++m) {
      T g[2][2];
      grad_of(p, m, g);
      apply(p, m, lr, g);
    }
  } else {
    T g[3][2][2];
    ATTN_UNROLL
    for (int m = 0; m < n_trained; ++m) grad_of(p, m, g[m]);
    ATTN_UNROLL
    for (int m = 0; m < n_trained; ++m) apply(p, m, lr, g[m]);
  }
}

// Trains p in place for o.steps steps (gradients from grad_of, or as the options say).
template <class T, class GradFn>
ATTN_HD ATTN_INLINE void train(Params<T>& p, int n_trained, const TrainOptions& o,
                               const GradFn& grad_of) {
  for (int step = 0; step < o.steps; ++step) train_step(p, n_trained, o, grad_of);
}
template <class T>
ATTN_HD ATTN_INLINE void train(Params<T>& p, int n_trained, const TrainOptions& o) {
  train(p, n_trained, o, GradOf<T>{o});
}

// Starting parameters: identity matrices, or for the random configs numpy's
// default_rng(seed).normal(size=(2, 2)) three times (W_Q, W_K, W_V), with W_V then set to I
// for qk-random.
template <class T>
ATTN_HD Params<T> initial_params(Config c, std::uint64_t seed) {
  Params<T> p;
  if (c == Config::qk_identity || c == Config::all_identity) {
    for (int m = 0; m < 3; ++m)
      for (int r = 0; r < 2; ++r)
        for (int col = 0; col < 2; ++col) p.w[m][r][col] = r == col ? T(1) : T(0);
    return p;
  }
  numpy_rng::Pcg64 g(seed);
  for (int m = 0; m < 3; ++m)
    for (int r = 0; r < 2; ++r)
      for (int col = 0; col < 2; ++col) p.w[m][r][col] = static_cast<T>(numpy_rng::normal(g));
  if (c == Config::qk_random)
    for (int r = 0; r < 2; ++r)
      for (int col = 0; col < 2; ++col) p.w[2][r][col] = r == col ? T(1) : T(0);
  return p;
}

// What the trained parameters p give.
template <class T>
ATTN_HD ATTN_INLINE TrainResult result_of(const Params<T>& p) {
  const Forward<T> f = forward(p);
  return TrainResult{static_cast<double>(f.a[0]), static_cast<double>(f.out[0]),
                     static_cast<double>(f.out[1]), static_cast<double>(loss_of(f))};
}

template <class T>
ATTN_HD TrainResult train_one(Config c, std::uint64_t seed, const TrainOptions& o) {
  Params<T> p = initial_params<T>(c, seed);
  train(p, trains_values(c) ? 3 : 2, o);
  return result_of(p);
}

// Calls f(first, end) for each stretch [first, end) of consecutive runs i < n with one
// config_of(i), in order: the runs a pack (CPU) or a launch (GPU) can share.
template <class ConfigOf, class F>
void for_each_config_stretch(ConfigOf config_of, std::int64_t n, F&& f) {
  for (std::int64_t i = 0; i < n;) {
    std::int64_t end = i + 1;
    while (end < n && config_of(end) == config_of(i)) ++end;
    f(i, end);
    i = end;
  }
}

// Many seeds: out[i] = train_one(c, seeds[i], o) for i < n.
template <class T>
void train_seeds_cpu(Config c, const std::uint64_t* seeds, std::int64_t n, const TrainOptions& o,
                     TrainResult* out);
// Runs of several configs: out[i] = train_one(configs[i], seeds[i], o) for i < n (a table's
// handful of runs share the threads; consecutive runs of one config share packs).
template <class T>
void train_runs_cpu(const Config* configs, const std::uint64_t* seeds, std::int64_t n,
                    const TrainOptions& o, TrainResult* out);
#if defined(ATTNLAB_WITH_CUDA)
// GPU, device-resident: one model per thread, the whole loop in registers, one launch; d_seeds
// and d_out are device memory (n each). No allocation, no copy; returns when queued.
template <class T>
void train_seeds_cuda_device(Config c, const std::uint64_t* d_seeds, std::int64_t n,
                             const TrainOptions& o, TrainResult* d_out);
// Host wrapper: seeds and out in host memory; allocates, copies in, runs, copies back.
template <class T>
void train_seeds_cuda(Config c, const std::uint64_t* seeds, std::int64_t n, const TrainOptions& o,
                      TrainResult* out);
#endif

}  // namespace attn::tiny
