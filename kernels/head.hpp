// head.hpp: trainable multi-head attention of any size, trained by gradient descent or Adam on
// one or many inputs, the math shared by the CPU twin (kernels/head_cpu.cpp and head_pack.hpp,
// lane packs of seeds) and the GPU kernels (kernels/head_cuda.cu: a warp per seed, or one seed
// per thread). Spec:
// docs/spec/VARIABILITY.md, "Model", "Start and training", "Version 2"
// and "Version 3" (many inputs).
//
// Row vectors. B inputs X_b (n, d_model), stacked as rows: input b's row i is stacked row
// b n + i of X (B n, d_model), and so are their targets Y (B n, d_out) and every activation
// below. W_Q, W_K are (d_model, d_k); W_V is (d_model, d_v); with --train qkvo also W_O (d_v,
// d_model). H heads: head h owns the columns [h d_k/H, (h+1) d_k/H) of Q and K and
// [h d_v/H, (h+1) d_v/H) of V (contiguous blocks). For each input b:
//   Q_b = X_b W_Q,  K_b = X_b W_K,  V_b = X_b W_V,
//   S_bh = Q_bh K_bhᵀ c,  P_bh = softmax(S_bh) row by row (causal: key j > query i weighs 0),
//   O_b = concat_h(P_bh V_bh) (n, d_v),  F_b = O_b W_O (qkvo) or O_b,
//   L = (1/B) Σ_b Σ_{r ∈ R} ‖F_b,r − Y_b,r‖²  over the loss rows R = {r0, ..., n − 1}.
// c is 1/√(d_k/H) (Scale::sqrt, computed as a division by √(d_k/H)), 1 (Scale::none) or a given
// number (Scale::factor, a multiplication). Rows outside R never reach the loss, so Q, S, P, O,
// F and their gradients are computed on the rows of R only (K and V on all rows). Gradients
// (the softmax Jacobian, spec "Analytic gradients"), the mean over the inputs:
//   dF_b = (2/B) (F_b − Y_b);  dO_b = dF_b W_Oᵀ (qkvo) or dF_b;  dW_O = Σ_b O_bᵀ dF_b;
//   per head: dP_bh = dO_bh V_bhᵀ;  dV_bh = P_bhᵀ dO_bh;
//   dS_bh = P_bh ⊙ (dP_bh − rowsum(dP_bh ⊙ P_bh));  dQ_bh = dS_bh K_bh c;  dK_bh = dS_bhᵀ Q_bh c;
//   dW_Q = Σ_b X_bᵀ dQ_b,  dW_K = Σ_b X_bᵀ dK_b,  dW_V = Σ_b X_bᵀ dV_b.
// The mean's 1/B is applied once, in dF's factor 2/B (a double, 2.0 / B: exactly 2 for B = 1, so
// one input computes version 2's gradient), and in the loss, whose sum is divided by B at the
// end; every other gradient inherits it. A masked weight's dS is exactly 0 (no gradient through
// it). Softmax as numpy's lesson code: e = exp(s − max s) over the keys a query sees, P = e / Σ e.
//
// Frozen maps (Model::map uniform or known; spec "Version 3", "Frozen maps"): every P_bh is
// fixed instead of the softmax of the scores: uniform, 1/k on the k keys query i sees (k = i + 1
// causal, else n), or the given map (Model::known), 0 at the masked keys either way. The maps
// then depend on no weight, so only W_V (and W_O) are trained: W_Q and W_K keep their starting
// draws, and a step is the W_V (and W_O) part of the schedules below, with no dP, dS, dQ or dK.
// Q and K are still projected by the whole forward pass; nothing reads them.
//
// Rounding: every sum of products (each element of a matrix product, the softmax backward's
// row sum, the loss's sum of squares) is one chain of fused multiply-adds in the order the loops
// below write it: acc = 0, then acc = fma_t(a_t, b_t, acc) for t = 0, 1, ... (the first step is
// the rounded product a_0 b_0 itself), so that acc is the same bits however the chains are
// blocked, vectorised or spread over threads, on every CPU level and on the GPU. A sum over the
// stacked inputs (the Xᵀ and Oᵀ products) runs over the stacked rows in ascending order: input
// b, then its rows i. The builds fuse nothing on their own (-ffp-contract=off, -fmad=false).
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
// Measurement (evaluate_inputs): from a seed's weights, the forward pass on any set of inputs
// (held-out ones), one input at a time, giving each input's maps, outputs and its part of the
// loss; a caller may replace the maps before the outputs are computed (an intervention).
//
// Memory: every per-seed array lives in one workspace of layout(...).total elements, reached
// through an accessor `w` with w[i] -> T& (CPU: a plain pointer to lane packs; GPU: a strided
// view so that neighbouring threads (seeds) touch neighbouring addresses). Nothing is allocated
// inside; the caller allocates the workspace once per call, not per step. The inputs (X, Y) are
// the configuration's, shared by every seed.
#pragma once

#include <cmath>
#include <cstdint>

#include "hd.hpp"
#include "kernels/numpy_random/numpy_random.hpp"
#include "lanes.hpp"  // exp_t, sqrt_t of lane packs (host only), declared before the templates
#include "monitor.hpp"
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
// Each head's map: the softmax of its scores (learned), or frozen (see the top): uniform over the
// visible keys, or the task's known map.
enum class MapMode : int { learned, uniform, known };

