// head.hpp: trainable multi-head attention of any size, trained by gradient descent or Adam, the
// math shared by the CPU twin (kernels/head_cpu.cpp and head_pack.hpp, lane packs of seeds) and
// the GPU kernel (kernels/head_cuda.cu, one seed per thread). Spec: docs/spec/VARIABILITY.md,
// "Model", "Start and training" and "Version 2".
//
// Row vectors. X is (n, d_model); W_Q, W_K are (d_model, d_k); W_V is (d_model, d_v); with
// --train qkvo also W_O (d_v, d_model). H heads: head h owns the columns
// [h d_k/H, (h+1) d_k/H) of Q and K and [h d_v/H, (h+1) d_v/H) of V (contiguous blocks):
//   Q = X W_Q,  K = X W_K,  V = X W_V,
//   S_h = Q_h K_hᵀ c,  P_h = softmax(S_h) row by row (causal: key j > query i weighs exactly 0),
//   O = concat_h(P_h V_h) (n, d_v),  F = O W_O (qkvo) or O,
//   L = Σ_{r ∈ R} ‖F_r − Y_r‖²  over the loss rows R = {r0, ..., n − 1}.
// c is 1/√(d_k/H) (Scale::sqrt, computed as a division by √(d_k/H)), 1 (Scale::none) or a given
// number (Scale::factor, a multiplication). Rows outside R never reach the loss, so Q, S, P, O,
// F and their gradients are computed on the rows of R only (K and V on all rows). Gradients
// (the softmax Jacobian, spec "Analytic gradients"):
//   dF = 2 (F − Y);  dO = dF W_Oᵀ (qkvo) or dF;  dW_O = Oᵀ dF;
//   per head: dP_h = dO_h V_hᵀ;  dV_h = P_hᵀ dO_h;  dS_h = P_h ⊙ (dP_h − rowsum(dP_h ⊙ P_h));
//   dQ_h = dS_h K_h c;  dK_h = dS_hᵀ Q_h c;  dW_Q = Xᵀ dQ,  dW_K = Xᵀ dK,  dW_V = Xᵀ dV.
// A masked weight's dS is exactly 0 (no gradient through it). Softmax as numpy's lesson code:
// e = exp(s − max s) over the keys a query sees, P = e / Σ e.
//
// Sequential schedule (the lesson's): in each step W_Q's gradient is taken and applied, then
// W_K's at the new W_Q, then (training values) W_V's at both, then (qkvo) W_O's at all three.
// After each update only the changed projection and what follows it are recomputed (Q, S, P, O,
// F after W_Q; K, S, P, O, F after W_K; V, O, F after W_V; F after W_O), which is exactly the
// forward pass the next gradient needs. Simultaneous: all gradients at the same parameters, then
// all updates, then one forward. Updates: SGD W ← W − lr G, or Adam (spec "Optimizer"), one
// state (m, v) per matrix, its bias corrections β1ᵗ and β2ᵗ kept as running products in the
// workspace (the same bits on both twins, and across the GPU's slices of steps).
//
// Memory: every per-seed array lives in one workspace of layout(...).total elements, reached
// through an accessor `w` with w[i] -> T& (CPU: a plain pointer to lane packs; GPU: a strided
// view so that neighbouring threads (seeds) touch neighbouring addresses). Nothing is allocated
// inside; the caller allocates the workspace once per call, not per step.
#pragma once

#include <cmath>
#include <cstdint>

#include "hd.hpp"
#include "lanes.hpp"  // exp_t, sqrt_t of lane packs (host only), declared before the templates
#include "monitor.hpp"
#include "numpy_random.hpp"
#include "tiny_model.hpp"  // tiny::Grad, tiny::Schedule, splat

namespace attn {
// sqrt of a double (device and host); lanes.hpp has the lane packs' overload.
ATTN_HD inline double sqrt_t(double x) { return sqrt(x); }
}  // namespace attn

namespace attn::head {

using tiny::Grad;
using tiny::Schedule;
using tiny::splat;

enum class Scale : int { sqrt, none, factor };
enum class Optimizer : int { sgd, adam };

// Adam's constants (spec "Optimizer"; Kingma and Ba 2015).
inline constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kAdamEpsilon = 1e-8;

// One configuration: shapes, the task's data (shared by all seeds) and the training options.
// x: (n, d_model) row-major; y: (n, d_out()) row-major, rows r0 .. n-1 used. On the GPU both
// point to device memory. heads divides d_k and d_v; train_output implies train_values.
struct Model {
  int n = 2, d_model = 2, d_k = 2, d_v = 2;
  int heads = 1;
  int r0 = 1;                 // loss rows R = r0 .. n-1
  const double* x = nullptr;  // (n, d_model)
  const double* y = nullptr;  // (n, d_out())
  bool train_values = true;   // --train qkv or qkvo (else W_V = I, d_v = d_model)
  bool train_output = false;  // --train qkvo: W_O (d_v, d_model) trained, output O W_O
  bool causal = false;
  Scale scale = Scale::sqrt;
  double scale_factor = 1.0;  // c for Scale::factor
  Optimizer optimizer = Optimizer::sgd;
  int steps = 3000;
  double lr = 0.5;
  Grad grad = Grad::analytic;
  double h = 1e-5;
  Schedule schedule = Schedule::sequential;
  double init_scale = 1.0;

