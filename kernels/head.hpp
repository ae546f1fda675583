// head.hpp: one trainable attention head of any size, trained by gradient descent, the math
// shared by the CPU twin (kernels/head_cpu.cpp, lane packs of seeds) and the GPU kernel
// (kernels/head_cuda.cu, one seed per thread). Spec: docs/spec/VARIABILITY.md (copied from
// shared/spec), "Model", "Start and training".
//
// Row vectors. X is (n, d_model); W_Q, W_K are (d_model, d_k); W_V is (d_model, d_v):
//   Q = X W_Q (n, d_k),  K = X W_K (n, d_k),  V = X W_V (n, d_v),
//   S = Q Kᵀ / √d_k (n, n),  P = softmax(S) row by row,  O = P V (n, d_v),
//   L = Σ_{r ∈ R} ‖O_r − Y_r‖²  over the loss rows R = {r0, ..., n − 1}.
// Rows outside R never reach the loss, so Q, S, P, O, dO, dP, dS, dQ are computed on the rows
// of R only (K and V on all rows). Gradients (the softmax Jacobian, spec "Analytic gradients"):
//   dO = 2 (O − Y);  dP = dO Vᵀ;  dV = Pᵀ dO;  dS = P ⊙ (dP − rowsum(dP ⊙ P));
//   dQ = dS K / √d_k;  dK = dSᵀ Q / √d_k;  dW_Q = Xᵀ dQ,  dW_K = Xᵀ dK,  dW_V = Xᵀ dV.
// Softmax as numpy's lesson code: e = exp(s − max s), P = e / Σ e.
//
// Sequential schedule (the lesson's): in each step W_Q's gradient is taken and applied, then
// W_K's at the new W_Q, then (training values) W_V's at both. After each update only the changed
// projection and what follows it are recomputed (Q, S, P, O after W_Q; K, S, P, O after W_K;
// V, O after W_V), which is exactly the forward pass the next gradient needs.
// Simultaneous: all gradients at the same parameters, then all updates, then one forward.
//
// Memory: every per-seed array lives in one workspace of layout(...).total elements, reached
// through an accessor `w` with w[i] -> T& (CPU: a plain pointer to lane packs; GPU: a strided
// view so that neighbouring threads (seeds) touch neighbouring addresses). Nothing is allocated
// inside; the caller allocates the workspace once per call, not per step.
#pragma once

#include <cmath>
#include <cstdint>

#include "hd.hpp"
#include "lanes.hpp"  // exp_t of lane packs (host only), declared before the templates use it
#include "monitor.hpp"
#include "numpy_random.hpp"
#include "tiny_model.hpp"  // tiny::Grad, tiny::Schedule, splat