// Adam's constants (spec "Optimizer"; Kingma and Ba 2015).
inline constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kAdamEpsilon = 1e-8;

// One configuration: shapes, the task's data (shared by all seeds) and the training options.
// x: (inputs n, d_model) row-major, the inputs stacked (input b's row i at row b n + i); y:
// (inputs n, d_out()) likewise, rows r0 .. n-1 of each input used. On the GPU both point to
// device memory. heads divides d_k and d_v; train_output implies train_values; a frozen map
// (map uniform or known) implies train_values (else nothing would be trained), and map known a
// `known` array (host memory on the CPU, device memory on the GPU, as x).
struct Model {
  int n = 2, d_model = 2, d_k = 2, d_v = 2;
  int heads = 1;
  int r0 = 1;                 // loss rows R = r0 .. n-1
  int inputs = 1;             // B, the training inputs
  const double* x = nullptr;  // (inputs n, d_model)
  const double* y = nullptr;  // (inputs n, d_out())
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
  bool nudge = false;  // --nudge: the start's W_Q[0][0] moved one ulp up (initial_weights)
  MapMode map = MapMode::learned;  // --map
  // MapMode::known: each head's map on the rows of R of every input, (inputs, H, |R|, n) (the
  // layout evaluate_inputs writes the maps in), stacked as x; entries at masked keys unread.
  const double* known = nullptr;

  ATTN_HD int d_out() const { return train_output ? d_model : d_v; }
  ATTN_HD int key_width() const { return d_k / heads; }    // d_k / H
  ATTN_HD int value_width() const { return d_v / heads; }  // d_v / H
  ATTN_HD bool frozen() const { return map != MapMode::learned; }
  // The trained matrices are `which` in [first_trained(), trained()): 0 W_Q, 1 W_K, 2 W_V, 3 W_O.
  ATTN_HD int first_trained() const { return frozen() ? 2 : 0; }
  ATTN_HD int trained() const { return train_output ? 4 : train_values ? 3 : 2; }
  ATTN_HD int rows() const { return n - r0; }  // |R|
  // Key j is seen by query i: always, or j <= i with causal.
  ATTN_HD int last_key(int i) const { return causal ? i : n - 1; }
};

// The shape of matrix `which` (0 W_Q, 1 W_K, 2 W_V, 3 W_O): rows x cols.
ATTN_HD inline int matrix_rows(const Model& m, int which) { return which == 3 ? m.d_v : m.d_model; }
ATTN_HD inline int matrix_cols(const Model& m, int which) {
  return which == 3 ? m.d_model : which == 2 ? m.d_v : m.d_k;
}
// Elements of the trained matrices (the numeric gradient's count of loss pairs).
ATTN_HD inline std::int64_t trained_weights(const Model& m) {
  std::int64_t e = 0;
  for (int which = m.first_trained(); which < m.trained(); ++which)
    e += static_cast<std::int64_t>(matrix_rows(m, which)) * matrix_cols(m, which);
  return e;
}
// Elements of a seed's weights W_Q, W_K, W_V and (qkvo) W_O, in that order, each row-major: the
// start of its workspace, and of its training result. W_V is there also under --train qk (I).
ATTN_HD inline std::int64_t weights_size(const Model& m) {
  const std::int64_t dm = m.d_model, dk = m.d_k, dv = m.d_v;
  return 2 * dm * dk + dm * dv + (m.train_output ? dv * dm : 0);
}

// Offsets of each array in a seed's workspace (in elements). Shapes in brackets, B = inputs;
// arrays that a model does not use have size 0. The weights come first (weights_size elements).
struct Layout {
  std::int64_t wq, wk, wv, wo;  // [d_model, d_k] x2, [d_model, d_v], [d_v, d_model] (qkvo)
  std::int64_t q, k, v;         // [B n, d_k], [B n, d_k], [B n, d_v]
  std::int64_t p;               // [B, H, n, n]
  std::int64_t o, f;            // [B n, d_v]; [B n, d_model] (qkvo; else f == o)
  std::int64_t d_f, d_o;        // [B n, d_out] (qkvo; else d_f == d_o); [B n, d_v]
  std::int64_t d_p;             // [B, H, n, n] (dS after the softmax backward)
  std::int64_t dq, dk, dv;      // [B n, d_k], [B n, d_k], [B n, d_v]
  // Gradients of the trained matrices in order: for the numeric gradient, for Adam, and (the
  // CPU twin's blocked products) the partial sums of an Xᵀ or Oᵀ product over the rows of R
  // of many inputs (see needs_gradients).
  std::int64_t g;
  std::int64_t am, av;  // Adam's m and v, laid out as g (Adam only)
  std::int64_t powers;  // β1ᵗ, β2ᵗ (Adam only)
  std::int64_t start;   // the loss at the starting weights
  std::int64_t total;
};

// Whether the workspace holds the gradient array g.
ATTN_HD inline bool needs_gradients(const Model& m) {
  return m.grad == Grad::numeric || m.optimizer == Optimizer::adam || (m.inputs > 1 && m.r0 > 0);
}