  ATTN_HD int d_out() const { return train_output ? d_model : d_v; }
  ATTN_HD int key_width() const { return d_k / heads; }    // d_k / H
  ATTN_HD int value_width() const { return d_v / heads; }  // d_v / H
  ATTN_HD int trained() const { return train_output ? 4 : train_values ? 3 : 2; }
  // Key j is seen by query i: always, or j <= i with causal.
  ATTN_HD int last_key(int i) const { return causal ? i : n - 1; }
};

// The shape of trained matrix `which` (0 W_Q, 1 W_K, 2 W_V, 3 W_O): rows x cols.
ATTN_HD inline int matrix_rows(const Model& m, int which) { return which == 3 ? m.d_v : m.d_model; }
ATTN_HD inline int matrix_cols(const Model& m, int which) {
  return which == 3 ? m.d_model : which == 2 ? m.d_v : m.d_k;
}
// Elements of the trained matrices (the numeric gradient's count of loss pairs).
ATTN_HD inline std::int64_t trained_weights(const Model& m) {
  std::int64_t e = 0;
  for (int which = 0; which < m.trained(); ++which)
    e += static_cast<std::int64_t>(matrix_rows(m, which)) * matrix_cols(m, which);
  return e;
}

// Offsets of each array in a seed's workspace (in elements). Shapes in brackets; arrays that a
// model does not use have size 0.
struct Layout {
  std::int64_t wq, wk, wv, wo;  // [d_model, d_k] x2, [d_model, d_v], [d_v, d_model] (qkvo)
  std::int64_t q, k, v;         // [n, d_k], [n, d_k], [n, d_v]
  std::int64_t p;               // [H, n, n]
  std::int64_t o, f;            // [n, d_v]; [n, d_model] (qkvo; else f == o)
  std::int64_t d_f, d_o;        // [n, d_out] (qkvo; else d_f == d_o); [n, d_v]
  std::int64_t d_p;             // [H, n, n] (dS after the softmax backward)
  std::int64_t dq, dk, dv;      // [n, d_k], [n, d_k], [n, d_v]
  std::int64_t g;               // gradients of the trained matrices in order (numeric, or for Adam)
  std::int64_t am, av;          // Adam's m and v, laid out as g (Adam only)
  std::int64_t powers;          // β1ᵗ, β2ᵗ (Adam only)
  std::int64_t start;           // the loss at the starting weights
  std::int64_t total;
};

ATTN_HD inline Layout layout(const Model& m) {
  Layout l;
  const std::int64_t n = m.n, dm = m.d_model, dk = m.d_k, dv = m.d_v, hn = m.heads * n * n;
  const bool out = m.train_output, adam = m.optimizer == Optimizer::adam;
  std::int64_t at = 0;
  auto take = [&at](std::int64_t size) {
    const std::int64_t here = at;
    at += size;
    return here;
  };
  const std::int64_t weights = trained_weights(m);
  l.wq = take(dm * dk);
  l.wk = take(dm * dk);
  l.wv = take(dm * dv);
  l.wo = take(out ? dv * dm : 0);
  l.q = take(n * dk);
  l.k = take(n * dk);
  l.v = take(n * dv);
  l.p = take(hn);
  l.o = take(n * dv);
  l.f = out ? take(n * dm) : l.o;
  l.d_o = take(n * dv);
  l.d_f = out ? take(n * dm) : l.d_o;
  l.d_p = take(hn);
  l.dq = take(n * dk);
  l.dk = take(n * dk);
  l.dv = take(n * dv);
  l.g = take(m.grad == Grad::numeric || adam ? weights : 0);
  l.am = take(adam ? weights : 0);
  l.av = take(adam ? weights : 0);
  l.powers = take(adam ? 2 : 0);
  l.start = take(1);
  l.total = at;
  return l;
}

// Where matrix `which` (0 W_Q, 1 W_K, 2 W_V, 3 W_O) and its gradient live (its offset in the
// workspace; its offset inside the gradient, Adam m and Adam v arrays).
ATTN_HD inline std::int64_t matrix_at(const Layout& l, int which) {
  return which == 0 ? l.wq : which == 1 ? l.wk : which == 2 ? l.wv : l.wo;
}
ATTN_HD inline std::int64_t gradient_at(const Model& m, int which) {
  std::int64_t e = 0;
  for (int before = 0; before < which; ++before)
    e += static_cast<std::int64_t>(matrix_rows(m, before)) * matrix_cols(m, before);
  return e;
}

// What a seed's run leaves, in this order: the final loss, the loss at the starting weights,
// the maps P_h on the rows of R (H × (n − r0) × n, head by head), then the outputs F on the rows
// of R ((n − r0) × d_out).
ATTN_HD inline std::int64_t result_size(const Model& m) {
  return 2 + static_cast<std::int64_t>(m.n - m.r0) * (m.heads * m.n + m.d_out());
}

// Useful FLOPs of one training step of one seed, as this file computes it (2 per multiply-add
// of the matrix products, every key counted also under a causal mask; the O(n²) softmax and
// elementwise work, Adam's included, is left out): the count the benchmarks divide by.
// Analytic gradients only.
inline double flops_per_step(const Model& m) {
  const double n = m.n, r = m.n - m.r0, dm = m.d_model, dk = m.d_k, dv = m.d_v;
  const bool wo = m.train_output;
  const double proj_q = 2 * r * dm * dk, proj_k = 2 * n * dm * dk, proj_v = 2 * n * dm * dv;
  const double scores = 2 * r * n * dk;
  const double outputs = 2 * r * n * dv + (wo ? 2 * r * dv * dm : 0);  // O, then F = O W_O
  const double d_o = wo ? 2 * r * dm * dv : 0;                         // dO = dF W_Oᵀ
  const double back = 2 * r * n * dv;                                  // dP = dO Vᵀ
  const double grad_q = 2 * r * n * dk + 2 * r * dm * dk;
  const double grad_k = 2 * r * n * dk + 2 * n * dm * dk;
  const double grad_v = 2 * r * n * dv + 2 * n * dm * dv;
  const double grad_o = 2 * r * dv * dm;
  const double final_o = wo ? 2 * r * dv * dm : 0;  // F = O W_O
  if (m.schedule == Schedule::simultaneous)
    return d_o + back + grad_q + grad_k + (m.train_values ? grad_v : 0) + (wo ? grad_o : 0) +
           proj_q + proj_k + (m.train_values ? proj_v : 0) + scores + outputs;
  double f = (d_o + back + grad_q + proj_q + scores + outputs) +
             (d_o + back + grad_k + proj_k + scores + outputs);
  if (m.train_values) f += d_o + grad_v + proj_v + outputs;
  if (wo) f += grad_o + final_o;
  return f;
}

// The stop test when nothing can stop the work (the GPU's threads, small heads): it compiles
// away. The matrix steps below ask their Stop before each row of their result, train before
// each step: with a stop test that can say true, the work between two tests is one row of one
// product, whatever the head's size.
struct NeverStop {
  ATTN_HD constexpr bool operator()() const { return false; }
};

// s · c: the scores' scale (see the top). root = √(d_k/H), used by Scale::sqrt.
template <class T>
ATTN_HD ATTN_INLINE T scaled(const Model& m, double root, T s) {
  if (m.scale == Scale::sqrt) return s / root;
  if (m.scale == Scale::factor) return s * m.scale_factor;
  return s;
}
ATTN_HD inline double scale_root(const Model& m) {
  return sqrt(static_cast<double>(m.key_width()));
}

// out[i][c] = Σ_k x[i][k] W[k][c] for rows i in [r_begin, n): a projection (Q, K or V).
// x (n, d_model) shared; W at w[wo] (d_model, cols); out at w[oo] (n, cols).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void project(const Model& m, M w, std::int64_t wo, std::int64_t oo, int cols,
                                 int r_begin, Stop stop = {}) {
  for (int i = r_begin; i < m.n; ++i) {
    if (stop()) return;
    for (int c = 0; c < cols; ++c) {
      T acc = splat<T>(0.0);
      for (int k = 0; k < m.d_model; ++k) acc = acc + m.x[i * m.d_model + k] * w[wo + k * cols + c];
      w[oo + i * cols + c] = acc;
    }
  }
}