namespace attn::head {

using tiny::Grad;
using tiny::Schedule;
using tiny::splat;

// One configuration: shapes, the task's data (shared by all seeds) and the training options.
// x: (n, d_model) row-major; y: (n, d_v) row-major, rows r0 .. n-1 used. On the GPU both point
// to device memory.
struct Model {
  int n = 2, d_model = 2, d_k = 2, d_v = 2;
  int r0 = 1;                 // loss rows R = r0 .. n-1
  const double* x = nullptr;  // (n, d_model)
  const double* y = nullptr;  // (n, d_v)
  bool train_values = true;   // --train qkv (else W_V = I, d_v = d_model)
  int steps = 3000;
  double lr = 0.5;
  Grad grad = Grad::analytic;
  double h = 1e-5;
  Schedule schedule = Schedule::sequential;
  double init_scale = 1.0;
};

// Offsets of each array in a seed's workspace (in elements). Shapes in brackets.
struct Layout {
  std::int64_t wq, wk, wv;  // [d_model, d_k], [d_model, d_k], [d_model, d_v]
  std::int64_t q, k, v;     // [n, d_k], [n, d_k], [n, d_v]
  std::int64_t p, o;        // [n, n], [n, d_v]
  std::int64_t d_o, d_p;    // [n, d_v], [n, n] (d_p holds dS after the softmax backward)
  std::int64_t dq, dk, dv;  // [n, d_k], [n, d_k], [n, d_v]
  std::int64_t g;           // [d_model, 2 d_k + d_v]: numeric gradients of W_Q, W_K, W_V
  std::int64_t total;
};

ATTN_HD inline Layout layout(const Model& m) {
  Layout l;
  const std::int64_t n = m.n, dm = m.d_model, dk = m.d_k, dv = m.d_v;
  std::int64_t at = 0;
  auto take = [&at](std::int64_t size) {
    const std::int64_t here = at;
    at += size;
    return here;
  };
  l.wq = take(dm * dk);
  l.wk = take(dm * dk);
  l.wv = take(dm * dv);
  l.q = take(n * dk);
  l.k = take(n * dk);
  l.v = take(n * dv);
  l.p = take(n * n);
  l.o = take(n * dv);
  l.d_o = take(n * dv);
  l.d_p = take(n * n);
  l.dq = take(n * dk);
  l.dk = take(n * dk);
  l.dv = take(n * dv);
  l.g = take(dm * (2 * dk + dv));
  l.total = at;
  return l;
}

// What a seed's run leaves, in this order: the final loss, then the map P on the rows of R
// ((n − r0) × n), then the outputs O on the rows of R ((n − r0) × d_v).
ATTN_HD inline std::int64_t result_size(const Model& m) {
  return 1 + static_cast<std::int64_t>(m.n - m.r0) * (m.n + m.d_v);
}

// Useful FLOPs of one training step of one seed, as this file computes it (2 per multiply-add
// of the matrix products; the O(n²) softmax and elementwise work is left out): the count the
// benchmarks divide by. Analytic gradients only.
inline double flops_per_step(const Model& m) {
  const double n = m.n, r = m.n - m.r0, dm = m.d_model, dk = m.d_k, dv = m.d_v;
  const double proj_q = 2 * r * dm * dk, proj_k = 2 * n * dm * dk, proj_v = 2 * n * dm * dv;
  const double scores = 2 * r * n * dk, outputs = 2 * r * n * dv;
  const double back = 2 * r * n * dv;  // dP = dO Vᵀ
  const double grad_q = 2 * r * n * dk + 2 * r * dm * dk;
  const double grad_k = 2 * r * n * dk + 2 * n * dm * dk;
  const double grad_v = 2 * r * n * dv + 2 * n * dm * dv;
  if (m.schedule == Schedule::simultaneous)
    return back + grad_q + grad_k + (m.train_values ? grad_v : 0) + proj_q + proj_k +
           (m.train_values ? proj_v : 0) + scores + outputs;
  double f =
      (back + grad_q + proj_q + scores + outputs) + (back + grad_k + proj_k + scores + outputs);
  if (m.train_values) f += back + grad_v + proj_v + outputs;
  return f;
}

// The stop test when nothing can stop the work (the GPU's threads, small heads): it compiles
// away. The matrix steps below ask their Stop before each row of their result, train before
// each step: with a stop test that can say true, the work between two tests is one row of one
// product, whatever the head's size.
struct NeverStop {
  ATTN_HD constexpr bool operator()() const { return false; }
};

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

// Scores and softmax on the rows of R: P[i][j] = softmax_j(Q_i · K_j / √d_k).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void scores_softmax(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const double root = sqrt(static_cast<double>(m.d_k));
  for (int i = m.r0; i < m.n; ++i) {
    if (stop()) return;
    T top = splat<T>(0.0);
    for (int j = 0; j < m.n; ++j) {
      T s = splat<T>(0.0);
      for (int c = 0; c < m.d_k; ++c) s = s + w[l.q + i * m.d_k + c] * w[l.k + j * m.d_k + c];
      s = s / root;
      w[l.p + i * m.n + j] = s;
      top = j == 0 ? s : pick_gt(s, top, s, top);
    }
    T sum = splat<T>(0.0);
    for (int j = 0; j < m.n; ++j) {
      const T e = exp_t(T(w[l.p + i * m.n + j] - top));
      w[l.p + i * m.n + j] = e;
      sum = sum + e;
    }
    for (int j = 0; j < m.n; ++j) w[l.p + i * m.n + j] = w[l.p + i * m.n + j] / sum;
  }
}

// O = P V on the rows of R.
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void outputs(const Model& m, const Layout& l, M w, Stop stop = {}) {
  for (int i = m.r0; i < m.n; ++i) {
    if (stop()) return;
    for (int c = 0; c < m.d_v; ++c) {
      T acc = splat<T>(0.0);
      for (int j = 0; j < m.n; ++j) acc = acc + w[l.p + i * m.n + j] * w[l.v + j * m.d_v + c];
      w[l.o + i * m.d_v + c] = acc;
    }
  }
}

