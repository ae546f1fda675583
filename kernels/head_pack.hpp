// head_pack.hpp: the CPU twin's analytic training of a lane pack of seeds (head_cpu.cpp), the
// arithmetic of head.hpp's train() with the matrix products register-blocked (host only).
//
// head.hpp computes one output element of a product at a time: one chain of dependent fused
// multiply-adds, each waiting for the one before. Here a product computes a block of output
// elements at once (Block<L>: rows × cols of the result), each with its own accumulator, so that
// the chains interleave and the FMA units are never idle waiting for a result. Every element is
// still the same chain: acc = 0, then acc = fma(a_t, b_t, acc) for t = 0, 1, ... in head.hpp's
// order, then the same finishing operation, so every lane gets head.hpp's bits (and the GPU's).
// A chain that runs over the rows of R of several inputs (the Xᵀ and Oᵀ products when R is not
// every row) is one product per input, each continuing the chain the one before stored (a
// stored double is the chain's value, unrounded). The other exact rewrites:
// - the max in the softmax is `s > top ? s : top` lane by lane, as pick_gt, but on whole packs
//   at x86-64-v4, where it is one vmaxpd (whose definition is exactly that expression);
// - a division by √(d_k/H) is a multiplication by its inverse when it is a power of two (1, 4,
//   16, 64, ... columns a head): the inverse is then exact, and x/r and x·(1/r) are the rounding of
//   the same real number;
// - the rows of a product are computed in blocks, not interleaved with the work that follows
//   row by row in head.hpp (the softmax, the backward's row sums): each row's arithmetic is
//   unchanged.
// The fused multiply-add of a pack is one vfmadd at x86-64-v4, two at v3 (simd.hpp's shim), and
// libm's fma lane by lane at the baseline: the same bits at every level. The numeric gradient
// stays on head.hpp's loops (the lesson's sizes, where the forward passes are short).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu_clones.hpp"
#include "head.hpp"
#include "lanes.hpp"
#include "simd.hpp"

namespace attn::head::pack {

using P = PackD;

// Output elements a product computes at once at each level (rows × cols of a block), chosen so
// that the accumulators, one row of the right operand and a left value fit in the vector
// registers: 32 zmm at v4 (a pack is one), 16 ymm at v3 (a pack is two), 16 xmm at the baseline
// (a pack is four). A block's step loads rows + cols packs for rows × cols multiply-adds, and
// at v4 the loads, not the multiply-adds, bound a product's speed: so v4 takes the widest block
// that fits, 4 × 6 (10 loads for 24 multiply-adds), on results 12 or more columns wide, and 4 × 4
// on narrower ones (a head's n × n map of 8 keys: 4 × 6 would leave 2 columns to a thin block).
template <CpuLevel L>
struct Block {
  static constexpr int rows = 1, cols = 2, narrow_cols = 2;
};
template <>
struct Block<CpuLevel::v4> {
  static constexpr int rows = 4, cols = 6, narrow_cols = 4;
};
template <>
struct Block<CpuLevel::v3> {
  static constexpr int rows = 2, cols = 2, narrow_cols = 2;
};

// a * b + c rounded once in every lane, at level L (see the top).
template <CpuLevel L>
ATTN_INLINE P fma(P a, P b, P c) {
#if ATTN_HAVE_CPU_LEVELS
  if constexpr (L == CpuLevel::v4) {
    return (P)simd::V4D::fma((__m512d)a, (__m512d)b, (__m512d)c);
  } else if constexpr (L == CpuLevel::v3) {
    const HalfD lo =
        (HalfD)simd::V3D::fma((__m256d)low_half(a), (__m256d)low_half(b), (__m256d)low_half(c));
    const HalfD hi =
        (HalfD)simd::V3D::fma((__m256d)high_half(a), (__m256d)high_half(b), (__m256d)high_half(c));
    return join_halves(lo, hi);
  }
#endif
  return fma_t(a, b, c);
}
template <CpuLevel L>
ATTN_INLINE P as_pack(P a) {
  return a;
}
// a in every lane as it is: one broadcast at v4. (splat<P>(a) is 0 + a, which turns −0 into
// +0: a double operand is the inputs' copy that Steps made with splat's 0 + x already.)
template <CpuLevel L>
ATTN_INLINE P as_pack(double a) {
#if ATTN_HAVE_CPU_LEVELS
  if constexpr (L == CpuLevel::v4) return (P)simd::V4D::set1(a);
#endif
  return splat<P>(a);
}

// A matrix operand: element (r, c) at p[r * rs + c * cs]. E is a pack (workspace arrays) or a
// double (the task's X, shared by all lanes, as Steps copies it: see as_pack).
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
// and columns [0, cols), each sum a chain from 0, or (start given) continuing the chain whose
// value is start(r, c) (start[r * out_rs + c]). rows() is asked before each block of rows; once
// it says true the product stops there.
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
  const P* start = nullptr;
};