// Scores and softmax on the rows of R, head by head: P_h[i][j] = softmax_j(Q_h,i · K_h,j c) over
// the keys j <= last_key(i); the masked weights are 0.
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void scores_softmax(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const double root = scale_root(m);
  const int dh = m.key_width();
  for (int h = 0; h < m.heads; ++h) {
    const std::int64_t p = l.p + static_cast<std::int64_t>(h) * m.n * m.n;
    for (int i = m.r0; i < m.n; ++i) {
      if (stop()) return;
      const int last = m.last_key(i);
      T top = splat<T>(0.0);
      for (int j = 0; j <= last; ++j) {
        T s = splat<T>(0.0);
        for (int c = h * dh; c < (h + 1) * dh; ++c)
          s = s + w[l.q + i * m.d_k + c] * w[l.k + j * m.d_k + c];
        s = scaled(m, root, s);
        w[p + i * m.n + j] = s;
        top = j == 0 ? s : pick_gt(s, top, s, top);
      }
      T sum = splat<T>(0.0);
      for (int j = 0; j <= last; ++j) {
        const T e = exp_t(T(w[p + i * m.n + j] - top));
        w[p + i * m.n + j] = e;
        sum = sum + e;
      }
      for (int j = 0; j <= last; ++j) w[p + i * m.n + j] = w[p + i * m.n + j] / sum;
      for (int j = last + 1; j < m.n; ++j) w[p + i * m.n + j] = splat<T>(0.0);
    }
  }
}

