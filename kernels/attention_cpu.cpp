// attention_cpu.cpp: the CPU twin of the batched attention forward (attention.hpp).
//
// One problem per OpenMP iteration. Each matrix product is a register-blocked loop (a tile of
// rows of the result times a strip of vectors of columns, held in registers, the inner index
// outermost), written once over simd.hpp's shim and built for AVX-512, AVX2 and plain x86-64
// (cpu_clones.hpp). Every entry of every product is the same chain at every level and for any
// tiling: c = fma(a_k, b_k, c) for k ascending from c = 0 (one rounding per term; -ffp-contract
// is off, so nothing else fuses), so all levels give the same bits and any split of the rows
// gives the bits of the whole. The row softmax follows softmax.hpp's rule: rows whose visible
// scores are all finite take softmax_row_blocked below (vector exp, a fixed tree of 16 partial
// sums), the rest softmax.hpp's softmax_row.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention.hpp"
#include "cpu_clones.hpp"
#include "cpu_threads.hpp"
#include "simd.hpp"
#include "softmax.hpp"

namespace attn {
namespace {

using Index = std::ptrdiff_t;

// A product's operands: c (rows, cols) = a (rows, inner) b (inner, cols), row-major with
// leading dimensions lda, ldb, ldc.
template <class T>
struct Operands {
  const T* a;
  Index lda;
  const T* b;
  Index ldb;
  T* c;
  Index ldc;
};

// The tile of a level: kRows rows times kVecs vectors of columns. At AVX-512 (32 registers)
// 5 x 4 accumulators, at AVX2 (16) 3 x 4, with the strip of b and a broadcast beside them;
// the choice among the tiles that fit is measured (docs/PERFORMANCE.md). The baseline: 4 x 4
// scalars.
template <class S>
constexpr int kRows = S::kLanes == 1 ? 4 : (S::kLanes * sizeof(typename S::Elem) == 64 ? 5 : 3);
template <class S>
constexpr int kVecs = 4;

// Rows [i, i + MR) and columns [j, j + NV W) of c (W = S::kLanes; the last vector `part` lanes
// wide when Part): row i + r sums over k < hi[r] (hi non-decreasing, lo = hi[0]).
template <class S, int MR, int NV, bool Part>
ATTN_INLINE void tile(const Operands<typename S::Elem>& o, int i, int j, const int* hi, int part) {
  using T = typename S::Elem;
  using V = typename S::V;
  constexpr int W = S::kLanes;
  V acc[MR][NV];
  ATTN_UNROLL
  for (int r = 0; r < MR; ++r) {
    ATTN_UNROLL
    for (int x = 0; x < NV; ++x) acc[r][x] = S::set1(T(0));
  }
  const auto strip = [&](int k, V* bv) {
    const T* bk = o.b + Index(k) * o.ldb + j;
    ATTN_UNROLL
    for (int x = 0; x < NV; ++x)
      bv[x] = Part && x == NV - 1 ? S::load_n(bk + x * W, part, T(0)) : S::load(bk + x * W);
  };
  int k = 0;
  for (; k < hi[0]; ++k) {
    V bv[NV];
    strip(k, bv);
    ATTN_UNROLL
    for (int r = 0; r < MR; ++r) {
      const V ar = S::set1(o.a[Index(i + r) * o.lda + k]);
      ATTN_UNROLL
      for (int x = 0; x < NV; ++x) acc[r][x] = S::fma(ar, bv[x], acc[r][x]);
    }
  }
  for (; k < hi[MR - 1]; ++k) {  // the rows that sum further (a causal row block)
    V bv[NV];
    strip(k, bv);
    ATTN_UNROLL
    for (int r = 0; r < MR; ++r) {
      if (k >= hi[r]) continue;
      const V ar = S::set1(o.a[Index(i + r) * o.lda + k]);
      ATTN_UNROLL
      for (int x = 0; x < NV; ++x) acc[r][x] = S::fma(ar, bv[x], acc[r][x]);
    }
  }
  ATTN_UNROLL
  for (int r = 0; r < MR; ++r) {
    T* cr = o.c + Index(i + r) * o.ldc + j;
    ATTN_UNROLL
    for (int x = 0; x < NV; ++x) {
      if (Part && x == NV - 1)
        S::store_n(cr + x * W, acc[r][x], part);
      else
        S::store(cr + x * W, acc[r][x]);
    }
  }
}

// Rows [i, i + MR) of c, every column.
template <class S, int MR, class Limit>
ATTN_INLINE void row_block(const Operands<typename S::Elem>& o, int i, int inner, int cols,
                           Limit limit) {
  constexpr int W = S::kLanes, NV = kVecs<S>;
  int hi[MR];
  ATTN_UNROLL
  for (int r = 0; r < MR; ++r) hi[r] = std::min(limit(i + r), inner);
  int j = 0;
  for (; j + NV * W <= cols; j += NV * W) tile<S, MR, NV, false>(o, i, j, hi, W);
  for (; j + W <= cols; j += W) tile<S, MR, 1, false>(o, i, j, hi, W);
  if (j < cols) tile<S, MR, 1, true>(o, i, j, hi, cols - j);
}

// The last `left` (< MR) rows from row i.
template <class S, int MR, class Limit>
ATTN_INLINE void rows_left(const Operands<typename S::Elem>& o, int i, int left, int inner,
                           int cols, Limit limit) {
  if constexpr (MR > 0) {
    if (left == MR)
      row_block<S, MR>(o, i, inner, cols, limit);
    else
      rows_left<S, MR - 1>(o, i, left, inner, cols, limit);
  }
}

// c (rows, cols) = a (rows, inner) b (inner, cols); row i sums over k < limit(i) only (limit
// non-decreasing in i), so that the weighted sum of a causal row never touches a masked key.
// Entry (i, j): c = fma(a_ik, b_kj, c) for k = 0, 1, ... < limit(i), from c = 0.
template <class S, class Limit>
ATTN_INLINE void product(const Operands<typename S::Elem>& o, int rows, int inner, int cols,
                         Limit limit) {
  constexpr int MR = kRows<S>;
  int i = 0;
  for (; i + MR <= rows; i += MR) row_block<S, MR>(o, i, inner, cols, limit);
  if (i < rows) rows_left<S, MR - 1>(o, i, rows - i, inner, cols, limit);
}

// weights[0..n) = the softmax of scores[0..valid) (already scaled; columns >= valid masked),
// by softmax.hpp's rule. A row whose visible scores are all finite takes the vector path:
// exp_nonpositive(s_j - max), summed into 16 partial sums (sum p takes the j = p mod 16, in
// ascending j) added in a fixed tree (p and p + 8, then + 4, + 2, + 1), each weight that exp
// over the sum: the same bits at every level. Any other row (a NaN, an infinite maximum, no
// visible key) takes softmax_row, which states those cases.
template <class S>
ATTN_INLINE void softmax_row_blocked(const typename S::Elem* scores, typename S::Elem* weights,
                                     int n, int valid) {
  using T = typename S::Elem;
  using V = typename S::V;
  constexpr int W = S::kLanes, P = 16 / W;
  static_assert(16 % W == 0, "16 partial sums, whole vectors of them");
  const T ninf = neg_infinity<T>();
  V top = S::set1(ninf);
  typename S::Bits nan = 0;
  for (int j = 0; j < valid; j += W) {
    const V s = j + W <= valid ? S::load(scores + j) : S::load_n(scores + j, valid - j, ninf);
    top = S::max(top, s);
    nan |= S::nan(s);
  }
  T lanes[16];
  S::to_array(top, lanes);
  T m = lanes[0];
  for (int l = 1; l < W; ++l) m = lanes[l] > m ? lanes[l] : m;
  if (nan || !(m - m == T(0))) {
    softmax_row(scores, weights, n, T(1), valid);
    return;
  }
  V sums[P];
  for (int p = 0; p < P; ++p) sums[p] = S::set1(T(0));
  const V vm = S::set1(m);
  for (int j = 0, c = 0; j < valid; j += W, ++c) {
    const int count = std::min(W, valid - j);
    const V s = count == W ? S::load(scores + j) : S::load_n(scores + j, count, ninf);
    const V e = simd::exp_nonpositive<S>(S::sub(s, vm));
    if (count == W)
      S::store(weights + j, e);
    else
      S::store_n(weights + j, e, count);
    sums[c % P] = S::add(sums[c % P], e);  // a lane past `valid` adds exp(-inf) = +0
  }
  for (int p = 0; p < P; ++p) S::to_array(sums[p], lanes + p * W);
  for (int h = 8; h >= 1; h /= 2)
    for (int l = 0; l < h; ++l) lanes[l] += lanes[l + h];
  const V total = S::set1(lanes[0]);
  for (int j = 0; j < valid; j += W) {
    const int count = std::min(W, valid - j);
    if (count == W)
      S::store(weights + j, S::div(S::load(weights + j), total));
    else
      S::store_n(weights + j, S::div(S::load_n(weights + j, count, T(0)), total), count);
  }
  for (int j = valid; j < n; ++j) weights[j] = T(0);
}

// Scratch of one thread: K transposed (d_k, n) and, for a mask, one row's gathered scores,
// weights and keys (n each).
template <class T>
struct Scratch {
  std::vector<T> kt, gathered_scores, gathered_weights;
  std::vector<int> keys;
  explicit Scratch(const AttentionShape& s)
      : kt(std::size_t(s.d_k) * s.n), gathered_scores(s.n), gathered_weights(s.n), keys(s.n) {}
};

// Rows [r0, r1) of one problem's forward (attention.hpp), in two steps that a piece may take
// apart (AttentionPiece): project computes those rows of q, k and v; attend computes those rows
// of scores, weights and out, and reads every row of k and v (mask: this problem's (n, n), or
// null). Every entry is the same chain of operations however the rows are split, so any split
// gives the bits of the whole; a mask that is a prefix per row (causal's) gives the bits of no
// mask with causal.
template <CpuLevel L, class T>
ATTN_INLINE void forward_rows(const AttentionShape& s, double scale_d, bool project, bool attend,
                              int r0, int r1, const T* x, const T* w_q, const T* w_k, const T* w_v,
                              T* q, T* k, T* v, T* scores, T* weights, T* out,
                              const unsigned char* mask, const T* map, Scratch<T>& scratch) {
  using S = simd::Simd<L, T>;
  using V = typename S::V;
  constexpr int W = S::kLanes;
  const int n = s.n, dk = s.d_k, dv = s.d_v, rows = r1 - r0;
  const auto all = [](int) { return 1 << 30; };
  if (project) {
    const T* xr = x + Index(r0) * s.d_model;
    product<S>({xr, s.d_model, w_q, dk, q + Index(r0) * dk, dk}, rows, s.d_model, dk, all);
    product<S>({xr, s.d_model, w_k, dk, k + Index(r0) * dk, dk}, rows, s.d_model, dk, all);
    product<S>({xr, s.d_model, w_v, dv, v + Index(r0) * dv, dv}, rows, s.d_model, dv, all);
  }
  if (!attend) return;
  const T scale = static_cast<T>(scale_d);
  // scores (rows, n) = q (rows, d_k) kt (d_k, n): entry (i, j) is the chain over q_ic k_jc.
  T* kt = scratch.kt.data();
  for (int j = 0; j < n; ++j)
    for (int c = 0; c < dk; ++c) kt[Index(c) * n + j] = k[Index(j) * dk + c];
  const bool causal = s.causal;
  const auto visible = [causal, n, r0](int i) { return causal ? r0 + i + 1 : n; };
  T* sr = scores + Index(r0) * n;
  T* wr = weights + Index(r0) * n;
  product<S>({q + Index(r0) * dk, dk, kt, n, sr, n}, rows, dk, n, all);
  // Scaled; a non-finite one computed again (rescued_score); masked ones -inf.
  const auto finish = [&](int i, int j0, int j1) {
    T* si = scores + Index(i) * n;
    const V vs = S::set1(scale);
    for (int j = j0; j < j1; j += W) {
      const int count = std::min(W, j1 - j);
      const V sc = S::mul(count == W ? S::load(si + j) : S::load_n(si + j, count, T(0)), vs);
      count == W ? S::store(si + j, sc) : S::store_n(si + j, sc, count);
      if (S::not_finite(sc))
        for (int l = 0; l < count; ++l)
          if (score_not_finite(si[j + l]))
            si[j + l] = rescued_score(q + Index(i) * dk, k + Index(j + l) * dk, dk, scale_d);
    }
  };
  if (mask == nullptr) {
    for (int i = 0; i < rows; ++i) {
      T* si = sr + Index(i) * n;
      const int valid = visible(i);
      finish(r0 + i, 0, valid);
      for (int j = valid; j < n; ++j) si[j] = neg_infinity<T>();
      T* wi = wr + Index(i) * n;
      if (map == nullptr) {
        softmax_row_blocked<S>(si, wi, n, valid);
        continue;
      }
      const T* mi = map + Index(r0 + i) * n;
      for (int j = 0; j < n; ++j) wi[j] = j < valid ? mi[j] : T(0);
    }
    // out rows (rows, d_v) = weights rows (rows, n) v (n, d_v), row i over its visible keys.
    product<S>({wr, n, v, dv, out + Index(r0) * dv, dv}, rows, n, dv, visible);
    return;
  }
  // A mask: each row's visible keys, in ascending order, gathered, given softmax_row_blocked's
  // weights and summed into the output in that order (the chain of the product above).
  T* gs = scratch.gathered_scores.data();
  T* gw = scratch.gathered_weights.data();
  int* keys = scratch.keys.data();
  for (int i = r0; i < r1; ++i) {
    T* si = scores + Index(i) * n;
    T* wi = weights + Index(i) * n;
    const unsigned char* mi = mask + Index(i) * n;
    finish(i, 0, n);
    int count = 0;
    for (int j = 0; j < n; ++j) {
      if (!mi[j] || (causal && j > i)) {
        si[j] = neg_infinity<T>();
        wi[j] = T(0);
        continue;
      }
      keys[count] = j;
      gs[count++] = si[j];
    }
    if (map == nullptr)
      softmax_row_blocked<S>(gs, gw, count, count);
    else
      for (int t = 0; t < count; ++t) gw[t] = map[Index(i) * n + keys[t]];
    T* oi = out + Index(i) * dv;
    for (int c = 0; c < dv; c += W) {
      const int width = std::min(W, dv - c);
      V acc = S::set1(T(0));
      for (int t = 0; t < count; ++t) {
        const T* vj = v + Index(keys[t]) * dv + c;
        acc = S::fma(S::set1(gw[t]), width == W ? S::load(vj) : S::load_n(vj, width, T(0)), acc);
      }
      width == W ? S::store(oi + c, acc) : S::store_n(oi + c, acc, width);
    }
    for (int t = 0; t < count; ++t) wi[keys[t]] = gw[t];
  }
}

template <CpuLevel L>
ATTN_INLINE void forward_rows_f32_body(const AttentionShape& s, double scale, bool project,
                                       bool attend, int r0, int r1, const float* x,
                                       const float* w_q, const float* w_k, const float* w_v,
                                       float* q, float* k, float* v, float* scores, float* weights,
                                       float* out, const unsigned char* mask, const float* map,
                                       Scratch<float>* scratch) {
  forward_rows<L, float>(s, scale, project, attend, r0, r1, x, w_q, w_k, w_v, q, k, v, scores,
                         weights, out, mask, map, *scratch);
}
template <CpuLevel L>
ATTN_INLINE void forward_rows_f64_body(const AttentionShape& s, double scale, bool project,
                                       bool attend, int r0, int r1, const double* x,
                                       const double* w_q, const double* w_k, const double* w_v,
                                       double* q, double* k, double* v, double* scores,
                                       double* weights, double* out, const unsigned char* mask,
                                       const double* map, Scratch<double>* scratch) {
  forward_rows<L, double>(s, scale, project, attend, r0, r1, x, w_q, w_k, w_v, q, k, v, scores,
                          weights, out, mask, map, *scratch);
}
// Each compiled for every CPU level (kernels/cpu_clones.hpp); forward_rows_t runs the copy of
// the level it is given.
#define ATTN_FORWARD_ROWS_PARAMS(T)                                                              \
  (const AttentionShape& s, double scale, bool project, bool attend, int r0, int r1, const T* x, \
   const T* w_q, const T* w_k, const T* w_v, T* q, T* k, T* v, T* scores, T* weights, T* out,    \
   const unsigned char* mask, const T* map, Scratch<T>* scratch)
#define ATTN_FORWARD_ROWS_ARGS                                                                    \
  (s, scale, project, attend, r0, r1, x, w_q, w_k, w_v, q, k, v, scores, weights, out, mask, map, \
   scratch)
ATTN_CPU_LEVEL_COPIES(void, forward_rows_f32, ATTN_FORWARD_ROWS_PARAMS(float),
                      ATTN_FORWARD_ROWS_ARGS)
ATTN_CPU_LEVEL_COPIES(void, forward_rows_f64, ATTN_FORWARD_ROWS_PARAMS(double),
                      ATTN_FORWARD_ROWS_ARGS)
void forward_rows_t(CpuLevel level, const AttentionShape& s, double scale, bool project,
                    bool attend, int r0, int r1, const float* x, const float* w_q, const float* w_k,
                    const float* w_v, float* q, float* k, float* v, float* scores, float* weights,
                    float* out, const unsigned char* mask, const float* map,
                    Scratch<float>* scratch) {
  ATTN_CPU_LEVEL_CALL(level, forward_rows_f32, ATTN_FORWARD_ROWS_ARGS)
}
void forward_rows_t(CpuLevel level, const AttentionShape& s, double scale, bool project,
                    bool attend, int r0, int r1, const double* x, const double* w_q,
                    const double* w_k, const double* w_v, double* q, double* k, double* v,
                    double* scores, double* weights, double* out, const unsigned char* mask,
                    const double* map, Scratch<double>* scratch) {
  ATTN_CPU_LEVEL_CALL(level, forward_rows_f64, ATTN_FORWARD_ROWS_ARGS)
}
#undef ATTN_FORWARD_ROWS_ARGS
#undef ATTN_FORWARD_ROWS_PARAMS

}  // namespace

double attention_work(const AttentionShape& s) {
  const double n = s.n;
  return n * s.d_model * (2.0 * s.d_k + s.d_v) + n * n * (s.d_k + s.d_v + 1.0);
}

std::vector<AttentionPiece> attention_pieces(const AttentionShape& s, double budget) {
  s.validate_one_head();
  if (!(budget > 0)) throw std::invalid_argument("attention: a piece budget must be positive");
  std::vector<AttentionPiece> pieces;
  const double entry = attention_work(s);
  if (entry <= budget) {  // whole problems, as many a piece as the budget holds
    const int per = static_cast<int>(std::min(double(s.batch), std::floor(budget / entry)));
    for (int b = 0; b < s.batch; b += per) {
      const int b1 = std::min(s.batch, b + per);
      pieces.push_back({AttentionStep::whole, b, b1, 0, s.n, entry * (b1 - b)});
    }
    return pieces;
  }
  // Each problem by rows: all its projections, then all its attention rows.
  const double n = s.n;
  const double row_work[2] = {double(s.d_model) * (2.0 * s.d_k + s.d_v), n * (s.d_k + s.d_v + 1.0)};
  const AttentionStep steps[2] = {AttentionStep::project, AttentionStep::attend};
  for (int b = 0; b < s.batch; ++b)
    for (int st = 0; st < 2; ++st) {
      const int per = static_cast<int>(std::clamp(std::floor(budget / row_work[st]), 1.0, n));
      for (int r = 0; r < s.n; r += per) {
        const int r1 = std::min(s.n, r + per);
        pieces.push_back({steps[st], b, b + 1, r, r1, row_work[st] * (r1 - r)});
      }
    }
  return pieces;
}

// Threads only for work worth waking them for (about 2^16 multiply-adds or more).
inline bool worth_threads(double work) { return work >= 65536.0; }

template <class T>
void softmax_rows_cpu(const T* scores, T* weights, long rows, int n, T scale, bool causal) {
#pragma omp parallel if (worth_threads(double(rows) * n))
  {
    bind_this_thread();
#pragma omp for schedule(static)
    for (long r = 0; r < rows; ++r) {
      const int valid = causal ? static_cast<int>(r % n) + 1 : n;
      softmax_row(scores + r * n, weights + r * n, n, scale, valid);
    }
  }
}

template <class T>
void batched_scores_cpu(const T* q, const T* k, T* scores, int batch, int n_q, int n_k, int d,
                        T scale) {
#pragma omp parallel for schedule(static) if (worth_threads(double(batch) * n_q * n_k * d))
  for (int b = 0; b < batch; ++b) {
    bind_this_thread();
    const T* qb = q + Index(b) * n_q * d;
    const T* kb = k + Index(b) * n_k * d;
    T* sb = scores + Index(b) * n_q * n_k;
    for (int i = 0; i < n_q; ++i)
      for (int j = 0; j < n_k; ++j) {
        T dot = 0;
        for (int c = 0; c < d; ++c) dot += qb[Index(i) * d + c] * kb[Index(j) * d + c];
        T& out = sb[Index(i) * n_k + j];
        out = scale * dot;
        if (score_not_finite(out))
          out = rescued_score(qb + Index(i) * d, kb + Index(j) * d, d, double(scale));
      }
  }
}

namespace {

template <class T>
void forward_piece(const AttentionProblem<T>& p, const AttentionPiece& piece, CpuLevel level) {
  const AttentionShape& s = p.shape;
  s.validate_one_head();
  if (piece.b0 < 0 || piece.b1 > s.batch || piece.b0 >= piece.b1 || piece.r0 < 0 ||
      piece.r1 > s.n || piece.r0 >= piece.r1 ||
      (piece.step != AttentionStep::whole && piece.b1 != piece.b0 + 1))
    throw std::invalid_argument("attention: a piece outside its problem");
  const double scale = s.effective_scale();
  const Index wk_stride = s.shared_weights ? 0 : Index(s.d_model) * s.d_k;
  const Index wv_stride = s.shared_weights ? 0 : Index(s.d_model) * s.d_v;
  const auto entry = [&](int b, bool project, bool attend, int r0, int r1, Scratch<T>& scratch) {
    const Index xo = Index(b) * s.n * s.d_model, ko = Index(b) * s.n * s.d_k,
                vo = Index(b) * s.n * s.d_v, so = Index(b) * s.n * s.n;
    forward_rows_t(level, s, scale, project, attend, r0, r1, p.x + xo, p.w_q + b * wk_stride,
                   p.w_k + b * wk_stride, p.w_v + b * wv_stride, p.q + ko, p.k + ko, p.v + vo,
                   p.scores + so, p.weights + so, p.out + vo, p.mask ? p.mask + so : nullptr,
                   p.map ? p.map + so : nullptr, &scratch);
  };
#pragma omp parallel if (worth_threads(piece.work))
  {
    bind_this_thread();
    Scratch<T> scratch(s);
    if (piece.step == AttentionStep::whole) {
      // One problem per iteration.
#pragma omp for schedule(static)
      for (int b = piece.b0; b < piece.b1; ++b) entry(b, true, true, 0, s.n, scratch);
    } else {
      // One problem too large for a piece: its rows in blocks of kRowBlock (whole tiles at
      // every level; each attend block transposes K again, a 1/kRowBlock part of its work).
      constexpr int kRowBlock = 24;
      const bool project = piece.step == AttentionStep::project;
      const int blocks = (piece.r1 - piece.r0 + kRowBlock - 1) / kRowBlock;
#pragma omp for schedule(static)
      for (int blk = 0; blk < blocks; ++blk) {
        const int r0 = piece.r0 + kRowBlock * blk, r1 = std::min(piece.r1, r0 + kRowBlock);
        entry(piece.b0, project, !project, r0, r1, scratch);
      }
    }
  }
}

AttentionPiece whole_batch(const AttentionShape& s) {
  s.validate_one_head();
  return AttentionPiece{AttentionStep::whole, 0, s.batch, 0, s.n, attention_work(s) * s.batch};
}

}  // namespace

template <class T>
void attention_forward_cpu(const AttentionProblem<T>& p, const AttentionPiece& piece) {
  forward_piece(p, piece, cpu_level());
}

template <class T>
void attention_forward_cpu(const AttentionProblem<T>& p) {
  forward_piece(p, whole_batch(p.shape), cpu_level());
}

template <class T>
void attention_forward_cpu(const AttentionProblem<T>& p, CpuLevel level) {
  if (level > cpu_level())
    throw std::invalid_argument(std::string("attention: CPU level ") + cpu_level_name(level) +
                                " is above this run's " + cpu_level_name(cpu_level()));
  forward_piece(p, whole_batch(p.shape), level);
}

template void attention_forward_cpu<float>(const AttentionProblem<float>&);
template void attention_forward_cpu<double>(const AttentionProblem<double>&);
template void attention_forward_cpu<float>(const AttentionProblem<float>&, const AttentionPiece&);
template void attention_forward_cpu<double>(const AttentionProblem<double>&, const AttentionPiece&);
template void attention_forward_cpu<float>(const AttentionProblem<float>&, CpuLevel);
template void attention_forward_cpu<double>(const AttentionProblem<double>&, CpuLevel);
template void batched_scores_cpu<float>(const float*, const float*, float*, int, int, int, int,
                                        float);
template void batched_scores_cpu<double>(const double*, const double*, double*, int, int, int, int,
                                         double);
template void softmax_rows_cpu<float>(const float*, float*, long, int, float, bool);
template void softmax_rows_cpu<double>(const double*, double*, long, int, double, bool);

}  // namespace attn
