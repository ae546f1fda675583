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

// fin(r, c, Σ_t a(r, t) b(t, c)) for the RB × CB elements from (r, c): each sum is the chain
// 0 + a_0 b_0 + a_1 b_1 + ... in order, as head.hpp writes it.
template <int RB, int CB, class EA, class Fin>
ATTN_INLINE void block(std::int64_t r, std::int64_t c, int inner, View<EA> a, View<P> b, Fin& fin) {
  P acc[RB][CB];
#pragma GCC unroll 16
  for (int i = 0; i < RB; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < CB; ++j) acc[i][j] = splat<P>(0.0);
  for (int t = 0; t < inner; ++t) {
    P bt[CB];
#pragma GCC unroll 16
    for (int j = 0; j < CB; ++j) bt[j] = b.at(t, c + j);
#pragma GCC unroll 16
    for (int i = 0; i < RB; ++i) {
      const EA at = a.at(r + i, t);
#pragma GCC unroll 16
      for (int j = 0; j < CB; ++j) acc[i][j] = acc[i][j] + at * bt[j];
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < RB; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < CB; ++j) fin(r + i, c + j, acc[i][j]);
}

// Columns [0, cols) of RB rows from r: blocks of CB columns, then 4, 2, 1 for the rest.
template <int RB, int CB, class EA, class Fin>
ATTN_INLINE void row_block(std::int64_t r, int cols, int inner, View<EA> a, View<P> b, Fin& fin) {
  int c = 0;
  for (; c + CB <= cols; c += CB) block<RB, CB>(r, c, inner, a, b, fin);
  if constexpr (CB > 4)
    if (c + 4 <= cols) {
      block<RB, 4>(r, c, inner, a, b, fin);
      c += 4;
    }
  if constexpr (CB > 2)
    if (c + 2 <= cols) {
      block<RB, 2>(r, c, inner, a, b, fin);
      c += 2;
    }
  if constexpr (CB > 1)
    if (c < cols) block<RB, 1>(r, c, inner, a, b, fin);
}

// fin(r, c, Σ_{t < inner} a(r, t) b(t, c)) for rows [r_begin, r_end) and columns [0, cols), in
// blocks of Block<L>. rows() is asked before each block of rows; once it says true the product
// stops there (head.hpp's Stop contract).
template <CpuLevel L, class EA, class Fin, class Rows>
ATTN_INLINE void product(int r_begin, int r_end, int cols, int inner, View<EA> a, View<P> b,
                         Fin fin, Rows& rows) {
  constexpr int RB = Block<L>::rows, CB = Block<L>::cols;
  int r = r_begin;
  for (; r + RB <= r_end; r += RB) {
    if (rows()) return;
    row_block<RB, CB>(r, cols, inner, a, b, fin);
  }
  for (; r < r_end; ++r) {
    if (rows()) return;
    row_block<1, CB>(r, cols, inner, a, b, fin);
  }
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
// model; each says which step of head.hpp it computes.
template <CpuLevel L>
struct Steps {
  const Model& m;
  Layout l;
  P* w;
  double root;      // √d_k
  double inv_root;  // 1/√d_k, exact when root_is_pow2
  bool root_is_pow2;
  bool fast_exp;  // exp_t's choice, made once

  Steps(const Model& model, P* workspace)
      : m(model), l(layout(model)), w(workspace), root(std::sqrt(static_cast<double>(model.d_k))) {
    int e = 0;
    root_is_pow2 = std::frexp(root, &e) == 0.5;
    inv_root = 1.0 / root;
    fast_exp = exp_t_takes_exp_pack();
  }

  ATTN_INLINE P over_root(P x) const { return root_is_pow2 ? x * inv_root : x / root; }

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

  // project: out = X W on rows [r_begin, n).
  template <class Rows>
  ATTN_INLINE void project(std::int64_t wo, std::int64_t oo, int cols, int r_begin, Rows& rows) {
    P* out = w + oo;
    auto fin = [out, cols](std::int64_t i, std::int64_t c, P acc) { out[i * cols + c] = acc; };
    product<L>(r_begin, m.n, cols, m.d_model, View<double>{m.x, m.d_model, 1},
               View<P>{w + wo, cols, 1}, fin, rows);
  }

  // scores_softmax.
  template <class Rows>
  ATTN_INLINE void scores_softmax(Rows& rows) {
    const int n = m.n;
    P* p = w + l.p;
    auto fin = [this, p, n](std::int64_t i, std::int64_t j, P acc) {
      p[i * n + j] = over_root(acc);
    };
    product<L>(m.r0, n, n, m.d_k, View<P>{w + l.q, m.d_k, 1}, View<P>{w + l.k, 1, m.d_k}, fin,
               rows);
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
  template <class Rows>
  ATTN_INLINE void outputs(Rows& rows) {
    P* o = w + l.o;
    const int dv = m.d_v;
    auto fin = [o, dv](std::int64_t i, std::int64_t c, P acc) { o[i * dv + c] = acc; };
    product<L>(m.r0, m.n, dv, m.n, View<P>{w + l.p, m.n, 1}, View<P>{w + l.v, dv, 1}, fin, rows);
  }

  // backward_scores: dO, dP = dO Vᵀ, dS in place of dP.
  template <class Rows>
  ATTN_INLINE void backward_scores(Rows& rows) {
    const int n = m.n, dv = m.d_v;
    P* d_o = w + l.d_o;
    const P* o = w + l.o;
    for (std::int64_t e = static_cast<std::int64_t>(m.r0) * dv;
         e < static_cast<std::int64_t>(n) * dv; ++e)
      d_o[e] = 2.0 * (o[e] - m.y[e]);
    P* d_p = w + l.d_p;
    auto fin = [d_p, n](std::int64_t i, std::int64_t j, P acc) { d_p[i * n + j] = acc; };
    product<L>(m.r0, n, n, dv, View<P>{d_o, dv, 1}, View<P>{w + l.v, 1, dv}, fin, rows);
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
  template <class Rows>
  ATTN_INLINE void grad_queries(Rows& rows) {
    P* dq = w + l.dq;
    const int dk = m.d_k;
    auto fin = [this, dq, dk](std::int64_t i, std::int64_t c, P acc) {
      dq[i * dk + c] = over_root(acc);
    };
    product<L>(m.r0, m.n, dk, m.n, View<P>{w + l.d_p, m.n, 1}, View<P>{w + l.k, dk, 1}, fin, rows);
  }

  // grad_keys: dK = dSᵀ Q / √d_k; the sums run over the rows of R.
  template <class Rows>
  ATTN_INLINE void grad_keys(Rows& rows) {
    P* dkk = w + l.dk;
    const int dk = m.d_k, r0 = m.r0;
    auto fin = [this, dkk, dk](std::int64_t j, std::int64_t c, P acc) {
      dkk[j * dk + c] = over_root(acc);
    };
    product<L>(0, m.n, dk, m.n - r0,
               View<P>{w + l.d_p + static_cast<std::int64_t>(r0) * m.n, 1, m.n},
               View<P>{w + l.q + static_cast<std::int64_t>(r0) * dk, dk, 1}, fin, rows);
  }

  // grad_values: dV = Pᵀ dO; the sums run over the rows of R.
  template <class Rows>
  ATTN_INLINE void grad_values(Rows& rows) {
    P* dvv = w + l.dv;
    const int dv = m.d_v, r0 = m.r0;
    auto fin = [dvv, dv](std::int64_t j, std::int64_t c, P acc) { dvv[j * dv + c] = acc; };
    product<L>(0, m.n, dv, m.n - r0, View<P>{w + l.p + static_cast<std::int64_t>(r0) * m.n, 1, m.n},
               View<P>{w + l.d_o + static_cast<std::int64_t>(r0) * dv, dv, 1}, fin, rows);
  }

  // descend: W ← W − lr Xᵀ dZ over rows [r_begin, n).
  template <class Rows>
  ATTN_INLINE void descend(std::int64_t wo, std::int64_t go, int cols, int r_begin, Rows& rows) {
    P* wt = w + wo;
    const double lr = m.lr;
    auto fin = [wt, cols, lr](std::int64_t k, std::int64_t c, P acc) {
      wt[k * cols + c] = wt[k * cols + c] - lr * acc;
    };
    product<L>(0, m.d_model, cols, m.n - r_begin,
               View<double>{m.x + static_cast<std::int64_t>(r_begin) * m.d_model, 1, m.d_model},
               View<P>{w + go + static_cast<std::int64_t>(r_begin) * cols, cols, 1}, fin, rows);
  }

  template <class Rows>
  ATTN_INLINE void forward(Rows& rows) {
    project(l.wq, l.q, m.d_k, m.r0, rows);
    project(l.wk, l.k, m.d_k, 0, rows);
    project(l.wv, l.v, m.d_v, 0, rows);
    scores_softmax(rows);
    outputs(rows);
  }

  template <class Rows>
  ATTN_INLINE void grad_of(int which, Rows& rows) {
    if (which == 0) grad_queries(rows);
    if (which == 1) grad_keys(rows);
    if (which == 2) grad_values(rows);
  }

  template <class Rows>
  ATTN_INLINE void descend_of(int which, Rows& rows) {
    if (which == 0) descend(l.wq, l.dq, m.d_k, m.r0, rows);
    if (which == 1) descend(l.wk, l.dk, m.d_k, 0, rows);
    if (which == 2) descend(l.wv, l.dv, m.d_v, 0, rows);
  }
};

// head.hpp's train(m, w, stop, rows) for a workspace of packs at level L: the same steps in the
// same order (see there), the analytic gradient on the blocked products above, the numeric
// gradient on head.hpp's own loops.
template <CpuLevel L, class Stop, class Rows>
ATTN_INLINE void train(const Model& m, P* w, Stop& stop, Rows& rows) {
  if (m.grad == Grad::numeric) {
    head::train<P>(m, w, stop, rows);
    return;
  }
  Steps<L> s(m, w);
  const int trained = m.train_values ? 3 : 2;
  s.forward(rows);
  for (int step = 0; step < m.steps; ++step) {
    if (stop()) return;
    if (m.schedule == Schedule::sequential) {
      for (int which = 0; which < trained; ++which) {
        s.backward_scores(rows);
        s.grad_of(which, rows);
        s.descend_of(which, rows);
        if (which == 0) s.project(s.l.wq, s.l.q, m.d_k, m.r0, rows);
        if (which == 1) s.project(s.l.wk, s.l.k, m.d_k, 0, rows);
        if (which == 2) s.project(s.l.wv, s.l.v, m.d_v, 0, rows);
        if (which < 2) s.scores_softmax(rows);
        s.outputs(rows);
      }
    } else {
      s.backward_scores(rows);
      for (int which = 0; which < trained; ++which) s.grad_of(which, rows);
      for (int which = 0; which < trained; ++which) s.descend_of(which, rows);
      s.forward(rows);
    }
  }
}

}  // namespace attn::head::pack