// F = O W_O on the rows of R (qkvo).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void final_outputs(const Model& m, const Layout& l, M w, Stop stop = {}) {
  for (int i = m.r0; i < m.n; ++i) {
    if (stop()) return;
    for (int c = 0; c < m.d_model; ++c) {
      T acc = splat<T>(0.0);
      for (int t = 0; t < m.d_v; ++t)
        acc = acc + w[l.o + i * m.d_v + t] * w[l.wo + t * m.d_model + c];
      w[l.f + i * m.d_model + c] = acc;
    }
  }
}

// O = concat_h(P_h V_h) on the rows of R, then F (qkvo).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void outputs(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const int dh = m.value_width();
  for (int i = m.r0; i < m.n; ++i) {
    if (stop()) return;
    for (int h = 0; h < m.heads; ++h) {
      const std::int64_t p = l.p + static_cast<std::int64_t>(h) * m.n * m.n;
      for (int c = h * dh; c < (h + 1) * dh; ++c) {
        T acc = splat<T>(0.0);
        for (int j = 0; j < m.n; ++j) acc = acc + w[p + i * m.n + j] * w[l.v + j * m.d_v + c];
        w[l.o + i * m.d_v + c] = acc;
      }
    }
  }
  if (m.train_output) final_outputs<T>(m, l, w, stop);
}

// L = Σ_{r ∈ R} ‖F_r − Y_r‖² from the stored F.
template <class T, class M>
ATTN_HD ATTN_INLINE T loss_of(const Model& m, const Layout& l, M w) {
  const int d = m.d_out();
  T sum = splat<T>(0.0);
  for (int i = m.r0; i < m.n; ++i)
    for (int c = 0; c < d; ++c) {
      const T e = w[l.f + i * d + c] - m.y[i * d + c];
      sum = sum + e * e;
    }
  return sum;
}

// The whole forward pass from the weights: Q (rows of R), K, V, P, O, F.
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void forward(const Model& m, const Layout& l, M w, Stop stop = {}) {
  project<T>(m, w, l.wq, l.q, m.d_k, m.r0, stop);
  project<T>(m, w, l.wk, l.k, m.d_k, 0, stop);
  project<T>(m, w, l.wv, l.v, m.d_v, 0, stop);
  scores_softmax<T>(m, l, w, stop);
  outputs<T>(m, l, w, stop);
}

// dF = 2 (F − Y), then (qkvo) dO = dF W_Oᵀ; rows of R.
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void backward_outputs(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const int d = m.d_out();
  for (int i = m.r0; i < m.n; ++i) {
    if (stop()) return;
    for (int c = 0; c < d; ++c) w[l.d_f + i * d + c] = 2.0 * (w[l.f + i * d + c] - m.y[i * d + c]);
    if (m.train_output)
      for (int t = 0; t < m.d_v; ++t) {
        T acc = splat<T>(0.0);
        for (int c = 0; c < m.d_model; ++c)
          acc = acc + w[l.d_f + i * m.d_model + c] * w[l.wo + t * m.d_model + c];
        w[l.d_o + i * m.d_v + t] = acc;
      }
  }
}

// Per head, dP_h = dO_h V_hᵀ, then dS_h = P_h ⊙ (dP_h − rowsum(dP_h ⊙ P_h)) in place of dP_h
// over the keys each query sees (0 at the masked ones); rows of R. Needs backward_outputs.
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void backward_scores(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const int dh = m.value_width();
  for (int h = 0; h < m.heads; ++h) {
    const std::int64_t p = l.p + static_cast<std::int64_t>(h) * m.n * m.n;
    const std::int64_t d_p = l.d_p + static_cast<std::int64_t>(h) * m.n * m.n;
    for (int i = m.r0; i < m.n; ++i) {
      if (stop()) return;
      const int last = m.last_key(i);
      T dot = splat<T>(0.0);
      for (int j = 0; j <= last; ++j) {
        T acc = splat<T>(0.0);
        for (int c = h * dh; c < (h + 1) * dh; ++c)
          acc = acc + w[l.d_o + i * m.d_v + c] * w[l.v + j * m.d_v + c];
        w[d_p + i * m.n + j] = acc;
        dot = dot + acc * w[p + i * m.n + j];
      }
      for (int j = 0; j <= last; ++j)
        w[d_p + i * m.n + j] = w[p + i * m.n + j] * (w[d_p + i * m.n + j] - dot);
      for (int j = last + 1; j < m.n; ++j) w[d_p + i * m.n + j] = splat<T>(0.0);
    }
  }
}

