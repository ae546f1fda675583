// attention_cpu.cpp: the CPU twin of the batched attention forward (attention.hpp).
//
// One problem per OpenMP iteration. Each matrix product is a register-blocked loop (4 rows of
// the result times a strip of columns held in registers, the inner index outermost), built
// for AVX-512, AVX2 and plain x86-64 (cpu_clones.hpp). Every entry of every product is still
// the plain sum over the inner index in ascending order, with no FMA contraction
// (-ffp-contract=off), so all clones give the same bits as the textbook loops; the softmax is
// softmax.hpp's, as on the GPU.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "attention.hpp"
#include "cpu_clones.hpp"
#include "cpu_threads.hpp"
#include "softmax.hpp"

namespace attn {
namespace {

using Index = std::ptrdiff_t;

// c (rows, cols) = a (rows, inner) * b (inner, cols), all row-major with leading dimensions
// lda, ldb, ldc; row i of c sums over k < limit(i) only (limit non-decreasing in i), so that
// the weighted sum of a causal row never touches a masked key. Each c entry is
// sum_{k < limit(i)} a[i][k] * b[k][j], accumulated in ascending k.
template <class T, class Limit>
ATTN_INLINE void matmul_rows(const T* a, Index lda, const T* b, Index ldb, T* c, Index ldc,
                             int rows, int inner, int cols, Limit limit) {
  constexpr int kRows = 4;
  constexpr int kCols = 64 / sizeof(T) * 2;  // two 64-byte vectors: 32 floats or 16 doubles
  int i = 0;
  for (; i + kRows <= rows; i += kRows) {
    const int lo = std::min(limit(i), inner);  // every row of the block sums at least this far
    int j = 0;
    for (; j + kCols <= cols; j += kCols) {
      T acc[kRows][kCols] = {};
      for (int k = 0; k < lo; ++k) {
        const T* bk = b + k * ldb + j;
        ATTN_UNROLL
        for (int r = 0; r < kRows; ++r) {
          const T ar = a[(i + r) * lda + k];
          ATTN_UNROLL
          for (int x = 0; x < kCols; ++x) acc[r][x] += ar * bk[x];
        }
      }
      for (int r = 0; r < kRows; ++r) {  // the rest of each row's own range
        const int hi = std::min(limit(i + r), inner);
        for (int k = lo; k < hi; ++k) {
          const T ar = a[(i + r) * lda + k];
          const T* bk = b + k * ldb + j;
          for (int x = 0; x < kCols; ++x) acc[r][x] += ar * bk[x];
        }
        for (int x = 0; x < kCols; ++x) c[(i + r) * ldc + j + x] = acc[r][x];
      }
    }
    for (int r = 0; r < kRows; ++r) {  // columns left over: one row at a time
      const int hi = std::min(limit(i + r), inner);
      T* cr = c + (i + r) * ldc;
      for (int x = j; x < cols; ++x) cr[x] = T(0);
      for (int k = 0; k < hi; ++k) {
        const T ar = a[(i + r) * lda + k];
        const T* bk = b + k * ldb;
        for (int x = j; x < cols; ++x) cr[x] += ar * bk[x];
      }
    }
  }
  for (; i < rows; ++i) {  // rows left over
    const int hi = std::min(limit(i), inner);
    T* cr = c + i * ldc;
    for (int x = 0; x < cols; ++x) cr[x] = T(0);
    for (int k = 0; k < hi; ++k) {
      const T ar = a[i * lda + k];
      const T* bk = b + k * ldb;
      for (int x = 0; x < cols; ++x) cr[x] += ar * bk[x];
    }
  }
}

template <class T>
ATTN_INLINE void matmul(const T* a, const T* b, T* c, int rows, int inner, int cols) {
  matmul_rows(a, inner, b, cols, c, cols, rows, inner, cols, [inner](int) { return inner; });
}

// Rows [r0, r1) of one problem's forward (attention.hpp), in two steps that a piece may take
// apart (AttentionPiece): project computes those rows of q, k and v; attend computes those rows
// of scores, weights and out, and reads every row of k and v. kt: scratch of d_k * n entries
// (K transposed). Every entry is the same sum over the same terms in the same order however the
// rows are split, so any split gives the bits of the whole.
template <class T>
ATTN_INLINE void forward_rows(const AttentionShape& s, double scale_d, bool project, bool attend,
                              int r0, int r1, const T* x, const T* w_q, const T* w_k, const T* w_v,
                              T* q, T* k, T* v, T* scores, T* weights, T* out, T* kt) {
  const int n = s.n, dk = s.d_k, rows = r1 - r0;
  if (project) {
    const T* xr = x + Index(r0) * s.d_model;
    matmul(xr, w_q, q + Index(r0) * dk, rows, s.d_model, dk);
    matmul(xr, w_k, k + Index(r0) * dk, rows, s.d_model, dk);
    matmul(xr, w_v, v + Index(r0) * s.d_v, rows, s.d_model, s.d_v);
  }
  if (!attend) return;
  const T scale = static_cast<T>(scale_d);
  // scores (rows, n) = q (rows, d_k) kt (d_k, n): entry (i, j) = sum_c q_ic k_jc, ascending c.
  for (int j = 0; j < n; ++j)
    for (int c = 0; c < dk; ++c) kt[Index(c) * n + j] = k[Index(j) * dk + c];
  const bool causal = s.causal;
  const auto visible = [causal, n, r0](int i) { return causal ? r0 + i + 1 : n; };
  T* sr = scores + Index(r0) * n;
  T* wr = weights + Index(r0) * n;
  matmul(q + Index(r0) * dk, kt, sr, rows, dk, n);  // masked entries are overwritten below
  for (int i = 0; i < rows; ++i) {
    T* si = sr + Index(i) * n;
    const int valid = visible(i);
    for (int j = 0; j < valid; ++j) {
      si[j] *= scale;
      if (score_not_finite(si[j]))
        si[j] = rescued_score(q + Index(r0 + i) * dk, k + Index(j) * dk, dk, scale_d);
    }
    for (int j = valid; j < n; ++j) si[j] = neg_infinity<T>();
    softmax_row(si, wr + Index(i) * n, n, T(1), valid);
  }
  // out rows (rows, d_v) = weights rows (rows, n) v (n, d_v), row i over its visible keys only.
  matmul_rows(wr, n, v, s.d_v, out + Index(r0) * s.d_v, s.d_v, rows, n, s.d_v, visible);
}

ATTN_INLINE void forward_rows_f32_body(const AttentionShape& s, double scale, bool project,
                                       bool attend, int r0, int r1, const float* x,
                                       const float* w_q, const float* w_k, const float* w_v,
                                       float* q, float* k, float* v, float* scores, float* weights,
                                       float* out, float* kt) {
  forward_rows<float>(s, scale, project, attend, r0, r1, x, w_q, w_k, w_v, q, k, v, scores, weights,
                      out, kt);
}
ATTN_INLINE void forward_rows_f64_body(const AttentionShape& s, double scale, bool project,
                                       bool attend, int r0, int r1, const double* x,
                                       const double* w_q, const double* w_k, const double* w_v,
                                       double* q, double* k, double* v, double* scores,
                                       double* weights, double* out, double* kt) {
  forward_rows<double>(s, scale, project, attend, r0, r1, x, w_q, w_k, w_v, q, k, v, scores,
                       weights, out, kt);
}
// Each compiled for every CPU level (kernels/cpu_clones.hpp); the best one runs.
ATTN_CPU_LEVELS(void, forward_rows_f32,
                (const AttentionShape& s, double scale, bool project, bool attend, int r0, int r1,
                 const float* x, const float* w_q, const float* w_k, const float* w_v, float* q,
                 float* k, float* v, float* scores, float* weights, float* out, float* kt),
                (s, scale, project, attend, r0, r1, x, w_q, w_k, w_v, q, k, v, scores, weights, out,
                 kt))
ATTN_CPU_LEVELS(void, forward_rows_f64,
                (const AttentionShape& s, double scale, bool project, bool attend, int r0, int r1,
                 const double* x, const double* w_q, const double* w_k, const double* w_v,
                 double* q, double* k, double* v, double* scores, double* weights, double* out,
                 double* kt),
                (s, scale, project, attend, r0, r1, x, w_q, w_k, w_v, q, k, v, scores, weights, out,
                 kt))
void forward_rows_t(const AttentionShape& s, double scale, bool project, bool attend, int r0,
                    int r1, const float* x, const float* w_q, const float* w_k, const float* w_v,
                    float* q, float* k, float* v, float* sc, float* w, float* out, float* kt) {
  forward_rows_f32(s, scale, project, attend, r0, r1, x, w_q, w_k, w_v, q, k, v, sc, w, out, kt);
}
void forward_rows_t(const AttentionShape& s, double scale, bool project, bool attend, int r0,
                    int r1, const double* x, const double* w_q, const double* w_k,
                    const double* w_v, double* q, double* k, double* v, double* sc, double* w,
                    double* out, double* kt) {
  forward_rows_f64(s, scale, project, attend, r0, r1, x, w_q, w_k, w_v, q, k, v, sc, w, out, kt);
}

// The attend step of rows [r0, r1) of one problem under a mask (AttentionProblem::mask, this
// problem's (n, n)): each row's visible keys, in ascending order, are gathered, given
// softmax_row's weights, and summed into the output in that order. A mask that is a prefix
// per row (causal's) gives the bits of forward_rows' attend step.
template <class T>
void attend_masked_rows(const AttentionShape& s, double scale_d, int r0, int r1, const T* q,
                        const T* k, const T* v, const unsigned char* mask, T* scores, T* weights,
                        T* out, T* kt) {
  const int n = s.n, dk = s.d_k, dv = s.d_v, rows = r1 - r0;
  const T scale = static_cast<T>(scale_d);
  for (int j = 0; j < n; ++j)
    for (int c = 0; c < dk; ++c) kt[Index(c) * n + j] = k[Index(j) * dk + c];
  T* sr = scores + Index(r0) * n;
  matmul(q + Index(r0) * dk, kt, sr, rows, dk, n);
  std::vector<T> vs(n), vw(n);
  std::vector<int> keys(n);
  for (int i = r0; i < r1; ++i) {
    T* si = scores + Index(i) * n;
    T* wi = weights + Index(i) * n;
    const unsigned char* mi = mask + Index(i) * n;
    int count = 0;
    for (int j = 0; j < n; ++j) {
      if (!mi[j] || (s.causal && j > i)) {
        si[j] = neg_infinity<T>();
        wi[j] = T(0);
        continue;
      }
      si[j] *= scale;
      if (score_not_finite(si[j]))
        si[j] = rescued_score(q + Index(i) * dk, k + Index(j) * dk, dk, scale_d);
      keys[count] = j;
      vs[count++] = si[j];
    }
    softmax_row(vs.data(), vw.data(), count, T(1), count);
    T* oi = out + Index(i) * dv;
    for (int c = 0; c < dv; ++c) oi[c] = T(0);
    for (int t = 0; t < count; ++t) {
      wi[keys[t]] = vw[t];
      const T* vj = v + Index(keys[t]) * dv;
      for (int c = 0; c < dv; ++c) oi[c] += vw[t] * vj[c];
    }
  }
}

}  // namespace

double attention_work(const AttentionShape& s) {
  const double n = s.n;
  return n * s.d_model * (2.0 * s.d_k + s.d_v) + n * n * (s.d_k + s.d_v + 1.0);
}

std::vector<AttentionPiece> attention_pieces(const AttentionShape& s, double budget) {
  s.validate();
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

template <class T>
void attention_forward_cpu(const AttentionProblem<T>& p, const AttentionPiece& piece) {
  const AttentionShape& s = p.shape;
  s.validate();
  if (piece.b0 < 0 || piece.b1 > s.batch || piece.b0 >= piece.b1 || piece.r0 < 0 ||
      piece.r1 > s.n || piece.r0 >= piece.r1 ||
      (piece.step != AttentionStep::whole && piece.b1 != piece.b0 + 1))
    throw std::invalid_argument("attention: a piece outside its problem");
  const double scale = s.effective_scale();
  const Index wk_stride = s.shared_weights ? 0 : Index(s.d_model) * s.d_k;
  const Index wv_stride = s.shared_weights ? 0 : Index(s.d_model) * s.d_v;
  const auto entry = [&](int b, bool project, bool attend, int r0, int r1, T* kt) {
    const Index xo = Index(b) * s.n * s.d_model, ko = Index(b) * s.n * s.d_k,
                vo = Index(b) * s.n * s.d_v, so = Index(b) * s.n * s.n;
    const bool masked = p.mask != nullptr;  // its attend step apart: attend_masked_rows
    if (project || !masked)
      forward_rows_t(s, scale, project, attend && !masked, r0, r1, p.x + xo, p.w_q + b * wk_stride,
                     p.w_k + b * wk_stride, p.w_v + b * wv_stride, p.q + ko, p.k + ko, p.v + vo,
                     p.scores + so, p.weights + so, p.out + vo, kt);
    if (attend && masked)
      attend_masked_rows(s, scale, r0, r1, p.q + ko, p.k + ko, p.v + vo, p.mask + so, p.scores + so,
                         p.weights + so, p.out + vo, kt);
  };
#pragma omp parallel if (worth_threads(piece.work))
  {
    bind_this_thread();
    std::vector<T> kt;
    if (piece.step != AttentionStep::project) kt.resize(std::size_t(s.d_k) * s.n);
    if (piece.step == AttentionStep::whole) {
      // One problem per iteration.
#pragma omp for schedule(static)
      for (int b = piece.b0; b < piece.b1; ++b) entry(b, true, true, 0, s.n, kt.data());
    } else {
      // One problem too large for a piece: its rows in blocks of 4 (matmul_rows' block).
      const bool project = piece.step == AttentionStep::project;
      const int blocks = (piece.r1 - piece.r0 + 3) / 4;
#pragma omp for schedule(static)
      for (int blk = 0; blk < blocks; ++blk) {
        const int r0 = piece.r0 + 4 * blk, r1 = std::min(piece.r1, r0 + 4);
        entry(piece.b0, project, !project, r0, r1, kt.data());
      }
    }
  }
}

template <class T>
void attention_forward_cpu(const AttentionProblem<T>& p) {
  p.shape.validate();
  attention_forward_cpu(p, AttentionPiece{AttentionStep::whole, 0, p.shape.batch, 0, p.shape.n,
                                          attention_work(p.shape) * p.shape.batch});
}

template void attention_forward_cpu<float>(const AttentionProblem<float>&);
template void attention_forward_cpu<double>(const AttentionProblem<double>&);
template void attention_forward_cpu<float>(const AttentionProblem<float>&, const AttentionPiece&);
template void attention_forward_cpu<double>(const AttentionProblem<double>&, const AttentionPiece&);
template void batched_scores_cpu<float>(const float*, const float*, float*, int, int, int, int,
                                        float);
template void batched_scores_cpu<double>(const double*, const double*, double*, int, int, int, int,
                                         double);
template void softmax_rows_cpu<float>(const float*, float*, long, int, float, bool);
template void softmax_rows_cpu<double>(const double*, double*, long, int, double, bool);

}  // namespace attn