// v kept in a register from here on (v4): GCC would fold a load that several multiply-adds of a
// block use into each of them, a load each time.
template <CpuLevel L>
ATTN_INLINE void in_register(P& v) {
#if ATTN_HAVE_CPU_LEVELS
  if constexpr (L == CpuLevel::v4) asm("" : "+v"(v));
#endif
}

// The RB × CB elements from (r, c): each sum is the chain acc = fma(a_t, b_t, acc) in order
// from 0 (or from start), as head.hpp writes it. Unit: b's columns are adjacent (b.cs == 1),
// which the compiler then reaches from one pointer.
template <CpuLevel L, int RB, int CB, bool Unit, class EA>
ATTN_INLINE void block(const Product<EA>& job, std::int64_t r, std::int64_t c) {
  const View<EA> a = job.a;
  const std::int64_t bcs = Unit ? 1 : job.b.cs;
  const P* b = job.b.p + c * bcs;
  P acc[RB][CB];
  if (job.start == nullptr) {
#pragma GCC unroll 16
    for (int i = 0; i < RB; ++i)
#pragma GCC unroll 16
      for (int j = 0; j < CB; ++j) acc[i][j] = splat<P>(0.0);
  } else {
    const P* from = job.start + r * job.out_rs + c;
#pragma GCC unroll 16
    for (int i = 0; i < RB; ++i)
#pragma GCC unroll 16
      for (int j = 0; j < CB; ++j) acc[i][j] = from[i * job.out_rs + j];
  }
  for (int t = 0; t < job.inner; ++t) {
    P bt[CB];
#pragma GCC unroll 16
    for (int j = 0; j < CB; ++j) {
      bt[j] = b[t * job.b.rs + j * bcs];
      in_register<L>(bt[j]);
    }
#pragma GCC unroll 16
    for (int i = 0; i < RB; ++i) {
      P at = as_pack<L>(a.at(r + i, t));
      in_register<L>(at);
#pragma GCC unroll 16
      for (int j = 0; j < CB; ++j) acc[i][j] = fma<L>(at, bt[j], acc[i][j]);
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
template <CpuLevel L, int RB, int CB, bool Unit, class EA>
ATTN_INLINE void row_block(const Product<EA>& job, std::int64_t r) {
  int c = 0;
  for (; c + CB <= job.cols; c += CB) block<L, RB, CB, Unit>(job, r, c);
  if constexpr (CB > 4)
    if (c + 4 <= job.cols) {
      block<L, RB, 4, Unit>(job, r, c);
      c += 4;
    }
  if constexpr (CB > 2)
    if (c + 2 <= job.cols) {
      block<L, RB, 2, Unit>(job, r, c);
      c += 2;
    }
  if constexpr (CB > 1)
    if (c < job.cols) block<L, RB, 1, Unit>(job, r, c);
}

// Rows [r_begin, r_end) in blocks of Block<L>::rows, then 2, then 1.
template <CpuLevel L, int CB, bool Unit, class EA>
ATTN_INLINE void rows_of(const Product<EA>& job) {
  constexpr int RB = Block<L>::rows;
  int r = job.r_begin;
  for (; r + RB <= job.r_end; r += RB) {
    if ((*job.rows)()) return;
    row_block<L, RB, CB, Unit>(job, r);
  }
  if constexpr (RB > 2)
    if (r + 2 <= job.r_end) {
      if ((*job.rows)()) return;
      row_block<L, 2, CB, Unit>(job, r);
      r += 2;
    }
  for (; r < job.r_end; ++r) {
    if ((*job.rows)()) return;
    row_block<L, 1, CB, Unit>(job, r);
  }
}

// The block's width: Block<L>::cols, or narrow_cols on a result under twice that wide.
template <CpuLevel L, bool Unit, class EA>
ATTN_INLINE void blocked_rows(const Product<EA>& job) {
  if constexpr (Block<L>::cols != Block<L>::narrow_cols)
    if (job.cols < 2 * Block<L>::cols) return rows_of<L, Block<L>::narrow_cols, Unit>(job);
  rows_of<L, Block<L>::cols, Unit>(job);
}

template <CpuLevel L, class EA>
ATTN_INLINE void product_body(const Product<EA>& job) {
  if (job.b.cs == 1)
    blocked_rows<L, true>(job);
  else
    blocked_rows<L, false>(job);
}

// The products compiled once for each level, out of line: the training inlines everything
// else, and a copy of every product at each of its call sites would be a large function for
// no speed (a product is hundreds of cycles at the smallest sizes; a call is a few).
ATTN_CPU_LEVEL_OUT_OF_LINE_COPIES(void, product, (const Product<P>& job), (job))
ATTN_CPU_LEVEL_OUT_OF_LINE_COPIES(void, product, (const Product<double>& job), (job))

template <CpuLevel L, class EA>
ATTN_INLINE void product(const Product<EA>& job) {
  ATTN_CPU_LEVEL_PICK(L, product, (job))
}

// s > top ? s : top in every lane (pick_gt(s, top, s, top)).
template <CpuLevel L>
ATTN_INLINE P greater(P s, P top) {
  if constexpr (L == CpuLevel::v4)
    return s > top ? s : top;
  else
    return pick_gt(s, top, s, top);
}

// Packs a lane group's training needs after its workspace (layout(m).total packs): the chains
// of the gradients Σ_b X_bᵀ dZ_b (and Σ_b O_bᵀ dF_b), one matrix of each trained matrix's shape,
// laid out as the workspace's gradient array (gradient_at); then the inputs X as the products
// read them (inputs n d_model doubles: see as_pack).
inline std::int64_t scratch_size(const Model& m) {
  const std::int64_t x = static_cast<std::int64_t>(m.inputs) * m.n * m.d_model;
  return trained_weights(m) + (x + kPackLanes - 1) / kPackLanes;
}

// The matrix steps of head.hpp on one workspace of packs, with the layout and constants of one
// model, one input (or a run of inputs) at a time; each is named after the step of head.hpp it
// computes. A head's columns are a view into Q, K, V and O (its offset, the whole row's stride); a
// masked weight's score is computed by the product and then replaced by 0, as head.hpp leaves it.
//
// Where the work goes: with many inputs the arrays of a seed's forward pass (Q, K, V, P, O, F:
// B n rows each) are far larger than the work a step does on one input's rows. So a step runs
// as passes over the inputs, a few at a time (`chunk` inputs): each pass recomputes, for those
// inputs, what the last update changed (head.hpp's refresh) and then takes their part of the
// next gradient (backward_outputs, backward_scores, dQ, dK or dV), adding it to that gradient's
// chains (Σ_b X_bᵀ dZ_b continued from the inputs before, in the stacked rows' order: the same
// chain as head.hpp's, whatever the chunk). An input's forward arrays are read and written once
// a pass, and the backward arrays (dF, dO, dS, dQ, dK, dV) live in the first `chunk` inputs'
// places of theirs, so they stay in the first-level cache. A gradient is applied once its chain
// has run over every input, as head.hpp applies it; the refresh that follows runs in the next
// pass (the next matrix's gradient, or the next step's first one).
template <CpuLevel L>
struct Steps {
  const Model& m;
  Layout l;
  P* w;
  P* g;             // the gradients' chains: matrix `which` at gradient_at(which)
  const double* x;  // the inputs X, each value splat's 0 + x (see as_pack)
  const RowTest& rows;
  Finish by_scale;  // multiplying by c: store (c = 1), times (c exact) or over (√(d_k/H))
  double factor;    // the factor for by_scale
  int dk, dv;       // a head's widths: d_k / H, d_v / H
  std::int64_t nn;  // n²: a head's map
  bool fast_exp;    // exp_t's choice, made once
  int chunk;        // inputs a pass takes at once

  // What a pass recomputes before the gradient (`pending`) and which gradient it takes
  // (`grad`): a matrix 0 .. 3 (W_Q, W_K, W_V, W_O), kNone, or kAll (the whole forward pass;
  // every gradient).
  static constexpr int kNone = -1, kAll = 4;

  Steps(const Model& model, P* workspace, const RowTest& row_test)
      : m(model), l(layout(model)), w(workspace), g(workspace + l.total), rows(row_test) {
    double* inputs = reinterpret_cast<double*>(g + trained_weights(model));
    for (std::int64_t e = 0; e < static_cast<std::int64_t>(model.inputs) * model.n * model.d_model;
         ++e)
      inputs[e] = 0.0 + model.x[e];
    x = inputs;
    dk = model.key_width();
    dv = model.value_width();
    nn = static_cast<std::int64_t>(model.n) * model.n;
    if (model.scale == Scale::none) {
      by_scale = Finish::store;
      factor = 0;
    } else if (model.scale == Scale::factor) {
      by_scale = Finish::times;
      factor = model.scale_factor;
    } else {
      factor = scale_root(model);
      int e = 0;
      by_scale = std::frexp(factor, &e) == 0.5 ? Finish::times : Finish::over;
      if (by_scale == Finish::times) factor = 1.0 / factor;
    }
    fast_exp = exp_t_takes_exp_pack();
    // About 32 stacked rows a pass's products (the Xᵀ chains' inner length), at most B inputs.
    chunk = std::max(1, std::min(model.inputs, 32 / std::max(1, model.n)));
  }

  // x[j] ← exp_t(x[j] − top) for j < count; returns their sum, added from 0 in the order of j.
  ATTN_INLINE P exp_shifted(P* x, int count, const P& top) const {
    P sum;
    if (fast_exp) {
      if constexpr (L == CpuLevel::v4)
        exp_fma_detail::exp_shifted_v4(x, count, &top, &sum);
      else if constexpr (L == CpuLevel::v3)
        exp_fma_detail::exp_shifted_v3(x, count, &top, &sum);
      else
        exp_fma_detail::exp_shifted(x, count, &top, &sum);
      return sum;
    }
    sum = splat<P>(0.0);
    for (int j = 0; j < count; ++j) {
      x[j] = exp_t(x[j] - top);
      sum = sum + x[j];
    }
    return sum;
  }

  // Stacked row `row` of the array at `offset` whose rows are `width` wide.
  ATTN_INLINE P* at(std::int64_t offset, std::int64_t row, std::int64_t width) const {
    return w + offset + row * width;
  }
  // Head h's map of input b (P or dS).
  ATTN_INLINE P* map(std::int64_t offset, int b, int h) const {
    return w + map_at(m, offset, b, h);
  }
  // Input b's first stacked row.
  ATTN_INLINE std::int64_t row0(int b) const { return static_cast<std::int64_t>(b) * m.n; }

  // project: out = X W on rows [r_begin, n) of inputs [b0, b1); W at wo (d_model, cols), out at
  // oo (inputs n, cols). From row 0 the inputs' rows are one block of stacked rows.
  ATTN_INLINE void project(int b0, int b1, std::int64_t wo, std::int64_t oo, int cols,
                           int r_begin) const {
    if (r_begin == 0) {
      product<L>(Product<double>{static_cast<int>(row0(b0)),
                                 static_cast<int>(row0(b1)),
                                 cols,
                                 m.d_model,
                                 {x, m.d_model, 1},
                                 {w + wo, cols, 1},
                                 w + oo,
                                 cols,
                                 Finish::store,
                                 0,
                                 &rows});
      return;
    }
    for (int b = b0; b < b1; ++b)
      product<L>(Product<double>{r_begin,
                                 m.n,
                                 cols,
                                 m.d_model,
                                 {x + row0(b) * m.d_model, m.d_model, 1},
                                 {w + wo, cols, 1},
                                 at(oo, row0(b), cols),
                                 cols,
                                 Finish::store,
                                 0,
                                 &rows});
  }

  // scores_softmax of input b (a frozen map: head.hpp's frozen_maps_of).
  ATTN_INLINE void scores_softmax(int b) const {
    if (m.frozen()) {
      frozen_maps_of<P>(m, l, w, b);
      return;
    }
    const int n = m.n;
    for (int h = 0; h < m.heads; ++h) {
      P* p = map(l.p, b, h);
      product<L>(Product<P>{m.r0,
                            n,
                            n,
                            dk,
                            {at(l.q, row0(b), m.d_k) + h * dk, m.d_k, 1},
                            {at(l.k, row0(b), m.d_k) + h * dk, 1, m.d_k},
                            p,
                            n,
                            by_scale,
                            factor,
                            &rows});
      for (int i = m.r0; i < n; ++i) {
        if (rows()) return;
        P* row = p + static_cast<std::int64_t>(i) * n;
        const int last = m.last_key(i);
        P top = row[0];
        for (int j = 1; j <= last; ++j) top = greater<L>(row[j], top);
        const P sum = exp_shifted(row, last + 1, top);
        for (int j = 0; j <= last; ++j) row[j] = row[j] / sum;
        for (int j = last + 1; j < n; ++j) row[j] = splat<P>(0.0);
      }
    }
  }

  // outputs of input b into the rows of input o of O and F (o = b, or a place in the first
  // `chunk` inputs': see pass): O = concat_h(P_h V_h) on the rows of R, then F = O W_O (qkvo).
  ATTN_INLINE void outputs(int b, int o) const {
    for (int h = 0; h < m.heads; ++h)
      product<L>(Product<P>{m.r0,
                            m.n,
                            dv,
                            m.n,
                            {map(l.p, b, h), m.n, 1},
                            {at(l.v, row0(b), m.d_v) + h * dv, m.d_v, 1},
                            at(l.o, row0(o), m.d_v) + h * dv,
                            m.d_v,
                            Finish::store,
                            0,
                            &rows});
    if (m.train_output) final_outputs(o);
  }

  // F = O W_O on the rows of input o.
  ATTN_INLINE void final_outputs(int o) const {
    product<L>(Product<P>{m.r0,
                          m.n,
                          m.d_model,
                          m.d_v,
                          {at(l.o, row0(o), m.d_v), m.d_v, 1},
                          {w + l.wo, m.d_model, 1},
                          at(l.f, row0(o), m.d_model),
                          m.d_model,
                          Finish::store,
                          0,
                          &rows});
  }

  // backward_outputs of input b (its F in the rows of input o) into place s of the backward
  // arrays: dF = (2/B) (F − Y), then dO = dF W_Oᵀ (qkvo).
  ATTN_INLINE void backward_outputs(int b, int o, int s) const {
    const int d = m.d_out();
    const double two = output_gradient_factor(m);
    P* d_f = at(l.d_f, row0(s), d);
    const P* f = at(l.f, row0(o), d);
    const double* y = m.y + row0(b) * d;
    for (std::int64_t e = static_cast<std::int64_t>(m.r0) * d;
         e < static_cast<std::int64_t>(m.n) * d; ++e)
      d_f[e] = two * (f[e] - y[e]);
    if (m.train_output)
      product<L>(Product<P>{m.r0,
                            m.n,
                            m.d_v,
                            m.d_model,
                            {d_f, m.d_model, 1},
                            {w + l.wo, 1, m.d_model},
                            at(l.d_o, row0(s), m.d_v),
                            m.d_v,
                            Finish::store,
                            0,
                            &rows});
  }

  // backward_scores of input b (place s): per head dP_h = dO_h V_hᵀ, then dS_h in place of dP_h.
  ATTN_INLINE void backward_scores(int b, int s) const {
    const int n = m.n;
    for (int h = 0; h < m.heads; ++h) {
      P* d_p = map(l.d_p, s, h);
      product<L>(Product<P>{m.r0,
                            n,
                            n,
                            dv,
                            {at(l.d_o, row0(s), m.d_v) + h * dv, m.d_v, 1},
                            {at(l.v, row0(b), m.d_v) + h * dv, 1, m.d_v},
                            d_p,
                            n,
                            Finish::store,
                            0,
                            &rows});
      const P* p = map(l.p, b, h);
      for (int i = m.r0; i < n; ++i) {
        if (rows()) return;
        P* ds = d_p + static_cast<std::int64_t>(i) * n;
        const P* pi = p + static_cast<std::int64_t>(i) * n;
        const int last = m.last_key(i);
        P dot = splat<P>(0.0);
        for (int j = 0; j <= last; ++j) dot = fma<L>(ds[j], pi[j], dot);
        for (int j = 0; j <= last; ++j) ds[j] = pi[j] * (ds[j] - dot);
        for (int j = last + 1; j < n; ++j) ds[j] = splat<P>(0.0);
      }
    }
  }

  // grad_queries of input b (place s): dQ_h = dS_h K_h c.
  ATTN_INLINE void grad_queries(int b, int s) const {
    for (int h = 0; h < m.heads; ++h)
      product<L>(Product<P>{m.r0,
                            m.n,
                            dk,
                            m.n,
                            {map(l.d_p, s, h), m.n, 1},
                            {at(l.k, row0(b), m.d_k) + h * dk, m.d_k, 1},
                            at(l.dq, row0(s), m.d_k) + h * dk,
                            m.d_k,
                            by_scale,
                            factor,
                            &rows});
  }

  // grad_keys of input b (place s): dK_h = dS_hᵀ Q_h c; the sums run over the rows of R.
  ATTN_INLINE void grad_keys(int b, int s) const {
    for (int h = 0; h < m.heads; ++h)
      product<L>(Product<P>{0,
                            m.n,
                            dk,
                            m.n - m.r0,
                            {map(l.d_p, s, h) + static_cast<std::int64_t>(m.r0) * m.n, 1, m.n},
                            {at(l.q, row0(b) + m.r0, m.d_k) + h * dk, m.d_k, 1},
                            at(l.dk, row0(s), m.d_k) + h * dk,
                            m.d_k,
                            by_scale,
                            factor,
                            &rows});
  }

  // grad_values of input b (place s): dV_h = P_hᵀ dO_h; the sums run over the rows of R.
  ATTN_INLINE void grad_values(int b, int s) const {
    for (int h = 0; h < m.heads; ++h)
      product<L>(Product<P>{0,
                            m.n,
                            dv,
                            m.n - m.r0,
                            {map(l.p, b, h) + static_cast<std::int64_t>(m.r0) * m.n, 1, m.n},
                            {at(l.d_o, row0(s) + m.r0, m.d_v) + h * dv, m.d_v, 1},
                            at(l.dv, row0(s), m.d_v) + h * dv,
                            m.d_v,
                            Finish::store,
                            0,
                            &rows});
  }

  // The chain of matrix `which`'s gradient continued over inputs [b0, b1) (their backward
  // arrays in places 0 .. b1 − b0): Σ_b A_bᵀ Z_b over the rows [r_begin, n) of each input, A =
  // X and Z = dQ, dK or dV (W_Q, W_K, W_V), or A = O and Z = dF (W_O). From input 0 the chain
  // starts at 0. From row 0 the inputs' rows are one run of the chain's inner index.
  // a0: the input whose rows of A hold input b0's (b0, or 0 for O in the backward arrays'
  // places), the next inputs' following.
  template <class EA>
  ATTN_INLINE void chain(const EA* a, int a_width, int a0, std::int64_t z, int cols, int rows_out,
                         int r_begin, P* out, int b0, int b1) const {
    if (r_begin == 0) {
      product<L>(Product<EA>{0,
                             rows_out,
                             cols,
                             (b1 - b0) * m.n,
                             {a + row0(a0) * a_width, 1, a_width},
                             {at(z, 0, cols), cols, 1},
                             out,
                             cols,
                             Finish::store,
                             0,
                             &rows,
                             b0 == 0 ? nullptr : out});
      return;
    }
    for (int b = b0; b < b1; ++b)
      product<L>(Product<EA>{0,
                             rows_out,
                             cols,
                             m.n - r_begin,
                             {a + (row0(a0 + b - b0) + r_begin) * a_width, 1, a_width},
                             {at(z, row0(b - b0) + r_begin, cols), cols, 1},
                             out,
                             cols,
                             Finish::store,
                             0,
                             &rows,
                             b == 0 ? nullptr : out});
  }
  // o0: the input whose rows of O hold input b0's.
  ATTN_INLINE void chain_of(int which, int b0, int b1, int o0) const {
    P* out = g + gradient_at(m, which);
    if (which == 0) chain(x, m.d_model, b0, l.dq, m.d_k, m.d_model, m.r0, out, b0, b1);
    if (which == 1) chain(x, m.d_model, b0, l.dk, m.d_k, m.d_model, 0, out, b0, b1);
    if (which == 2) chain(x, m.d_model, b0, l.dv, m.d_v, m.d_model, 0, out, b0, b1);
    if (which == 3)
      chain(static_cast<const P*>(w + l.o), m.d_v, o0, l.d_f, m.d_model, m.d_v, m.r0, out, b0, b1);
  }

  // One pass over the inputs: for each, the forward pass after an update of matrix `pending`
  // (head.hpp's refresh; kAll: the whole forward pass; kNone: nothing), then its part of the
  // gradient of matrix `grad` (kAll: of every trained matrix; kNone: none) added to the chains.
  // O and F are read in the pass that computes them, but for the first pass (pending kNone,
  // from the forward pass at the start) and the last (grad kNone, the final forward pass that
  // the result reads): those keep every input's rows, the others use the first `chunk` inputs'
  // rows as places, as the backward arrays do.
  ATTN_INLINE void pass(int pending, int grad) const {
    const int first = m.first_trained(), trained = m.trained();
    const bool maps = !m.frozen();  // kAll takes W_Q's and W_K's gradients too
    const bool keep = pending == kNone || grad == kNone;
    for (int b0 = 0; b0 < m.inputs; b0 += chunk) {
      const int b1 = std::min(m.inputs, b0 + chunk), o0 = keep ? b0 : 0;
      if (pending == 0 || pending == kAll) project(b0, b1, l.wq, l.q, m.d_k, m.r0);
      if (pending == 1 || pending == kAll) project(b0, b1, l.wk, l.k, m.d_k, 0);
      if (pending == 2 || pending == kAll) project(b0, b1, l.wv, l.v, m.d_v, 0);
      for (int b = b0; b < b1; ++b) {
        const int s = b - b0, o = o0 + s;
        // After W_O's update O is unchanged, but not kept: it is computed again (the same
        // bits), then F.
        if (pending != kNone) {
          if (pending < 2 || pending == kAll) scores_softmax(b);
          outputs(b, o);
        }
        if (grad == kNone) continue;
        backward_outputs(b, o, s);
        if (grad < 2 || (grad == kAll && maps)) backward_scores(b, s);
        if (grad == 0 || (grad == kAll && maps)) grad_queries(b, s);
        if (grad == 1 || (grad == kAll && maps)) grad_keys(b, s);
        if (grad == 2 || (grad == kAll && trained > 2)) grad_values(b, s);
      }
      if (grad == kAll)
        for (int which = first; which < trained; ++which) chain_of(which, b0, b1, o0);
      else if (grad != kNone)
        chain_of(grad, b0, b1, o0);
    }
  }

  // The gradient of matrix `which`, its chain complete, applied (SGD or Adam, head.hpp's).
  ATTN_INLINE void apply(int which) const {
    head::apply_gradient<P>(m, l, w, which, l.total + gradient_at(m, which));
  }
};

// head.hpp's train(m, w, stop, rows) for a workspace of packs at level L (layout(m).total
// packs, then scratch_size(m)): the same arithmetic (see there), the analytic gradient in passes
// over the inputs on the blocked products above, the numeric gradient on head.hpp's own loops.
template <CpuLevel L, class Stop>
ATTN_INLINE void train(const Model& m, P* w, Stop& stop, const RowTest& rows) {
  if (m.grad == Grad::numeric) {
    head::train<P>(m, w, stop, rows);
    return;
  }
  using S = Steps<L>;
  const S s(m, w, rows);
  const int first = m.first_trained(), trained = m.trained();
  s.pass(S::kAll, S::kNone);
  start_state<P>(m, s.l, w);
  int pending = S::kNone;  // the matrix updated last, its forward pass not yet recomputed
  for (int step = 0; step < m.steps; ++step) {
    if (stop()) return;
    advance_powers<P>(m, s.l, w);
    if (m.schedule == Schedule::sequential) {
      for (int which = first; which < trained; ++which) {
        s.pass(pending, which);
        s.apply(which);
        pending = which;
      }
    } else {
      s.pass(pending, S::kAll);
      for (int which = first; which < trained; ++which) s.apply(which);
      pending = m.frozen() ? 2 : S::kAll;  // a frozen map: only W_V and W_O changed
    }
  }
  if (pending != S::kNone) s.pass(pending, S::kNone);
}

}  // namespace attn::head::pack
