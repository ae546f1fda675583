// head_pack.hpp: the CPU twin's analytic training of a lane pack of seeds (head_cpu.cpp), the
// arithmetic of head.hpp's train() with the matrix products register-blocked (host only).
//
// head.hpp computes one output element of a product at a time: one chain of dependent adds,
// each waiting for the one before. Here a product computes a block of output elements at once
// (Block<L>: rows × cols of the result), each with its own accumulator, so that the chains
// interleave and the adder is never idle waiting for a result. Every element is still the same
// chain: acc = 0, then acc = acc + a_t b_t for t = 0, 1, ... in head.hpp's order, then the same
// finishing operation, so every lane gets head.hpp's bits (and the GPU's). The other exact
// rewrites:
// - the max in the softmax is `s > top ? s : top` lane by lane, as pick_gt, but on whole packs
//   at x86-64-v4, where it is one vmaxpd (whose definition is exactly that expression);
// - a division by √d_k is a multiplication by 1/√d_k when √d_k is a power of two (d_k = 1, 4,
//   16, 64, ...): 1/√d_k is then exact, and x/√d_k and x·(1/√d_k) are the rounding of the same
//   real number;
// - the rows of a product are computed in blocks, not interleaved with the work that follows
//   row by row in head.hpp (the softmax, the backward's row sums): each row's arithmetic is
//   unchanged.
// The numeric gradient stays on head.hpp's loops (the lesson's sizes, where the forward passes
// are short).
#pragma once

#include <cmath>
#include <cstdint>

#include "cpu_clones.hpp"
#include "head.hpp"
#include "lanes.hpp"