// dQ_h = dS_h K_h c (rows of R).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void grad_queries(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const double root = scale_root(m);
  const int dh = m.key_width();
  for (int h = 0; h < m.heads; ++h) {
    const std::int64_t d_p = l.d_p + static_cast<std::int64_t>(h) * m.n * m.n;
    for (int i = m.r0; i < m.n; ++i) {
      if (stop()) return;
      for (int c = h * dh; c < (h + 1) * dh; ++c) {
        T acc = splat<T>(0.0);
        for (int j = 0; j < m.n; ++j) acc = acc + w[d_p + i * m.n + j] * w[l.k + j * m.d_k + c];
        w[l.dq + i * m.d_k + c] = scaled(m, root, acc);
      }
    }
  }
}

// dK_h = dS_hᵀ Q_h c (all rows; sums over the rows of R).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void grad_keys(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const double root = scale_root(m);
  const int dh = m.key_width();
  for (int h = 0; h < m.heads; ++h) {
    const std::int64_t d_p = l.d_p + static_cast<std::int64_t>(h) * m.n * m.n;
    for (int j = 0; j < m.n; ++j) {
      if (stop()) return;
      for (int c = h * dh; c < (h + 1) * dh; ++c) {
        T acc = splat<T>(0.0);
        for (int i = m.r0; i < m.n; ++i) acc = acc + w[d_p + i * m.n + j] * w[l.q + i * m.d_k + c];
        w[l.dk + j * m.d_k + c] = scaled(m, root, acc);
      }
    }
  }
}

// dV_h = P_hᵀ dO_h (all rows; sums over the rows of R).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void grad_values(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const int dh = m.value_width();
  for (int h = 0; h < m.heads; ++h) {
    const std::int64_t p = l.p + static_cast<std::int64_t>(h) * m.n * m.n;
    for (int j = 0; j < m.n; ++j) {
      if (stop()) return;
      for (int c = h * dh; c < (h + 1) * dh; ++c) {
        T acc = splat<T>(0.0);
        for (int i = m.r0; i < m.n; ++i) acc = acc + w[p + i * m.n + j] * w[l.d_o + i * m.d_v + c];
        w[l.dv + j * m.d_v + c] = acc;
      }
    }
  }
}

// The update of one element: W ← W − lr G (SGD), or, with Adam, G goes to the gradient array at
// w[go + e] and adam() applies it once the whole gradient is there.
template <class T, class M>
ATTN_HD ATTN_INLINE void take_gradient(const Model& m, M w, std::int64_t wo, std::int64_t go,
                                       std::int64_t e, T gradient) {
  if (m.optimizer == Optimizer::adam)
    w[go + e] = gradient;
  else
    w[wo + e] = w[wo + e] - m.lr * gradient;
}

// The gradient Xᵀ dZ over rows [r_begin, n) of the weights at w[wo] (d_model, cols), dZ at
// w[dz] (n, cols), taken (take_gradient) with the gradient array at w[go].
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void descend(const Model& m, M w, std::int64_t wo, std::int64_t dz, int cols,
                                 int r_begin, std::int64_t go, Stop stop = {}) {
  for (int k = 0; k < m.d_model; ++k) {
    if (stop()) return;
    for (int c = 0; c < cols; ++c) {
      T acc = splat<T>(0.0);
      for (int i = r_begin; i < m.n; ++i) acc = acc + m.x[i * m.d_model + k] * w[dz + i * cols + c];
      take_gradient<T>(m, w, wo, go, static_cast<std::int64_t>(k) * cols + c, acc);
    }
  }
}

// dW_O = Oᵀ dF over the rows of R, taken (take_gradient) with the gradient array at w[go].
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void descend_output(const Model& m, const Layout& l, M w, std::int64_t go,
                                        Stop stop = {}) {
  for (int t = 0; t < m.d_v; ++t) {
    if (stop()) return;
    for (int c = 0; c < m.d_model; ++c) {
      T acc = splat<T>(0.0);
      for (int i = m.r0; i < m.n; ++i)
        acc = acc + w[l.o + i * m.d_v + t] * w[l.d_f + i * m.d_model + c];
      take_gradient<T>(m, w, l.wo, go, static_cast<std::int64_t>(t) * m.d_model + c, acc);
    }
  }
}