ATTN_HD inline Layout layout(const Model& m) {
  Layout l;
  const std::int64_t rows = static_cast<std::int64_t>(m.inputs) * m.n, dm = m.d_model, dk = m.d_k,
                     dv = m.d_v, hn = static_cast<std::int64_t>(m.inputs) * m.heads * m.n * m.n;
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
  l.q = take(rows * dk);
  l.k = take(rows * dk);
  l.v = take(rows * dv);
  l.p = take(hn);
  l.o = take(rows * dv);
  l.f = out ? take(rows * dm) : l.o;
  l.d_o = take(rows * dv);
  l.d_f = out ? take(rows * dm) : l.d_o;
  l.d_p = take(hn);
  l.dq = take(rows * dk);
  l.dk = take(rows * dk);
  l.dv = take(rows * dv);
  l.g = take(needs_gradients(m) ? weights : 0);
  l.am = take(adam ? weights : 0);
  l.av = take(adam ? weights : 0);
  l.powers = take(adam ? 2 : 0);
  l.start = take(1);
  l.total = at;
  return l;
}

// Where matrix `which` (0 W_Q, 1 W_K, 2 W_V, 3 W_O) and its gradient live (its offset in the
// workspace; a trained matrix's offset inside the gradient, Adam m and Adam v arrays).
ATTN_HD inline std::int64_t matrix_at(const Layout& l, int which) {
  return which == 0 ? l.wq : which == 1 ? l.wk : which == 2 ? l.wv : l.wo;
}
ATTN_HD inline std::int64_t gradient_at(const Model& m, int which) {
  std::int64_t e = 0;
  for (int before = m.first_trained(); before < which; ++before)
    e += static_cast<std::int64_t>(matrix_rows(m, before)) * matrix_cols(m, before);
  return e;
}
// Head h's map of input b (P or dS) in the workspace: [n, n] from there.
ATTN_HD inline std::int64_t map_at(const Model& m, std::int64_t base, int b, int h) {
  return base + (static_cast<std::int64_t>(b) * m.heads + h) * m.n * m.n;
}

// What a seed's training leaves, in this order: the final loss (on the training inputs), the
// loss at the starting weights, then the final weights (weights_size(m) values: W_Q, W_K, W_V,
// then W_O under qkvo). Maps and outputs come from evaluate_inputs on the inputs measured.
ATTN_HD inline std::int64_t result_size(const Model& m) { return 2 + weights_size(m); }

// What evaluate_inputs leaves for `inputs` inputs, in this order: the loss on them (the mean
// over the inputs, as L), the maps P_bh on the rows of R (inputs × H × |R| × n), then the
// outputs F_b on the rows of R (inputs × |R| × d_out).
ATTN_HD inline std::int64_t evaluation_size(const Model& m, std::int64_t inputs) {
  return 1 + inputs * m.rows() * (static_cast<std::int64_t>(m.heads) * m.n + m.d_out());
}

// Useful FLOPs of one training step of one seed, as this file computes it (2 per multiply-add
// of the matrix products, every key counted also under a causal mask; the O(n²) softmax and
// elementwise work, Adam's included, is left out): the count the benchmarks divide by. Every
// product is one input's, B of them. Analytic gradients only. A frozen map: the W_V and W_O
// parts alone (no scores, dP, dQ, dK; Q and K are not projected again).
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
  double f;
  if (m.frozen()) {
    f = d_o + grad_v + proj_v + outputs + (wo ? grad_o : 0);
    if (m.schedule == Schedule::sequential && wo) f += final_o;
  } else if (m.schedule == Schedule::simultaneous) {
    f = d_o + back + grad_q + grad_k + (m.train_values ? grad_v : 0) + (wo ? grad_o : 0) + proj_q +
        proj_k + (m.train_values ? proj_v : 0) + scores + outputs;
  } else {
    f = (d_o + back + grad_q + proj_q + scores + outputs) +
        (d_o + back + grad_k + proj_k + scores + outputs);
    if (m.train_values) f += d_o + grad_v + proj_v + outputs;
    if (wo) f += grad_o + final_o;
  }
  return m.inputs * f;
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

// out[r][c] = Σ_k x[r][k] W[k][c] for the rows i in [r_begin, n) of every input (stacked row
// r = b n + i): a projection (Q, K or V). x (inputs n, d_model) shared; W at w[wo] (d_model,
// cols); out at w[oo] (inputs n, cols).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void project(const Model& m, M w, std::int64_t wo, std::int64_t oo, int cols,
                                 int r_begin, Stop stop = {}) {
  for (int b = 0; b < m.inputs; ++b)
    for (int i = r_begin; i < m.n; ++i) {
      if (stop()) return;
      const std::int64_t r = static_cast<std::int64_t>(b) * m.n + i;
      for (int c = 0; c < cols; ++c) {
        T acc = splat<T>(0.0);
        for (int k = 0; k < m.d_model; ++k)
          acc = fma_t(splat<T>(m.x[r * m.d_model + k]), T(w[wo + k * cols + c]), acc);
        w[oo + r * cols + c] = acc;
      }
    }
}