namespace attn::head::pack {

using P = PackD;

// Output elements a product computes at once at each level, chosen so that the accumulators,
// one row of the right operand and a left value fit in the vector registers: 32 zmm at v4 (a
// pack is one), 16 ymm at v3 (a pack is two), 16 xmm at the baseline (a pack is four).
template <CpuLevel L>
struct Block {
  static constexpr int rows = 1, cols = 2;
};
template <>
struct Block<CpuLevel::v4> {
  static constexpr int rows = 2, cols = 8;
};
template <>
struct Block<CpuLevel::v3> {
  static constexpr int rows = 2, cols = 2;
};

// A matrix operand: element (r, c) at p[r * rs + c * cs]. E is a pack (workspace arrays) or a
// double (the task's X, shared by all lanes).
template <class E>
struct View {
  const E* p;
  std::int64_t rs, cs;
  ATTN_INLINE E at(std::int64_t r, std::int64_t c) const { return p[r * rs + c * cs]; }
};

// head.hpp's row test (its Stop contract) as one type, so that the products below are one
// function whatever the caller's test: off (ask == nullptr, never stops) or ask(context).
struct RowTest {
  bool (*ask)(void*) = nullptr;
  void* context = nullptr;
  ATTN_INLINE bool operator()() const { return ask != nullptr && ask(context); }
};

// What a product does with each sum acc of its element (r, c), out(r, c) being
// out[r * out_rs + c]: stores it; stores acc * factor (factor exact: see the top);
// stores acc / factor; or out(r, c) ← out(r, c) − factor acc (a descent step).
enum class Finish { store, times, over, descend };

// One product: out(r, c) ← finish(Σ_{t < inner} a(r, t) b(t, c)) for rows [r_begin, r_end)
// and columns [0, cols). rows() is asked before each block of rows; once it says true the
// product stops there.
template <class EA>
struct Product {
  int r_begin, r_end, cols, inner;
  View<EA> a;
  View<P> b;
  P* out;
  std::int64_t out_rs;
  Finish finish;
  double factor;
  const RowTest* rows;
};

// The RB × CB elements from (r, c): each sum is the chain 0 + a_0 b_0 + a_1 b_1 + ... in order,
// as head.hpp writes it. Unit: b's columns are adjacent (b.cs == 1), which the compiler then
// reaches from one pointer.
template <int RB, int CB, bool Unit, class EA>
ATTN_INLINE void block(const Product<EA>& job, std::int64_t r, std::int64_t c) {
  const View<EA> a = job.a;
  const std::int64_t bcs = Unit ? 1 : job.b.cs;
  const P* b = job.b.p + c * bcs;
  P acc[RB][CB];
#pragma GCC unroll 16
  for (int i = 0; i < RB; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < CB; ++j) acc[i][j] = splat<P>(0.0);
  for (int t = 0; t < job.inner; ++t) {
    P bt[CB];
#pragma GCC unroll 16
    for (int j = 0; j < CB; ++j) bt[j] = b[t * job.b.rs + j * bcs];
#pragma GCC unroll 16
    for (int i = 0; i < RB; ++i) {
      const EA at = a.at(r + i, t);
#pragma GCC unroll 16
      for (int j = 0; j < CB; ++j) acc[i][j] = acc[i][j] + at * bt[j];
    }
  }
  P* out = job.out + r * job.out_rs + c;
  const std::int64_t rs = job.out_rs;
  const double f = job.factor;
  switch (job.finish) {
    case Finish::store:
#pragma GCC unroll 16
      for (int i = 0; i < RB; ++i)
#pragma GCC unroll 16
        for (int j = 0; j < CB; ++j) out[i * rs + j] = acc[i][j];
      break;
    case Finish::times:
#pragma GCC unroll 16
      for (int i = 0; i < RB; ++i)
#pragma GCC unroll 16
        for (int j = 0; j < CB; ++j) out[i * rs + j] = acc[i][j] * f;
      break;
    case Finish::over:
#pragma GCC unroll 16
      for (int i = 0; i < RB; ++i)
#pragma GCC unroll 16
        for (int j = 0; j < CB; ++j) out[i * rs + j] = acc[i][j] / f;
      break;
    case Finish::descend:
#pragma GCC unroll 16
      for (int i = 0; i < RB; ++i)
#pragma GCC unroll 16
        for (int j = 0; j < CB; ++j) out[i * rs + j] = out[i * rs + j] - f * acc[i][j];
      break;
  }
}

// Columns [0, cols) of RB rows from r: blocks of CB columns, then 4, 2, 1 for the rest.
template <int RB, int CB, bool Unit, class EA>
ATTN_INLINE void row_block(const Product<EA>& job, std::int64_t r) {
  int c = 0;
  for (; c + CB <= job.cols; c += CB) block<RB, CB, Unit>(job, r, c);
  if constexpr (CB > 4)
    if (c + 4 <= job.cols) {
      block<RB, 4, Unit>(job, r, c);
      c += 4;
    }
  if constexpr (CB > 2)
    if (c + 2 <= job.cols) {
      block<RB, 2, Unit>(job, r, c);
      c += 2;
    }
  if constexpr (CB > 1)
    if (c < job.cols) block<RB, 1, Unit>(job, r, c);
}

template <CpuLevel L, bool Unit, class EA>
ATTN_INLINE void rows_of(const Product<EA>& job) {
  constexpr int RB = Block<L>::rows, CB = Block<L>::cols;
  int r = job.r_begin;
  for (; r + RB <= job.r_end; r += RB) {
    if ((*job.rows)()) return;
    row_block<RB, CB, Unit>(job, r);
  }
  for (; r < job.r_end; ++r) {
    if ((*job.rows)()) return;
    row_block<1, CB, Unit>(job, r);
  }
}

template <CpuLevel L, class EA>
ATTN_INLINE void product_body(const Product<EA>& job) {
  if (job.b.cs == 1)
    rows_of<L, true>(job);
  else
    rows_of<L, false>(job);
}

// The products compiled once for each level, out of line: the training inlines everything
// else, and a copy of every product at each of its call sites would be a large function for
// no speed (a product is hundreds of cycles at the smallest sizes; a call is a few).
#define ATTN_HEAD_PRODUCTS(TARGET, SUFFIX, LEVEL)                                             \
  TARGET __attribute__((noinline)) inline void product_##SUFFIX(const Product<P>& job) {      \
    product_body<LEVEL>(job);                                                                 \
  }                                                                                           \
  TARGET __attribute__((noinline)) inline void product_##SUFFIX(const Product<double>& job) { \
    product_body<LEVEL>(job);                                                                 \
  }
ATTN_HEAD_PRODUCTS(ATTN_TARGET_V4, v4, ATTN_CPU_LEVEL_V4)
ATTN_HEAD_PRODUCTS(ATTN_TARGET_V3, v3, ATTN_CPU_LEVEL_V3)
ATTN_HEAD_PRODUCTS(, baseline, CpuLevel::baseline)
#undef ATTN_HEAD_PRODUCTS

template <CpuLevel L, class EA>
ATTN_INLINE void product(const Product<EA>& job) {
  if constexpr (L == CpuLevel::v4)
    product_v4(job);
  else if constexpr (L == CpuLevel::v3)
    product_v3(job);
  else
    product_baseline(job);
}