// Adam's step for `size` weights at w[wo] with their gradient at w[go] and their m, v at w[mo],
// w[vo] (spec "Optimizer"), at the bias corrections in w[l.powers] (β1ᵗ, β2ᵗ of this step):
//   m ← β1 m + (1 − β1) g;  v ← β2 v + (1 − β2) g²;  W ← W − (lr m̂) / (√v̂ + ε),
//   m̂ = m / (1 − β1ᵗ), v̂ = v / (1 − β2ᵗ).
template <class T, class M>
ATTN_HD ATTN_INLINE void adam(const Model& m, const Layout& l, M w, std::int64_t wo,
                              std::int64_t go, std::int64_t mo, std::int64_t vo,
                              std::int64_t size) {
  const T c1 = 1.0 - T(w[l.powers]), c2 = 1.0 - T(w[l.powers + 1]);
  for (std::int64_t e = 0; e < size; ++e) {
    const T g = w[go + e];
    const T mm = kBeta1 * T(w[mo + e]) + (1.0 - kBeta1) * g;
    const T vv = kBeta2 * T(w[vo + e]) + (1.0 - kBeta2) * (g * g);
    w[mo + e] = mm;
    w[vo + e] = vv;
    w[wo + e] = w[wo + e] - (m.lr * (mm / c1)) / (sqrt_t(T(vv / c2)) + kAdamEpsilon);
  }
}

// The loss at the workspace's current weights (a whole forward pass).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE T loss(const Model& m, const Layout& l, M w, Stop rows = {}) {
  forward<T>(m, l, w, rows);
  return loss_of<T>(m, l, w);
}

// Central differences (step h, one element at a time, as the lesson) of L with respect to the
// `size` weights at w[wo]; the gradient goes to w[go]. stop() is asked before each element (a
// large head's gradient is thousands of forward passes), rows() inside each forward pass: see
// train.
template <class T, class M, class Stop, class Rows = NeverStop>
ATTN_HD ATTN_INLINE void numeric_grad(const Model& m, const Layout& l, M w, std::int64_t wo,
                                      std::int64_t size, std::int64_t go, Stop stop,
                                      Rows rows = {}) {
  for (std::int64_t e = 0; e < size; ++e) {
    if (stop()) return;
    const T keep = w[wo + e];
    w[wo + e] = keep + m.h;
    const T hi = loss<T>(m, l, w, rows);
    w[wo + e] = keep - m.h;
    const T lo = loss<T>(m, l, w, rows);
    w[wo + e] = keep;
    w[go + e] = (hi - lo) / (2.0 * m.h);
  }
}

// Applies the gradient at w[go] to the `size` weights of matrix `which` at w[wo]: W ← W − lr G,
// or Adam's step with that matrix's state.
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void apply_gradient(const Model& m, const Layout& l, M w, int which,
                                        std::int64_t go, Stop rows = {}) {
  const std::int64_t wo = matrix_at(l, which), gi = gradient_at(m, which);
  const std::int64_t size =
      static_cast<std::int64_t>(matrix_rows(m, which)) * matrix_cols(m, which);
  if (m.optimizer == Optimizer::adam) {
    adam<T>(m, l, w, wo, go, l.am + gi, l.av + gi, size);
    return;
  }
  for (std::int64_t e = 0; e < size; ++e) {
    if ((e & 63) == 0 && rows()) return;
    w[wo + e] = w[wo + e] - m.lr * w[go + e];
  }
}

// The analytic gradient of matrix `which` (0 W_Q, 1 W_K, 2 W_V, 3 W_O), taken at the forward
// state in the workspace: dQ, dK or dV and then its Xᵀ product, or dW_O, each taken
// (take_gradient) into the gradient array of that matrix. Needs backward_outputs, and for W_Q and
// W_K backward_scores. Adam's step is the caller's (apply_gradient with the gradient's offset).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void descend_of(const Model& m, const Layout& l, M w, int which,
                                    Stop rows = {}) {
  const std::int64_t go = l.g + gradient_at(m, which);
  if (which == 0) {
    grad_queries<T>(m, l, w, rows);
    descend<T>(m, w, l.wq, l.dq, m.d_k, m.r0, go, rows);
  }
  if (which == 1) {
    grad_keys<T>(m, l, w, rows);
    descend<T>(m, w, l.wk, l.dk, m.d_k, 0, go, rows);
  }
  if (which == 2) {
    grad_values<T>(m, l, w, rows);
    descend<T>(m, w, l.wv, l.dv, m.d_v, 0, go, rows);
  }
  if (which == 3) descend_output<T>(m, l, w, go, rows);
}

// What follows an update of matrix `which` in the forward pass, recomputed.
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void refresh(const Model& m, const Layout& l, M w, int which, Stop rows = {}) {
  if (which == 0) project<T>(m, w, l.wq, l.q, m.d_k, m.r0, rows);
  if (which == 1) project<T>(m, w, l.wk, l.k, m.d_k, 0, rows);
  if (which == 2) project<T>(m, w, l.wv, l.v, m.d_v, 0, rows);
  if (which < 2) scores_softmax<T>(m, l, w, rows);
  if (which < 3)
    outputs<T>(m, l, w, rows);
  else
    final_outputs<T>(m, l, w, rows);
}