// L = Σ_{r ∈ R} ‖O_r − Y_r‖² from the stored O.
template <class T, class M>
ATTN_HD ATTN_INLINE T loss_of(const Model& m, const Layout& l, M w) {
  T sum = splat<T>(0.0);
  for (int i = m.r0; i < m.n; ++i)
    for (int c = 0; c < m.d_v; ++c) {
      const T e = w[l.o + i * m.d_v + c] - m.y[i * m.d_v + c];
      sum = sum + e * e;
    }
  return sum;
}

// The whole forward pass from the weights: Q (rows of R), K, V, P, O.
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void forward(const Model& m, const Layout& l, M w, Stop stop = {}) {
  project<T>(m, w, l.wq, l.q, m.d_k, m.r0, stop);
  project<T>(m, w, l.wk, l.k, m.d_k, 0, stop);
  project<T>(m, w, l.wv, l.v, m.d_v, 0, stop);
  scores_softmax<T>(m, l, w, stop);
  outputs<T>(m, l, w, stop);
}

// dO = 2 (O − Y), dP = dO Vᵀ, then dS = P ⊙ (dP − rowsum(dP ⊙ P)) in place of dP; rows of R.
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void backward_scores(const Model& m, const Layout& l, M w, Stop stop = {}) {
  for (int i = m.r0; i < m.n; ++i) {
    if (stop()) return;
    for (int c = 0; c < m.d_v; ++c)
      w[l.d_o + i * m.d_v + c] = 2.0 * (w[l.o + i * m.d_v + c] - m.y[i * m.d_v + c]);
    T dot = splat<T>(0.0);
    for (int j = 0; j < m.n; ++j) {
      T acc = splat<T>(0.0);
      for (int c = 0; c < m.d_v; ++c) acc = acc + w[l.d_o + i * m.d_v + c] * w[l.v + j * m.d_v + c];
      w[l.d_p + i * m.n + j] = acc;
      dot = dot + acc * w[l.p + i * m.n + j];
    }
    for (int j = 0; j < m.n; ++j)
      w[l.d_p + i * m.n + j] = w[l.p + i * m.n + j] * (w[l.d_p + i * m.n + j] - dot);
  }
}

// dQ = dS K / √d_k (rows of R).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void grad_queries(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const double root = sqrt(static_cast<double>(m.d_k));
  for (int i = m.r0; i < m.n; ++i) {
    if (stop()) return;
    for (int c = 0; c < m.d_k; ++c) {
      T acc = splat<T>(0.0);
      for (int j = 0; j < m.n; ++j) acc = acc + w[l.d_p + i * m.n + j] * w[l.k + j * m.d_k + c];
      w[l.dq + i * m.d_k + c] = acc / root;
    }
  }
}

// dK = dSᵀ Q / √d_k (all rows; sums over the rows of R).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void grad_keys(const Model& m, const Layout& l, M w, Stop stop = {}) {
  const double root = sqrt(static_cast<double>(m.d_k));
  for (int j = 0; j < m.n; ++j) {
    if (stop()) return;
    for (int c = 0; c < m.d_k; ++c) {
      T acc = splat<T>(0.0);
      for (int i = m.r0; i < m.n; ++i) acc = acc + w[l.d_p + i * m.n + j] * w[l.q + i * m.d_k + c];
      w[l.dk + j * m.d_k + c] = acc / root;
    }
  }
}

// dV = Pᵀ dO (all rows; sums over the rows of R).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void grad_values(const Model& m, const Layout& l, M w, Stop stop = {}) {
  for (int j = 0; j < m.n; ++j) {
    if (stop()) return;
    for (int c = 0; c < m.d_v; ++c) {
      T acc = splat<T>(0.0);
      for (int i = m.r0; i < m.n; ++i) acc = acc + w[l.p + i * m.n + j] * w[l.d_o + i * m.d_v + c];
      w[l.dv + j * m.d_v + c] = acc;
    }
  }
}

// W ← W − lr Xᵀ dZ over rows [r_begin, n): W at w[wo] (d_model, cols), dZ at w[go] (n, cols).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void descend(const Model& m, M w, std::int64_t wo, std::int64_t go, int cols,
                                 int r_begin, Stop stop = {}) {
  for (int k = 0; k < m.d_model; ++k) {
    if (stop()) return;
    for (int c = 0; c < cols; ++c) {
      T acc = splat<T>(0.0);
      for (int i = r_begin; i < m.n; ++i) acc = acc + m.x[i * m.d_model + k] * w[go + i * cols + c];
      w[wo + k * cols + c] = w[wo + k * cols + c] - m.lr * acc;
    }
  }
}