// s > top ? s : top in every lane (pick_gt(s, top, s, top)).
template <CpuLevel L>
ATTN_INLINE P greater(P s, P top) {
  if constexpr (L == CpuLevel::v4)
    return s > top ? s : top;
  else
    return pick_gt(s, top, s, top);
}

// The matrix steps of head.hpp on one workspace of packs, with the layout and constants of one
// model; each is named after the step of head.hpp it computes.
template <CpuLevel L>
struct Steps {
  const Model& m;
  Layout l;
  P* w;
  const RowTest& rows;
  Finish by_root;  // dividing by √d_k: times (1/√d_k exact) or over
  double root;     // the factor for by_root: 1/√d_k or √d_k
  bool fast_exp;   // exp_t's choice, made once

  Steps(const Model& model, P* workspace, const RowTest& row_test)
      : m(model), l(layout(model)), w(workspace), rows(row_test) {
    root = std::sqrt(static_cast<double>(model.d_k));
    int e = 0;
    by_root = std::frexp(root, &e) == 0.5 ? Finish::times : Finish::over;
    if (by_root == Finish::times) root = 1.0 / root;
    fast_exp = exp_t_takes_exp_pack();
  }

  ATTN_INLINE P exp(P x) const {
    P r;
    if (fast_exp) {
      if constexpr (L == CpuLevel::v4)
        exp_fma_detail::exp_pack_v4(&x, &r);
      else if constexpr (L == CpuLevel::v3)
        exp_fma_detail::exp_pack_v3(&x, &r);
      else
        exp_fma_detail::exp_pack(&x, &r);
      return r;
    }
    return exp_t(x);
  }

  ATTN_INLINE const P* at(std::int64_t offset, std::int64_t row, std::int64_t width) const {
    return w + offset + row * width;
  }

  // project: out = X W on rows [r_begin, n); W at wo (d_model, cols), out at oo (n, cols).
  ATTN_INLINE void project(std::int64_t wo, std::int64_t oo, int cols, int r_begin) const {
    product<L>(Product<double>{r_begin,
                               m.n,
                               cols,
                               m.d_model,
                               {m.x, m.d_model, 1},
                               {w + wo, cols, 1},
                               w + oo,
                               cols,
                               Finish::store,
                               0,
                               &rows});
  }

  // scores_softmax.
  ATTN_INLINE void scores_softmax() const {
    const int n = m.n;
    P* p = w + l.p;
    product<L>(Product<P>{
        m.r0, n, n, m.d_k, {w + l.q, m.d_k, 1}, {w + l.k, 1, m.d_k}, p, n, by_root, root, &rows});
    for (int i = m.r0; i < n; ++i) {
      if (rows()) return;
      P* row = p + static_cast<std::int64_t>(i) * n;
      P top = row[0];
      for (int j = 1; j < n; ++j) top = greater<L>(row[j], top);
      P sum = splat<P>(0.0);
      for (int j = 0; j < n; ++j) {
        const P e = exp(row[j] - top);
        row[j] = e;
        sum = sum + e;
      }
      for (int j = 0; j < n; ++j) row[j] = row[j] / sum;
    }
  }

  // outputs: O = P V on the rows of R.
  ATTN_INLINE void outputs() const {
    product<L>(Product<P>{m.r0,
                          m.n,
                          m.d_v,
                          m.n,
                          {w + l.p, m.n, 1},
                          {w + l.v, m.d_v, 1},
                          w + l.o,
                          m.d_v,
                          Finish::store,
                          0,
                          &rows});
  }

  // backward_scores: dO, then dP = dO Vᵀ, then dS in place of dP.
  ATTN_INLINE void backward_scores() const {
    const int n = m.n, dv = m.d_v;
    P* d_o = w + l.d_o;
    const P* o = w + l.o;
    for (std::int64_t e = static_cast<std::int64_t>(m.r0) * dv;
         e < static_cast<std::int64_t>(n) * dv; ++e)
      d_o[e] = 2.0 * (o[e] - m.y[e]);
    P* d_p = w + l.d_p;
    product<L>(Product<P>{
        m.r0, n, n, dv, {d_o, dv, 1}, {w + l.v, 1, dv}, d_p, n, Finish::store, 0, &rows});
    const P* p = w + l.p;
    for (int i = m.r0; i < n; ++i) {
      if (rows()) return;
      P* ds = d_p + static_cast<std::int64_t>(i) * n;
      const P* pi = p + static_cast<std::int64_t>(i) * n;
      P dot = splat<P>(0.0);
      for (int j = 0; j < n; ++j) dot = dot + ds[j] * pi[j];
      for (int j = 0; j < n; ++j) ds[j] = pi[j] * (ds[j] - dot);
    }
  }