// Adam's bias corrections for the step about to run: β1ᵗ, β2ᵗ as running products.
template <class T, class M>
ATTN_HD ATTN_INLINE void advance_powers(const Model& m, const Layout& l, M w) {
  if (m.optimizer != Optimizer::adam) return;
  w[l.powers] = w[l.powers] * kBeta1;
  w[l.powers + 1] = w[l.powers + 1] * kBeta2;
}

// Steps [s0, s1) of the training (0 <= s0 <= s1 <= m.steps), from the state the steps before
// s0 left in the workspace: the weights, Adam's state and the forward pass at the weights (Q on
// the rows of R, K, V, P, O, F), which is all a step reads. train() is start() then
// train_steps(0, m.steps); running [0, a), [a, b), ..., [z, m.steps) in turn on one workspace
// does exactly its arithmetic (the GPU's slices across launches, head_cuda.cu). On return the
// workspace holds the forward pass at the weights after step s1 − 1. stop() and rows() as
// train() says.
template <class T, class M, class Stop = NeverStop, class Rows = NeverStop>
ATTN_HD ATTN_INLINE void train_steps(const Model& m, M w, int s0, int s1, Stop stop = {},
                                     Rows rows = {}) {
  const Layout l = layout(m);
  const int trained = m.trained();
  for (int step = s0; step < s1; ++step) {
    if (stop()) return;
    advance_powers<T>(m, l, w);
    if (m.grad == Grad::numeric) {
      for (int which = 0; which < trained; ++which) {
        const std::int64_t size =
            static_cast<std::int64_t>(matrix_rows(m, which)) * matrix_cols(m, which);
        // Sequential: each gradient at the newest weights, into the start of the array;
        // simultaneous: all at the same weights, each into its own place, applied after.
        const std::int64_t go =
            l.g + (m.schedule == Schedule::sequential ? 0 : gradient_at(m, which));
        numeric_grad<T>(m, l, w, matrix_at(l, which), size, go, stop, rows);
        if (m.schedule == Schedule::sequential) apply_gradient<T>(m, l, w, which, go, rows);
      }
      if (m.schedule == Schedule::simultaneous)
        for (int which = 0; which < trained; ++which)
          apply_gradient<T>(m, l, w, which, l.g + gradient_at(m, which), rows);
      forward<T>(m, l, w, rows);
      continue;
    }
    const bool adam = m.optimizer == Optimizer::adam;
    if (m.schedule == Schedule::sequential) {
      for (int which = 0; which < trained; ++which) {
        backward_outputs<T>(m, l, w, rows);
        if (which < 2) backward_scores<T>(m, l, w, rows);
        descend_of<T>(m, l, w, which, rows);
        if (adam) apply_gradient<T>(m, l, w, which, l.g + gradient_at(m, which), rows);
        refresh<T>(m, l, w, which, rows);
      }
    } else {
      backward_outputs<T>(m, l, w, rows);
      backward_scores<T>(m, l, w, rows);
      // Every gradient before any update: with SGD descend_of updates in place, so the Xᵀ
      // products (which read only dQ, dK, dV, O, dF) follow all the per-head gradients.
      grad_queries<T>(m, l, w, rows);
      grad_keys<T>(m, l, w, rows);
      if (trained > 2) grad_values<T>(m, l, w, rows);
      const std::int64_t g[4] = {l.g + gradient_at(m, 0), l.g + gradient_at(m, 1),
                                 l.g + gradient_at(m, 2), l.g + gradient_at(m, 3)};
      if (trained > 3) descend_output<T>(m, l, w, g[3], rows);
      descend<T>(m, w, l.wq, l.dq, m.d_k, m.r0, g[0], rows);
      descend<T>(m, w, l.wk, l.dk, m.d_k, 0, g[1], rows);
      if (trained > 2) descend<T>(m, w, l.wv, l.dv, m.d_v, 0, g[2], rows);
      if (adam)
        for (int which = 0; which < trained; ++which)
          apply_gradient<T>(m, l, w, which, g[which], rows);
      forward<T>(m, l, w, rows);
    }
  }
}

// The forward pass at the starting weights (drawn by initial_weights), its loss kept in the
// workspace (the result's start loss), and Adam's state at zero: what train_steps(0, ...) reads.
// start_state is its part after the forward pass (the CPU twin runs its own forward).
template <class T, class M>
ATTN_HD ATTN_INLINE void start_state(const Model& m, const Layout& l, M w) {
  w[l.start] = loss_of<T>(m, l, w);
  if (m.optimizer == Optimizer::adam) {
    for (std::int64_t e = l.am; e < l.powers; ++e) w[e] = splat<T>(0.0);
    w[l.powers] = splat<T>(1.0);
    w[l.powers + 1] = splat<T>(1.0);
  }
}
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void start(const Model& m, M w, Stop rows = {}) {
  const Layout l = layout(m);
  forward<T>(m, l, w, rows);
  start_state<T>(m, l, w);
}