// The loss at the workspace's current weights (a whole forward pass).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE T loss(const Model& m, const Layout& l, M w, Stop rows = {}) {
  forward<T>(m, l, w, rows);
  return loss_of<T>(m, l, w);
}

// Central differences (step h, one element at a time, as the lesson) of L with respect to the
// weights at w[wo] ((d_model, cols)); the gradient goes to w[go] (same shape). stop() is asked
// before each element (a large head's gradient is thousands of forward passes), rows() inside
// each forward pass: see train.
template <class T, class M, class Stop, class Rows = NeverStop>
ATTN_HD ATTN_INLINE void numeric_grad(const Model& m, const Layout& l, M w, std::int64_t wo,
                                      int cols, std::int64_t go, Stop stop, Rows rows = {}) {
  for (int e = 0; e < m.d_model * cols; ++e) {
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

// W ← W − lr G for the weights at w[wo] and a gradient at w[go], both (d_model, cols).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void apply_numeric(const Model& m, M w, std::int64_t wo, int cols,
                                       std::int64_t go, Stop rows = {}) {
  for (int k = 0; k < m.d_model; ++k) {
    if (rows()) return;
    for (int c = 0; c < cols; ++c) {
      const std::int64_t e = static_cast<std::int64_t>(k) * cols + c;
      w[wo + e] = w[wo + e] - m.lr * w[go + e];
    }
  }
}

// The analytic gradient of matrix `which` (0 W_Q, 1 W_K, 2 W_V) into the dQ/dK/dV arrays, at
// the forward state in the workspace (which backward_scores has used).
template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void grad_of(const Model& m, const Layout& l, M w, int which, Stop rows = {}) {
  if (which == 0) grad_queries<T>(m, l, w, rows);
  if (which == 1) grad_keys<T>(m, l, w, rows);
  if (which == 2) grad_values<T>(m, l, w, rows);
}

template <class T, class M, class Stop = NeverStop>
ATTN_HD ATTN_INLINE void descend_of(const Model& m, const Layout& l, M w, int which,
                                    Stop rows = {}) {
  if (which == 0) descend<T>(m, w, l.wq, l.dq, m.d_k, m.r0, rows);
  if (which == 1) descend<T>(m, w, l.wk, l.dk, m.d_k, 0, rows);
  if (which == 2) descend<T>(m, w, l.wv, l.dv, m.d_v, 0, rows);
}

// Steps [s0, s1) of the training (0 <= s0 <= s1 <= m.steps), from the state the steps before
// s0 left in the workspace: the weights and the forward pass at them (Q on the rows of R, K, V,
// P, O), which is all a step reads. train() is forward() then train_steps(0, m.steps); running
// [0, a), [a, b), ..., [z, m.steps) in turn on one workspace does exactly its arithmetic (the
// GPU's slices across launches, head_cuda.cu). On return the workspace holds the forward pass
// at the weights after step s1 − 1. stop() and rows() as train() says.
template <class T, class M, class Stop = NeverStop, class Rows = NeverStop>
ATTN_HD ATTN_INLINE void train_steps(const Model& m, M w, int s0, int s1, Stop stop = {},
                                     Rows rows = {}) {
  const Layout l = layout(m);
  const int trained = m.train_values ? 3 : 2;
  const std::int64_t wo[3] = {l.wq, l.wk, l.wv};
  const int cols[3] = {m.d_k, m.d_k, m.d_v};
  const std::int64_t goff[3] = {0, static_cast<std::int64_t>(m.d_model) * m.d_k,
                                2 * static_cast<std::int64_t>(m.d_model) * m.d_k};
  for (int step = s0; step < s1; ++step) {
    if (stop()) return;
    if (m.grad == Grad::numeric) {
      if (m.schedule == Schedule::sequential) {
        for (int which = 0; which < trained; ++which) {
          numeric_grad<T>(m, l, w, wo[which], cols[which], l.g, stop, rows);
          apply_numeric<T>(m, w, wo[which], cols[which], l.g, rows);
        }
      } else {  // all gradients at the same weights, then all updates
        for (int which = 0; which < trained; ++which)
          numeric_grad<T>(m, l, w, wo[which], cols[which], l.g + goff[which], stop, rows);
        for (int which = 0; which < trained; ++which)
          apply_numeric<T>(m, w, wo[which], cols[which], l.g + goff[which], rows);
      }
      forward<T>(m, l, w, rows);
      continue;
    }
    if (m.schedule == Schedule::sequential) {
      for (int which = 0; which < trained; ++which) {
        backward_scores<T>(m, l, w, rows);
        grad_of<T>(m, l, w, which, rows);
        descend_of<T>(m, l, w, which, rows);
        if (which == 0) project<T>(m, w, l.wq, l.q, m.d_k, m.r0, rows);
        if (which == 1) project<T>(m, w, l.wk, l.k, m.d_k, 0, rows);
        if (which == 2) project<T>(m, w, l.wv, l.v, m.d_v, 0, rows);
        if (which < 2) scores_softmax<T>(m, l, w, rows);
        outputs<T>(m, l, w, rows);
      }
    } else {
      backward_scores<T>(m, l, w, rows);
      for (int which = 0; which < trained; ++which) grad_of<T>(m, l, w, which, rows);
      for (int which = 0; which < trained; ++which) descend_of<T>(m, l, w, which, rows);
      forward<T>(m, l, w, rows);
    }
  }
}

// Trains the weights in the workspace for m.steps steps. On return the workspace holds the
// forward pass at the final weights (P, O valid on the rows of R). stop() is asked before each
// step and each element of a numeric gradient, rows() before each row of every matrix product
// (NeverStop by default: a head small enough that a step is short needs no test inside it);
// once either says true, train returns as soon as the loops it is in end, and the workspace
// holds nothing usable (the CPU's way to honour Ctrl-C within a large head's run,
// head_cpu.cpp). A stop test that says true must say true at every later call.
template <class T, class M, class Stop = NeverStop, class Rows = NeverStop>
ATTN_HD ATTN_INLINE void train(const Model& m, M w, Stop stop = {}, Rows rows = {}) {
  forward<T>(m, layout(m), w, rows);
  train_steps<T>(m, w, 0, m.steps, stop, rows);
}

// Seed s's starting weights (spec "Start"): g = numpy default_rng(s); W_Q, W_K, W_V as three
// successive g.normal(size=(d_model, d_k | d_k | d_v)) draws, row-major, times init_scale; with
// --train qk W_V is then the identity. store(offset, value) writes one element of the workspace.
template <class Store>
ATTN_HD void initial_weights(const Model& m, std::uint64_t seed, Store& store) {
  const Layout l = layout(m);
  numpy_rng::Pcg64 g(seed);
  const std::int64_t sizes[3] = {static_cast<std::int64_t>(m.d_model) * m.d_k,
                                 static_cast<std::int64_t>(m.d_model) * m.d_k,
                                 static_cast<std::int64_t>(m.d_model) * m.d_v};
  const std::int64_t at[3] = {l.wq, l.wk, l.wv};
  for (int which = 0; which < 3; ++which)
    for (std::int64_t e = 0; e < sizes[which]; ++e)
      store(at[which] + e, numpy_rng::normal(g) * m.init_scale);
  if (!m.train_values)
    for (int r = 0; r < m.d_model; ++r)
      for (int c = 0; c < m.d_v; ++c) store(l.wv + r * m.d_v + c, r == c ? 1.0 : 0.0);
}

// After train(): a seed's results (result_size(m) values, see there) through get(offset).
template <class Get>
ATTN_HD void write_result(const Model& m, Get& get, double* out) {
  const Layout l = layout(m);
  // Loss recomputed from the stored O.
  double sum = 0;
  for (int i = m.r0; i < m.n; ++i)
    for (int c = 0; c < m.d_v; ++c) {
      const double e = get(l.o + i * m.d_v + c) - m.y[i * m.d_v + c];
      sum = sum + e * e;
    }
  out[0] = sum;
  std::int64_t at = 1;
  for (int i = m.r0; i < m.n; ++i)
    for (int j = 0; j < m.n; ++j) out[at++] = get(l.p + i * m.n + j);
  for (int i = m.r0; i < m.n; ++i)
    for (int c = 0; c < m.d_v; ++c) out[at++] = get(l.o + i * m.d_v + c);
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
