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

#include <cmath>
#include <cstdint>

#include "cpu_clones.hpp"
#include "head.hpp"
#include "lanes.hpp"
#include "simd.hpp"

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
ATTN_INLINE P as_pack(P a) { return a; }
ATTN_INLINE P as_pack(double a) { return splat<P>(a); }

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
    for (int j = 0; j < CB; ++j) bt[j] = b[t * job.b.rs + j * bcs];
#pragma GCC unroll 16
    for (int i = 0; i < RB; ++i) {
      const P at = as_pack(a.at(r + i, t));
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

template <CpuLevel L, bool Unit, class EA>
ATTN_INLINE void rows_of(const Product<EA>& job) {
  constexpr int RB = Block<L>::rows, CB = Block<L>::cols;
  int r = job.r_begin;
  for (; r + RB <= job.r_end; r += RB) {
    if ((*job.rows)()) return;
    row_block<L, RB, CB, Unit>(job, r);
  }
  for (; r < job.r_end; ++r) {
    if ((*job.rows)()) return;
    row_block<L, 1, CB, Unit>(job, r);
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
// model; each is named after the step of head.hpp it computes, and runs over the inputs in
// order. A head's columns are a view into Q, K, V and O (its offset, the whole row's stride); a
// masked weight's score is computed by the product and then replaced by 0, as head.hpp leaves it.
template <CpuLevel L>
struct Steps {
  const Model& m;
  Layout l;
  P* w;
  const RowTest& rows;
  Finish by_scale;  // multiplying by c: store (c = 1), times (c exact) or over (√(d_k/H))
  double factor;    // the factor for by_scale
  int dk, dv;       // a head's widths: d_k / H, d_v / H
  std::int64_t nn;  // n²: a head's map
  bool fast_exp;    // exp_t's choice, made once

  Steps(const Model& model, P* workspace, const RowTest& row_test)
      : m(model), l(layout(model)), w(workspace), rows(row_test) {
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

  // SGD folds the step into the product (W ← W − lr acc); Adam stores the gradient at `go`.
  ATTN_INLINE bool adam() const { return m.optimizer == Optimizer::adam; }

  // project: out = X W on rows [r_begin, n) of every input; W at wo (d_model, cols), out at oo
  // (inputs n, cols). From row 0 the inputs' rows are one block of stacked rows.
  ATTN_INLINE void project(std::int64_t wo, std::int64_t oo, int cols, int r_begin) const {
    const int parts = r_begin == 0 ? 1 : m.inputs;
    const int last = r_begin == 0 ? m.inputs * m.n : m.n;
    for (int b = 0; b < parts; ++b)
      product<L>(Product<double>{r_begin,
                                 last,
                                 cols,
                                 m.d_model,
                                 {m.x + row0(b) * m.d_model, m.d_model, 1},
                                 {w + wo, cols, 1},
                                 at(oo, row0(b), cols),
                                 cols,
                                 Finish::store,
                                 0,
                                 &rows});
  }

  // scores_softmax.
  ATTN_INLINE void scores_softmax() const {
    const int n = m.n;
    for (int b = 0; b < m.inputs; ++b)
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
          P sum = splat<P>(0.0);
          for (int j = 0; j <= last; ++j) {
            const P e = exp(row[j] - top);
            row[j] = e;
            sum = sum + e;
          }
          for (int j = 0; j <= last; ++j) row[j] = row[j] / sum;
          for (int j = last + 1; j < n; ++j) row[j] = splat<P>(0.0);
        }
      }
  }

  // outputs: O = concat_h(P_h V_h) on the rows of R, then F = O W_O (qkvo).
  ATTN_INLINE void outputs() const {
    for (int b = 0; b < m.inputs; ++b)
      for (int h = 0; h < m.heads; ++h)
        product<L>(Product<P>{m.r0,
                              m.n,
                              dv,
                              m.n,
                              {map(l.p, b, h), m.n, 1},
                              {at(l.v, row0(b), m.d_v) + h * dv, m.d_v, 1},
                              at(l.o, row0(b), m.d_v) + h * dv,
                              m.d_v,
                              Finish::store,
                              0,
                              &rows});
    if (m.train_output) final_outputs();
  }

  ATTN_INLINE void final_outputs() const {
    for (int b = 0; b < m.inputs; ++b)
      product<L>(Product<P>{m.r0,
                            m.n,
                            m.d_model,
                            m.d_v,
                            {at(l.o, row0(b), m.d_v), m.d_v, 1},
                            {w + l.wo, m.d_model, 1},
                            at(l.f, row0(b), m.d_model),
                            m.d_model,
                            Finish::store,
                            0,
                            &rows});
  }

  // backward_outputs: dF = (2/B) (F − Y), then dO = dF W_Oᵀ (qkvo).
  ATTN_INLINE void backward_outputs() const {
    const int d = m.d_out();
    const double two = output_gradient_factor(m);
    for (int b = 0; b < m.inputs; ++b) {
      P* d_f = at(l.d_f, row0(b), d);
      const P* f = at(l.f, row0(b), d);
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
                              at(l.d_o, row0(b), m.d_v),
                              m.d_v,
                              Finish::store,
                              0,
                              &rows});
    }
  }

  // backward_scores: per input and head dP_h = dO_h V_hᵀ, then dS_h in place of dP_h.
  ATTN_INLINE void backward_scores() const {
    const int n = m.n;
    for (int b = 0; b < m.inputs; ++b)
      for (int h = 0; h < m.heads; ++h) {
        P* d_p = map(l.d_p, b, h);
        product<L>(Product<P>{m.r0,
                              n,
                              n,
                              dv,
                              {at(l.d_o, row0(b), m.d_v) + h * dv, m.d_v, 1},
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

  // grad_queries: dQ_h = dS_h K_h c.
  ATTN_INLINE void grad_queries() const {
    for (int b = 0; b < m.inputs; ++b)
      for (int h = 0; h < m.heads; ++h)
        product<L>(Product<P>{m.r0,
                              m.n,
                              dk,
                              m.n,
                              {map(l.d_p, b, h), m.n, 1},
                              {at(l.k, row0(b), m.d_k) + h * dk, m.d_k, 1},
                              at(l.dq, row0(b), m.d_k) + h * dk,
                              m.d_k,
                              by_scale,
                              factor,
                              &rows});
  }

  // grad_keys: dK_h = dS_hᵀ Q_h c; the sums run over the rows of R.
  ATTN_INLINE void grad_keys() const {
    for (int b = 0; b < m.inputs; ++b)
      for (int h = 0; h < m.heads; ++h)
        product<L>(Product<P>{0,
                              m.n,
                              dk,
                              m.n - m.r0,
                              {map(l.d_p, b, h) + static_cast<std::int64_t>(m.r0) * m.n, 1, m.n},
                              {at(l.q, row0(b) + m.r0, m.d_k) + h * dk, m.d_k, 1},
                              at(l.dk, row0(b), m.d_k) + h * dk,
                              m.d_k,
                              by_scale,
                              factor,
                              &rows});
  }

  // grad_values: dV_h = P_hᵀ dO_h; the sums run over the rows of R.
  ATTN_INLINE void grad_values() const {
    for (int b = 0; b < m.inputs; ++b)
      for (int h = 0; h < m.heads; ++h)
        product<L>(Product<P>{0,
                              m.n,
                              dv,
                              m.n - m.r0,
                              {map(l.p, b, h) + static_cast<std::int64_t>(m.r0) * m.n, 1, m.n},
                              {at(l.d_o, row0(b) + m.r0, m.d_v) + h * dv, m.d_v, 1},
                              at(l.dv, row0(b), m.d_v) + h * dv,
                              m.d_v,
                              Finish::store,
                              0,
                              &rows});
  }

  // An Xᵀ or Oᵀ product Σ_b A_bᵀ Z_b over the rows [r_begin, n) of every input (A at a_at with
  // rows a_width wide, double for X, packs for O; Z at z_at, `cols` wide), into the `rows_out` ×
  // cols matrix at `out` with the finish `finish`. From row 0 the stacked rows are one chain's
  // inner index; else one product per input, the chain carried through `partial` (rows_out ×
  // cols packs: the matrix's own gradient array).
  template <class EA>
  ATTN_INLINE void stacked(const EA* a_at, int a_width, std::int64_t z_at, int cols, int rows_out,
                           int r_begin, P* out, Finish finish, P* partial) const {
    if (r_begin == 0 || m.inputs == 1) {
      product<L>(Product<EA>{0,
                             rows_out,
                             cols,
                             (m.inputs - 1) * m.n + m.n - r_begin,
                             {a_at + static_cast<std::int64_t>(r_begin) * a_width, 1, a_width},
                             {at(z_at, r_begin, cols), cols, 1},
                             out,
                             cols,
                             finish,
                             m.lr,
                             &rows});
      return;
    }
    for (int b = 0; b < m.inputs; ++b) {
      const bool last = b + 1 == m.inputs;
      const std::int64_t first = row0(b) + r_begin;
      product<L>(Product<EA>{0,
                             rows_out,
                             cols,
                             m.n - r_begin,
                             {a_at + first * a_width, 1, a_width},
                             {at(z_at, first, cols), cols, 1},
                             last ? out : partial,
                             cols,
                             last ? finish : Finish::store,
                             m.lr,
                             &rows,
                             b == 0 ? nullptr : partial});
    }
  }

  // descend: the gradient Σ_b X_bᵀ dZ_b over rows [r_begin, n) of W at wo (d_model, cols), dZ
  // at dz: W ← W − lr G (SGD) or G to the gradient array at go (Adam).
  ATTN_INLINE void descend(std::int64_t wo, std::int64_t dz, int cols, int r_begin,
                           std::int64_t go) const {
    stacked(m.x, m.d_model, dz, cols, m.d_model, r_begin, adam() ? w + go : w + wo,
            adam() ? Finish::store : Finish::descend, w + go);
  }

  // descend_output: dW_O = Σ_b O_bᵀ dF_b over the rows of R, taken as descend takes its
  // gradient.
  ATTN_INLINE void descend_output(std::int64_t go) const {
    stacked(static_cast<const P*>(w + l.o), m.d_v, l.d_f, m.d_model, m.d_v, m.r0,
            adam() ? w + go : w + l.wo, adam() ? Finish::store : Finish::descend, w + go);
  }

  ATTN_INLINE void forward() const {
    project(l.wq, l.q, m.d_k, m.r0);
    project(l.wk, l.k, m.d_k, 0);
    project(l.wv, l.v, m.d_v, 0);
    scores_softmax();
    outputs();
  }

  ATTN_INLINE std::int64_t gradient(int which) const { return l.g + gradient_at(m, which); }

  // descend_of: the gradient of matrix `which`, taken.
  ATTN_INLINE void descend_of(int which) const {
    if (which == 0) {
      grad_queries();
      descend(l.wq, l.dq, m.d_k, m.r0, gradient(0));
    }
    if (which == 1) {
      grad_keys();
      descend(l.wk, l.dk, m.d_k, 0, gradient(1));
    }
    if (which == 2) {
      grad_values();
      descend(l.wv, l.dv, m.d_v, 0, gradient(2));
    }
    if (which == 3) descend_output(gradient(3));
  }

  // refresh: what follows an update of matrix `which`.
  ATTN_INLINE void refresh(int which) const {
    if (which == 0) project(l.wq, l.q, m.d_k, m.r0);
    if (which == 1) project(l.wk, l.k, m.d_k, 0);
    if (which == 2) project(l.wv, l.v, m.d_v, 0);
    if (which < 2) scores_softmax();
    if (which < 3)
      outputs();
    else
      final_outputs();
  }

  ATTN_INLINE void apply_adam(int which) const {
    head::apply_gradient<P>(m, l, w, which, gradient(which));
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
  const int trained = m.trained();
  s.forward();
  start_state<P>(m, s.l, w);
  for (int step = 0; step < m.steps; ++step) {
    if (stop()) return;
    advance_powers<P>(m, s.l, w);
    if (m.schedule == Schedule::sequential) {
      for (int which = 0; which < trained; ++which) {
        s.backward_outputs();
        if (which < 2) s.backward_scores();
        s.descend_of(which);
        if (s.adam()) s.apply_adam(which);
        s.refresh(which);
      }
    } else {
      s.backward_outputs();
      s.backward_scores();
      s.grad_queries();
      s.grad_keys();
      if (trained > 2) s.grad_values();
      if (trained > 3) s.descend_output(s.gradient(3));
      s.descend(s.l.wq, s.l.dq, m.d_k, m.r0, s.gradient(0));
      s.descend(s.l.wk, s.l.dk, m.d_k, 0, s.gradient(1));
      if (trained > 2) s.descend(s.l.wv, s.l.dv, m.d_v, 0, s.gradient(2));
      if (s.adam())
        for (int which = 0; which < trained; ++which) s.apply_adam(which);
      s.forward();
    }
  }
}

}  // namespace attn::head::pack