// Trains the weights in the workspace for m.steps steps. On return the workspace holds the
// forward pass at the final weights (P, O, F valid on the rows of R). stop() is asked before
// each step and each element of a numeric gradient, rows() before each row of every matrix
// product (NeverStop by default: a head small enough that a step is short needs no test inside
// it); once either says true, train returns as soon as the loops it is in end, and the
// workspace holds nothing usable (the CPU's way to honour Ctrl-C within a large head's run,
// head_cpu.cpp). A stop test that says true must say true at every later call.
template <class T, class M, class Stop = NeverStop, class Rows = NeverStop>
ATTN_HD ATTN_INLINE void train(const Model& m, M w, Stop stop = {}, Rows rows = {}) {
  start<T>(m, w, rows);
  train_steps<T>(m, w, 0, m.steps, stop, rows);
}

// Seed s's starting weights (spec "Start"): g = numpy default_rng(s); W_Q, W_K, W_V and (qkvo)
// W_O as successive g.normal(size=(d_model, d_k | d_k | d_v), then (d_v, d_model)) draws,
// row-major, times init_scale; with --train qk W_V is then the identity. store(offset, value)
// writes one element of the workspace.
template <class Store>
ATTN_HD void initial_weights(const Model& m, std::uint64_t seed, Store& store) {
  const Layout l = layout(m);
  numpy_rng::Pcg64 g(seed);
  for (int which = 0; which < (m.train_output ? 4 : 3); ++which) {
    const std::int64_t size =
        static_cast<std::int64_t>(matrix_rows(m, which)) * matrix_cols(m, which);
    for (std::int64_t e = 0; e < size; ++e)
      store(matrix_at(l, which) + e, numpy_rng::normal(g) * m.init_scale);
  }
  if (!m.train_values)
    for (int r = 0; r < m.d_model; ++r)
      for (int c = 0; c < m.d_v; ++c) store(l.wv + r * m.d_v + c, r == c ? 1.0 : 0.0);
}

// After train(): a seed's results (result_size(m) values, see there) through get(offset).
template <class Get>
ATTN_HD void write_result(const Model& m, Get& get, double* out) {
  const Layout l = layout(m);
  const int d = m.d_out();
  // Loss recomputed from the stored F.
  double sum = 0;
  for (int i = m.r0; i < m.n; ++i)
    for (int c = 0; c < d; ++c) {
      const double e = get(l.f + i * d + c) - m.y[i * d + c];
      sum = sum + e * e;
    }
  out[0] = sum;
  out[1] = get(l.start);
  std::int64_t at = 2;
  for (int h = 0; h < m.heads; ++h)
    for (int i = m.r0; i < m.n; ++i)
      for (int j = 0; j < m.n; ++j) out[at++] = get(l.p + (h * m.n + i) * m.n + j);
  for (int i = m.r0; i < m.n; ++i)
    for (int c = 0; c < d; ++c) out[at++] = get(l.f + i * d + c);
}
// Many seeds: for i < count, out + i * result_size(m) = the results of training seed seeds[i].
// x and y in host memory. The CPU's threads ask monitor.stop_requested() between steps and
// numeric-gradient elements (a large head's seed can train for minutes), and throw Interrupted
// once they have all returned.
void train_seeds_cpu(const Model& m, const std::uint64_t* seeds, std::int64_t count, double* out,
                     const Monitor& monitor = silent_monitor());
#if defined(ATTNLAB_WITH_CUDA)
// GPU, one seed per thread (head_cuda.cu says why), device-resident: steps [s0, s1) of the
// training of seeds d_seeds[0 .. count) (0 <= s0 <= s1 <= m.steps). m.x, m.y, d_seeds,
// d_workspace and d_out are device memory; d_workspace holds count * layout(m).total doubles,
// element e of seed i at [e * count + i], and carries each seed's state from one call to the
// next (the same count every call). s0 == 0 first draws the starting weights; s1 == m.steps
// then writes seed i's results to d_out + i * result_size(m). Nothing is allocated or copied;
// returns once the launch is queued on the default stream. Throws std::invalid_argument for a
// step range outside [0, m.steps], std::runtime_error for a CUDA error (file and line).
void train_seeds_cuda_device(const Model& m, const std::uint64_t* d_seeds, std::int64_t count,
                             double* d_workspace, double* d_out, int s0, int s1);
// Host wrapper: x, y (in m), seeds and out in host memory, as train_seeds_cpu. Trains in slices
// of steps_per_slice steps (<= 0: all m.steps in one launch), one launch each, and asks
// monitor.stop_requested() after each slice but the last has finished, throwing Interrupted
// when it says true. The results are those of one uninterrupted training, bit for bit, however
// the steps are sliced.
void train_seeds_cuda(const Model& m, const std::uint64_t* seeds, std::int64_t count, double* out,
                      int steps_per_slice = 0, const Monitor& monitor = silent_monitor());
#endif

}  // namespace attn::head