  // grad_queries: dQ = dS K / √d_k.
  ATTN_INLINE void grad_queries() const {
    product<L>(Product<P>{m.r0,
                          m.n,
                          m.d_k,
                          m.n,
                          {w + l.d_p, m.n, 1},
                          {w + l.k, m.d_k, 1},
                          w + l.dq,
                          m.d_k,
                          by_root,
                          root,
                          &rows});
  }

  // grad_keys: dK = dSᵀ Q / √d_k; the sums run over the rows of R.
  ATTN_INLINE void grad_keys() const {
    product<L>(Product<P>{0,
                          m.n,
                          m.d_k,
                          m.n - m.r0,
                          {at(l.d_p, m.r0, m.n), 1, m.n},
                          {at(l.q, m.r0, m.d_k), m.d_k, 1},
                          w + l.dk,
                          m.d_k,
                          by_root,
                          root,
                          &rows});
  }

  // grad_values: dV = Pᵀ dO; the sums run over the rows of R.
  ATTN_INLINE void grad_values() const {
    product<L>(Product<P>{0,
                          m.n,
                          m.d_v,
                          m.n - m.r0,
                          {at(l.p, m.r0, m.n), 1, m.n},
                          {at(l.d_o, m.r0, m.d_v), m.d_v, 1},
                          w + l.dv,
                          m.d_v,
                          Finish::store,
                          0,
                          &rows});
  }

  // descend: W ← W − lr Xᵀ dZ over rows [r_begin, n); W at wo (d_model, cols), dZ at go.
  ATTN_INLINE void descend(std::int64_t wo, std::int64_t go, int cols, int r_begin) const {
    product<L>(Product<double>{0,
                               m.d_model,
                               cols,
                               m.n - r_begin,
                               {m.x + static_cast<std::int64_t>(r_begin) * m.d_model, 1, m.d_model},
                               {at(go, r_begin, cols), cols, 1},
                               w + wo,
                               cols,
                               Finish::descend,
                               m.lr,
                               &rows});
  }

  ATTN_INLINE void forward() const {
    project(l.wq, l.q, m.d_k, m.r0);
    project(l.wk, l.k, m.d_k, 0);
    project(l.wv, l.v, m.d_v, 0);
    scores_softmax();
    outputs();
  }

  ATTN_INLINE void grad_of(int which) const {
    if (which == 0) grad_queries();
    if (which == 1) grad_keys();
    if (which == 2) grad_values();
  }

  ATTN_INLINE void descend_of(int which) const {
    if (which == 0) descend(l.wq, l.dq, m.d_k, m.r0);
    if (which == 1) descend(l.wk, l.dk, m.d_k, 0);
    if (which == 2) descend(l.wv, l.dv, m.d_v, 0);
  }
};

// head.hpp's train(m, w, stop, rows) for a workspace of packs at level L: the same steps in the
// same order (see there), the analytic gradient on the blocked products above, the numeric
// gradient on head.hpp's own loops.
template <CpuLevel L, class Stop>
ATTN_INLINE void train(const Model& m, P* w, Stop& stop, const RowTest& rows) {
  if (m.grad == Grad::numeric) {
    head::train<P>(m, w, stop, rows);
    return;
  }
  const Steps<L> s(m, w, rows);
  const int trained = m.train_values ? 3 : 2;
  s.forward();
  for (int step = 0; step < m.steps; ++step) {
    if (stop()) return;
    if (m.schedule == Schedule::sequential) {
      for (int which = 0; which < trained; ++which) {
        s.backward_scores();
        s.grad_of(which);
        s.descend_of(which);
        if (which == 0) s.project(s.l.wq, s.l.q, m.d_k, m.r0);
        if (which == 1) s.project(s.l.wk, s.l.k, m.d_k, 0);
        if (which == 2) s.project(s.l.wv, s.l.v, m.d_v, 0);
        if (which < 2) s.scores_softmax();
        s.outputs();
      }
    } else {
      s.backward_scores();
      for (int which = 0; which < trained; ++which) s.grad_of(which);
      for (int which = 0; which < trained; ++which) s.descend_of(which);
      s.forward();
    }
  }
}

}  // namespace attn::head::pack