// Weight (i, j) of head h's frozen map on input b (m.frozen(); i in R): 0 at a masked key j >
// last_key(i); else 1/k for uniform (k = last_key(i) + 1 visible keys, one division), the
// known map's entry for known.
ATTN_HD inline double frozen_weight(const Model& m, int b, int h, int i, int j) {
  const int last = m.last_key(i);
  if (j > last) return 0.0;
  if (m.map == MapMode::uniform) return 1.0 / static_cast<double>(last + 1);
  return m.known[((static_cast<std::int64_t>(b) * m.heads + h) * m.rows() + (i - m.r0)) * m.n + j];
}

// Input b's frozen maps on the rows of R, head by head (frozen_weight): the scores_softmax_of
// of a frozen map.
template <class T, class M>
ATTN_HD ATTN_INLINE void frozen_maps_of(const Model& m, const Layout& l, M w, int b) {
  for (int h = 0; h < m.heads; ++h) {
    const std::int64_t p = map_at(m, l.p, b, h);
    for (int i = m.r0; i < m.n; ++i)
      for (int j = 0; j < m.n; ++j) w[p + i * m.n + j] = splat<T>(frozen_weight(m, b, h, i, j));
  }
}

// Scores and softmax of input b on the rows of R, head by head: P_bh[i][j] = softmax_j(Q_bh,i ·
// K_bh,j c) over the keys j <= last_key(i); the masked weights are 0. A frozen map instead:
// frozen_maps_of.
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void scores_softmax_of(const Model& m, const Layout& l, M w, int b,
                                           Stop stop = {}) {
  if (m.frozen()) {
    frozen_maps_of<T>(m, l, w, b);
    return;
  }
  const double root = scale_root(m);
  const int dh = m.key_width();
  const std::int64_t row0 = static_cast<std::int64_t>(b) * m.n;
  for (int h = 0; h < m.heads; ++h) {
    const std::int64_t p = map_at(m, l.p, b, h);
    for (int i = m.r0; i < m.n; ++i) {
      if (stop()) return;
      const int last = m.last_key(i);
      T top = splat<T>(0.0);
      for (int j = 0; j <= last; ++j) {
        T s = splat<T>(0.0);
        for (int c = h * dh; c < (h + 1) * dh; ++c)
          s = fma_t(T(w[l.q + (row0 + i) * m.d_k + c]), T(w[l.k + (row0 + j) * m.d_k + c]), s);
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
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void scores_softmax(const Model& m, const Layout& l, M w, Stop stop = {}) {
  for (int b = 0; b < m.inputs; ++b) scores_softmax_of<T>(m, l, w, b, stop);
}

// F = O W_O on the rows of R of input b (qkvo).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void final_outputs_of(const Model& m, const Layout& l, M w, int b,
                                          Stop stop = {}) {
  for (int i = m.r0; i < m.n; ++i) {
    if (stop()) return;
    const std::int64_t r = static_cast<std::int64_t>(b) * m.n + i;
    for (int c = 0; c < m.d_model; ++c) {
      T acc = splat<T>(0.0);
      for (int t = 0; t < m.d_v; ++t)
        acc = fma_t(T(w[l.o + r * m.d_v + t]), T(w[l.wo + t * m.d_model + c]), acc);
      w[l.f + r * m.d_model + c] = acc;
    }
  }
}

// O_b = concat_h(P_bh V_bh) on the rows of R of input b, then F_b (qkvo).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void outputs_of(const Model& m, const Layout& l, M w, int b, Stop stop = {}) {
  const int dh = m.value_width();
  const std::int64_t row0 = static_cast<std::int64_t>(b) * m.n;
  for (int i = m.r0; i < m.n; ++i) {
    if (stop()) return;
    for (int h = 0; h < m.heads; ++h) {
      const std::int64_t p = map_at(m, l.p, b, h);
      for (int c = h * dh; c < (h + 1) * dh; ++c) {
        T acc = splat<T>(0.0);
        for (int j = 0; j < m.n; ++j)
          acc = fma_t(T(w[p + i * m.n + j]), T(w[l.v + (row0 + j) * m.d_v + c]), acc);
        w[l.o + (row0 + i) * m.d_v + c] = acc;
      }
    }
  }
  if (m.train_output) final_outputs_of<T>(m, l, w, b, stop);
}
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void outputs(const Model& m, const Layout& l, M w, Stop stop = {}) {
  for (int b = 0; b < m.inputs; ++b) outputs_of<T>(m, l, w, b, stop);
}
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void final_outputs(const Model& m, const Layout& l, M w, Stop stop = {}) {
  for (int b = 0; b < m.inputs; ++b) final_outputs_of<T>(m, l, w, b, stop);
}

// The loss's chain continued over input b: sum + Σ_{r ∈ R} ‖F_b,r − Y_b,r‖² (one fused chain,
// rows then columns) from the stored F, the target y (that input's (n, d_out)).
template <class T, class M>
ATTN_HD ATTN_INLINE T loss_chain(const Model& m, const Layout& l, M w, int b, const double* y,
                                 T sum) {
  const int d = m.d_out();
  const std::int64_t row0 = static_cast<std::int64_t>(b) * m.n;
  for (int i = m.r0; i < m.n; ++i)
    for (int c = 0; c < d; ++c) {
      const T e = w[l.f + (row0 + i) * d + c] - y[i * d + c];
      sum = fma_t(e, e, sum);
    }
  return sum;
}

// L = (1/B) Σ_b Σ_{r ∈ R} ‖F_b,r − Y_b,r‖² from the stored F: one chain over the inputs in
// order, divided by B once.
template <class T, class M>
ATTN_HD ATTN_INLINE T loss_of(const Model& m, const Layout& l, M w) {
  T sum = splat<T>(0.0);
  for (int b = 0; b < m.inputs; ++b)
    sum = loss_chain<T>(m, l, w, b, m.y + static_cast<std::int64_t>(b) * m.n * m.d_out(), sum);
  return sum / static_cast<double>(m.inputs);
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

// dF's factor 2/B: the mean over the inputs (see the top).
ATTN_HD inline double output_gradient_factor(const Model& m) {
  return 2.0 / static_cast<double>(m.inputs);
}

// dF = (2/B) (F − Y), then (qkvo) dO = dF W_Oᵀ; rows of R of every input.
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void backward_outputs(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const int d = m.d_out();
  const double two = output_gradient_factor(m);
  for (int b = 0; b < m.inputs; ++b)
    for (int i = m.r0; i < m.n; ++i) {
      if (stop()) return;
      const std::int64_t r = static_cast<std::int64_t>(b) * m.n + i;
      for (int c = 0; c < d; ++c)
        w[l.d_f + r * d + c] = two * (w[l.f + r * d + c] - m.y[r * d + c]);
      if (m.train_output)
        for (int t = 0; t < m.d_v; ++t) {
          T acc = splat<T>(0.0);
          for (int c = 0; c < m.d_model; ++c)
            acc = fma_t(T(w[l.d_f + r * m.d_model + c]), T(w[l.wo + t * m.d_model + c]), acc);
          w[l.d_o + r * m.d_v + t] = acc;
        }
    }
}

// Per input and head, dP_bh = dO_bh V_bhᵀ, then dS_bh = P_bh ⊙ (dP_bh − rowsum(dP_bh ⊙ P_bh)) in
// place of dP_bh over the keys each query sees (0 at the masked ones); rows of R. Needs
// backward_outputs.
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void backward_scores(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const int dh = m.value_width();
  for (int b = 0; b < m.inputs; ++b) {
    const std::int64_t row0 = static_cast<std::int64_t>(b) * m.n;
    for (int h = 0; h < m.heads; ++h) {
      const std::int64_t p = map_at(m, l.p, b, h), d_p = map_at(m, l.d_p, b, h);
      for (int i = m.r0; i < m.n; ++i) {
        if (stop()) return;
        const int last = m.last_key(i);
        T dot = splat<T>(0.0);
        for (int j = 0; j <= last; ++j) {
          T acc = splat<T>(0.0);
          for (int c = h * dh; c < (h + 1) * dh; ++c)
            acc = fma_t(T(w[l.d_o + (row0 + i) * m.d_v + c]), T(w[l.v + (row0 + j) * m.d_v + c]),
                        acc);
          w[d_p + i * m.n + j] = acc;
          dot = fma_t(acc, T(w[p + i * m.n + j]), dot);
        }
        for (int j = 0; j <= last; ++j)
          w[d_p + i * m.n + j] = w[p + i * m.n + j] * (w[d_p + i * m.n + j] - dot);
        for (int j = last + 1; j < m.n; ++j) w[d_p + i * m.n + j] = splat<T>(0.0);
      }
    }
  }
}

// dQ_bh = dS_bh K_bh c (rows of R).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void grad_queries(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const double root = scale_root(m);
  const int dh = m.key_width();
  for (int b = 0; b < m.inputs; ++b) {
    const std::int64_t row0 = static_cast<std::int64_t>(b) * m.n;
    for (int h = 0; h < m.heads; ++h) {
      const std::int64_t d_p = map_at(m, l.d_p, b, h);
      for (int i = m.r0; i < m.n; ++i) {
        if (stop()) return;
        for (int c = h * dh; c < (h + 1) * dh; ++c) {
          T acc = splat<T>(0.0);
          for (int j = 0; j < m.n; ++j)
            acc = fma_t(T(w[d_p + i * m.n + j]), T(w[l.k + (row0 + j) * m.d_k + c]), acc);
          w[l.dq + (row0 + i) * m.d_k + c] = scaled(m, root, acc);
        }
      }
    }
  }
}

// dK_bh = dS_bhᵀ Q_bh c (all rows; sums over the rows of R).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void grad_keys(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const double root = scale_root(m);
  const int dh = m.key_width();
  for (int b = 0; b < m.inputs; ++b) {
    const std::int64_t row0 = static_cast<std::int64_t>(b) * m.n;
    for (int h = 0; h < m.heads; ++h) {
      const std::int64_t d_p = map_at(m, l.d_p, b, h);
      for (int j = 0; j < m.n; ++j) {
        if (stop()) return;
        for (int c = h * dh; c < (h + 1) * dh; ++c) {
          T acc = splat<T>(0.0);
          for (int i = m.r0; i < m.n; ++i)
            acc = fma_t(T(w[d_p + i * m.n + j]), T(w[l.q + (row0 + i) * m.d_k + c]), acc);
          w[l.dk + (row0 + j) * m.d_k + c] = scaled(m, root, acc);
        }
      }
    }
  }
}

// dV_bh = P_bhᵀ dO_bh (all rows; sums over the rows of R).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void grad_values(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const int dh = m.value_width();
  for (int b = 0; b < m.inputs; ++b) {
    const std::int64_t row0 = static_cast<std::int64_t>(b) * m.n;
    for (int h = 0; h < m.heads; ++h) {
      const std::int64_t p = map_at(m, l.p, b, h);
      for (int j = 0; j < m.n; ++j) {
        if (stop()) return;
        for (int c = h * dh; c < (h + 1) * dh; ++c) {
          T acc = splat<T>(0.0);
          for (int i = m.r0; i < m.n; ++i)
            acc = fma_t(T(w[p + i * m.n + j]), T(w[l.d_o + (row0 + i) * m.d_v + c]), acc);
          w[l.dv + (row0 + j) * m.d_v + c] = acc;
        }
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

// The gradient Σ_b X_bᵀ dZ_b over the rows [r_begin, n) of every input (one chain per element,
// the stacked rows in ascending order) of the weights at w[wo] (d_model, cols), dZ at w[dz]
// (inputs n, cols), taken (take_gradient) with the gradient array at w[go].
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void descend(const Model& m, M w, std::int64_t wo, std::int64_t dz, int cols,
                                 int r_begin, std::int64_t go, Stop stop = {}) {
  for (int k = 0; k < m.d_model; ++k) {
    if (stop()) return;
    for (int c = 0; c < cols; ++c) {
      T acc = splat<T>(0.0);
      for (int b = 0; b < m.inputs; ++b)
        for (int i = r_begin; i < m.n; ++i) {
          const std::int64_t r = static_cast<std::int64_t>(b) * m.n + i;
          acc = fma_t(splat<T>(m.x[r * m.d_model + k]), T(w[dz + r * cols + c]), acc);
        }
      take_gradient<T>(m, w, wo, go, static_cast<std::int64_t>(k) * cols + c, acc);
    }
  }
}

// dW_O = Σ_b O_bᵀ dF_b over the rows of R (as descend), taken (take_gradient) with the gradient
// array at w[go].
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void descend_output(const Model& m, const Layout& l, M w, std::int64_t go,
                                        Stop stop = {}) {
  for (int t = 0; t < m.d_v; ++t) {
    if (stop()) return;
    for (int c = 0; c < m.d_model; ++c) {
      T acc = splat<T>(0.0);
      for (int b = 0; b < m.inputs; ++b)
        for (int i = m.r0; i < m.n; ++i) {
          const std::int64_t r = static_cast<std::int64_t>(b) * m.n + i;
          acc = fma_t(T(w[l.o + r * m.d_v + t]), T(w[l.d_f + r * m.d_model + c]), acc);
        }
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
  const int first = m.first_trained(), trained = m.trained();
  const bool maps = !m.frozen();  // the maps are trained: W_Q's and W_K's gradients
  for (int step = s0; step < s1; ++step) {
    if (stop()) return;
    advance_powers<T>(m, l, w);
    if (m.grad == Grad::numeric) {
      for (int which = first; which < trained; ++which) {
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
        for (int which = first; which < trained; ++which)
          apply_gradient<T>(m, l, w, which, l.g + gradient_at(m, which), rows);
      forward<T>(m, l, w, rows);
      continue;
    }
    const bool adam = m.optimizer == Optimizer::adam;
    if (m.schedule == Schedule::sequential) {
      for (int which = first; which < trained; ++which) {
        backward_outputs<T>(m, l, w, rows);
        if (which < 2) backward_scores<T>(m, l, w, rows);
        descend_of<T>(m, l, w, which, rows);
        if (adam) apply_gradient<T>(m, l, w, which, l.g + gradient_at(m, which), rows);
        refresh<T>(m, l, w, which, rows);
      }
    } else {
      backward_outputs<T>(m, l, w, rows);
      // Every gradient before any update: with SGD descend_of updates in place, so the Xᵀ
      // products (which read only dQ, dK, dV, O, dF) follow all the per-head gradients.
      if (maps) {
        backward_scores<T>(m, l, w, rows);
        grad_queries<T>(m, l, w, rows);
        grad_keys<T>(m, l, w, rows);
      }
      if (trained > 2) grad_values<T>(m, l, w, rows);
      const std::int64_t g[4] = {l.g + gradient_at(m, 0), l.g + gradient_at(m, 1),
                                 l.g + gradient_at(m, 2), l.g + gradient_at(m, 3)};
      if (trained > 3) descend_output<T>(m, l, w, g[3], rows);
      if (maps) {
        descend<T>(m, w, l.wq, l.dq, m.d_k, m.r0, g[0], rows);
        descend<T>(m, w, l.wk, l.dk, m.d_k, 0, g[1], rows);
      }
      if (trained > 2) descend<T>(m, w, l.wv, l.dv, m.d_v, 0, g[2], rows);
      if (adam)
        for (int which = first; which < trained; ++which)
          apply_gradient<T>(m, l, w, which, g[which], rows);
      // A frozen map: only W_V and W_O changed, so what follows W_V is the forward pass.
      if (maps)
        forward<T>(m, l, w, rows);
      else
        refresh<T>(m, l, w, 2, rows);
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

// The weights W_Q, W_K, W_V and (qkvo) W_O drawn from g as successive g.normal(size=(d_model,
// d_k | d_k | d_v), then (d_v, d_model)) draws, row-major, times `scale`; with --train qk W_V is
// then the identity (spec "Start"; a seed's start, and the teacher of --task teacher).
// store(offset, value) writes one element at its offset in the workspace (weights_size(m)
// elements from 0).
template <class Store>
ATTN_HD void draw_weights(const Model& m, numpy_rng::Pcg64& g, double scale, Store& store) {
  const Layout l = layout(m);
  for (int which = 0; which < (m.train_output ? 4 : 3); ++which) {
    const std::int64_t size =
        static_cast<std::int64_t>(matrix_rows(m, which)) * matrix_cols(m, which);
    for (std::int64_t e = 0; e < size; ++e)
      store(matrix_at(l, which) + e, numpy_rng::normal(g) * scale);
  }
  if (!m.train_values)
    for (int r = 0; r < m.d_model; ++r)
      for (int c = 0; c < m.d_v; ++c) store(l.wv + r * m.d_v + c, r == c ? 1.0 : 0.0);
}

// Seed s's starting weights: draw_weights from numpy default_rng(s) at init_scale; with
// m.nudge (--nudge's second run) W_Q[0][0] is then moved to the next double towards +∞.
template <class Store>
ATTN_HD void initial_weights(const Model& m, std::uint64_t seed, Store& store) {
  numpy_rng::Pcg64 g(seed);
  if (!m.nudge) {
    draw_weights(m, g, m.init_scale, store);
    return;
  }
  double first = 0;
  auto keep_first = [&store, &first](std::int64_t at, double v) {
    if (at == 0) first = v;
    store(at, v);
  };
  draw_weights(m, g, m.init_scale, keep_first);
  store(0, nextafter(first, HUGE_VAL));
}

// An accessor over get(offset) (write_result's), for the templates above.
template <class Get>
struct Reader {
  Get& get;
  ATTN_HD double operator[](std::int64_t at) const { return get(at); }
};

// After train(): a seed's training result (result_size(m) values, see there) through
// get(offset): the final loss recomputed from the stored F (loss_of), the start loss, the weights.
template <class Get>
ATTN_HD void write_result(const Model& m, Get& get, double* out) {
  const Layout l = layout(m);
  out[0] = loss_of<double>(m, l, Reader<Get>{get});
  out[1] = get(l.start);
  const std::int64_t weights = weights_size(m);
  for (std::int64_t e = 0; e < weights; ++e) out[2 + e] = get(e);
}

// The model of one input: m's shapes and options, B = 1 (evaluate_inputs' workspace layout).
ATTN_HD inline Model one_input(const Model& m) {
  Model o = m;
  o.inputs = 1;
  o.x = nullptr;
  o.y = nullptr;
  o.known = nullptr;
  return o;
}

// The maps as computed (evaluate_inputs' replace, no intervention).
struct KeepMaps {
  template <class M>
  ATTN_HD void operator()(const Model&, const Layout&, M, int) const {}
};

// The forward pass of one seed's weights on `count` inputs, one at a time: x (count n,
// d_model) and y (count n, d_out), stacked as Model's, and with m.map known their known maps
// (count, H, |R|, n), as Model::known (else unread: nullptr). w is a workspace of
// layout(one_input(m)) whose weights (its first weights_size(m) elements) are set. For input b:
// Q, K, V, the maps, then replace(m1, l1, w, b) with m1 the model of that input and l1 its
// layout (it may overwrite the maps P_h on the rows of R, at map_at(m1, l1.p, 0, h): an
// intervention; KeepMaps keeps them), then the outputs O and F from those maps, then emit(m1,
// l1, w, b) (the caller copies what it wants). Returns the loss on the inputs, (1/count) Σ_b
// Σ_{r ∈ R} ‖F_b,r − Y_b,r‖², one chain over the inputs in order (loss_of's: on the training
// inputs, the training's L to the bit).
template <class T, class M, class Replace, class Emit>
ATTN_HD T evaluate_inputs(const Model& m, M w, const double* x, const double* y,
                          const double* known, int count, Replace& replace, Emit& emit) {
  Model m1 = one_input(m);
  const Layout l1 = layout(m1);
  T sum = splat<T>(0.0);
  for (int b = 0; b < count; ++b) {
    m1.x = x + static_cast<std::int64_t>(b) * m.n * m.d_model;
    m1.y = y + static_cast<std::int64_t>(b) * m.n * m.d_out();
    if (known != nullptr)
      m1.known = known + static_cast<std::int64_t>(b) * m.heads * m.rows() * m.n;
    project<T>(m1, w, l1.wq, l1.q, m1.d_k, m1.r0);
    project<T>(m1, w, l1.wk, l1.k, m1.d_k, 0);
    project<T>(m1, w, l1.wv, l1.v, m1.d_v, 0);
    scores_softmax<T>(m1, l1, w);
    replace(m1, l1, w, b);
    outputs<T>(m1, l1, w);
    sum = loss_chain<T>(m1, l1, w, 0, m1.y, sum);
    emit(m1, l1, w, b);
  }
  return sum / static_cast<double>(count);
}

// Many seeds: for i < count, out + i * result_size(m) = the training result of seed seeds[i]
// (the final loss, the start loss, the final weights). m.x, m.y (and m.known) in host memory.
// The CPU's threads ask monitor.stop_requested() between steps and numeric-gradient elements (a
// large head's seed can train for minutes), and throw Interrupted once they have all returned.
void train_seeds_cpu(const Model& m, const std::uint64_t* seeds, std::int64_t count, double* out,
                     const Monitor& monitor = silent_monitor());

// Measurement on the CPU, many seeds: for i < count, the weights at weights + i * stride
// (weights_size(m) values, as a training result holds them from its third value on) evaluated
// (evaluate_inputs) on `inputs` inputs x (inputs n, d_model), y (inputs n, d_out) and, with
// m.map known, their known maps `known` (inputs, H, |R|, n; else nullptr), host memory;
// out + i * evaluation_size(m, inputs) = the loss on them, the maps, the outputs (see
// evaluation_size). replace: nullptr (the computed maps), or the maps to use instead, seed i's
// at replace + i * inputs * H * |R| * n in the layout of the maps evaluation writes (its rows
// outside the visible keys must be 0 for the output to mean the masked head's). OpenMP over
// lane packs of seeds at the best CPU level; the same bits as evaluate_inputs<double> on each
// seed alone. Throws Interrupted when monitor says stop (between seeds).
void evaluate_seeds_cpu(const Model& m, const double* weights, std::int64_t stride,
                        std::int64_t count, const double* x, const double* y, const double* known,
                        int inputs, double* out, const double* replace = nullptr,
                        const Monitor& monitor = silent_monitor());

// Seed s's starting weights (initial_weights, m.nudge included) as weights_size(m) values at
// out: what a training starts from, for measuring a start.
void start_weights(const Model& m, std::uint64_t seed, double* out);

// The GPU's two training kernels (head_cuda.cu, docs/GPU.md): a warp per seed with the seed's
// workspace in shared memory, where it fits and the gradient is analytic; else one seed per
// thread with the workspace in global memory. automatic picks the warp where it can.
enum class GpuKernel : int { automatic, warp, thread };

// Shared memory the warp kernel needs for a seed (one block): its whole workspace, bytes.
inline std::int64_t warp_shared_bytes(const Model& m) {
  return static_cast<std::int64_t>(sizeof(double)) * layout(m).total;
}
// Whether the warp kernel trains m on a device whose blocks may have `shared_limit` bytes of
// shared memory (an H200's 227 KiB at most): an analytic gradient, the workspace within it.
inline bool warp_fits(const Model& m, std::int64_t shared_limit) {
  return m.grad == Grad::analytic && warp_shared_bytes(m) <= shared_limit;
}

#if defined(ATTNLAB_WITH_CUDA)
// GPU, device-resident: steps [s0, s1) of the training of seeds d_seeds[0 .. count) (0 <= s0
// <= s1 <= m.steps) by `kernel` (automatic: the warp kernel where warp_fits, else the thread
// kernel; warp where it does not fit throws std::invalid_argument). m.x, m.y, m.known (map
// known), d_seeds, d_workspace and d_out are device memory; d_workspace holds count *
// layout(m).total doubles and carries each seed's state from one call to the next (the same count
// and kernel every call; the thread kernel keeps element e of seed i at [e * count + i], the warp
// kernel at [i * total + e]); the warp kernel reads it only when s0 > 0 and writes it only when s1
// < m.steps (a whole training in one call may pass nullptr). s0 == 0 first draws the starting
// weights; s1 == m.steps then writes seed i's training result to d_out + i * result_size(m).
// Nothing is allocated or copied; returns once the launch is queued on the default stream.
// Throws std::invalid_argument for a step range outside [0, m.steps], std::runtime_error for a
// CUDA error (file and line).
void train_seeds_cuda_device(const Model& m, const std::uint64_t* d_seeds, std::int64_t count,
                             double* d_workspace, double* d_out, int s0, int s1,
                             GpuKernel kernel = GpuKernel::automatic);
// The kernel train_seeds_cuda_device runs for m with `kernel` on the current device.
GpuKernel chosen_kernel(const Model& m, GpuKernel kernel = GpuKernel::automatic);
// Host wrapper: x, y and known (in m: m.inputs inputs), seeds and out in host memory, as
// train_seeds_cpu.
// Trains in slices of steps_per_slice steps (<= 0: all m.steps in one launch), one launch each,
// and asks monitor.stop_requested() after each slice but the last has finished, throwing
// Interrupted when it says true. The results are those of one uninterrupted training, bit for
// bit, however the steps are sliced and whichever kernel trains.
void train_seeds_cuda(const Model& m, const std::uint64_t* seeds, std::int64_t count, double* out,
                      int steps_per_slice = 0, const Monitor& monitor = silent_monitor(),
                      GpuKernel kernel = GpuKernel::automatic);
#endif

}  // namespace attn::head
