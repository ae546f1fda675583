// attention_cpu.cpp: the CPU twin of the batched attention forward (attention.hpp).
// Plain loops, one problem per OpenMP iteration; the softmax is softmax.hpp's, as on the GPU.
#include <cstddef>

#include "attention.hpp"
#include "softmax.hpp"

namespace attn {
namespace {

// c (rows, cols) = a (rows, inner) * b (inner, cols), row-major; i-k-j order so that the
// innermost loop streams through b and c.
template <class T>
void matmul(const T* a, const T* b, T* c, int rows, int inner, int cols) {
  for (int i = 0; i < rows; ++i) {
    T* ci = c + static_cast<std::ptrdiff_t>(i) * cols;
    for (int j = 0; j < cols; ++j) ci[j] = T(0);
    for (int k = 0; k < inner; ++k) {
      const T aik = a[static_cast<std::ptrdiff_t>(i) * inner + k];
      const T* bk = b + static_cast<std::ptrdiff_t>(k) * cols;
      for (int j = 0; j < cols; ++j) ci[j] += aik * bk[j];
    }
  }
}

}  // namespace

// Threads only for work worth waking them for (about 2^16 multiply-adds or more).
inline bool worth_threads(double work) { return work >= 65536.0; }

template <class T>
void softmax_rows_cpu(const T* scores, T* weights, long rows, int n, T scale, bool causal) {
#pragma omp parallel for schedule(static) if (worth_threads(double(rows) * n))
  for (long r = 0; r < rows; ++r) {
    const int valid = causal ? static_cast<int>(r % n) + 1 : n;
    softmax_row(scores + r * n, weights + r * n, n, scale, valid);
  }
}

template <class T>
void batched_scores_cpu(const T* q, const T* k, T* scores, int batch, int n_q, int n_k, int d,
                        T scale) {
#pragma omp parallel for schedule(static) if (worth_threads(double(batch) * n_q * n_k * d))
  for (int b = 0; b < batch; ++b) {
    const T* qb = q + std::ptrdiff_t(b) * n_q * d;
    const T* kb = k + std::ptrdiff_t(b) * n_k * d;
    T* sb = scores + std::ptrdiff_t(b) * n_q * n_k;
    for (int i = 0; i < n_q; ++i)
      for (int j = 0; j < n_k; ++j) {
        T dot = 0;
        for (int c = 0; c < d; ++c) dot += qb[i * d + c] * kb[j * d + c];
        sb[i * n_k + j] = scale * dot;
      }
  }
}

template <class T>
void attention_forward_cpu(const AttentionProblem<T>& p) {
  const AttentionShape& s = p.shape;
  s.validate();
  const T scale = static_cast<T>(s.effective_scale());
  const std::ptrdiff_t wk_stride = s.shared_weights ? 0 : std::ptrdiff_t(s.d_model) * s.d_k;
  const std::ptrdiff_t wv_stride = s.shared_weights ? 0 : std::ptrdiff_t(s.d_model) * s.d_v;
  const double work = double(s.batch) * s.n * (3.0 * s.d_model * s.d_k + 2.0 * s.n * s.d_k);
#pragma omp parallel for schedule(static) if (worth_threads(work))
  for (int b = 0; b < s.batch; ++b) {
    const T* x = p.x + std::ptrdiff_t(b) * s.n * s.d_model;
    T* q = p.q + std::ptrdiff_t(b) * s.n * s.d_k;
    T* k = p.k + std::ptrdiff_t(b) * s.n * s.d_k;
    T* v = p.v + std::ptrdiff_t(b) * s.n * s.d_v;
    T* scores = p.scores + std::ptrdiff_t(b) * s.n * s.n;
    T* weights = p.weights + std::ptrdiff_t(b) * s.n * s.n;
    matmul(x, p.w_q + b * wk_stride, q, s.n, s.d_model, s.d_k);
    matmul(x, p.w_k + b * wk_stride, k, s.n, s.d_model, s.d_k);
    matmul(x, p.w_v + b * wv_stride, v, s.n, s.d_model, s.d_v);
    for (int i = 0; i < s.n; ++i) {  // scores = scale * q k^T, row i = query i
      for (int j = 0; j < s.n; ++j) {
        T dot = 0;
        for (int c = 0; c < s.d_k; ++c) dot += q[i * s.d_k + c] * k[j * s.d_k + c];
        scores[i * s.n + j] = (s.causal && j > i) ? neg_infinity<T>() : scale * dot;
      }
      softmax_row(scores + i * s.n, weights + i * s.n, s.n, T(1), s.causal ? i + 1 : s.n);
    }
    matmul(weights, v, p.out + std::ptrdiff_t(b) * s.n * s.d_v, s.n, s.n, s.d_v);
  }
}

template void attention_forward_cpu<float>(const AttentionProblem<float>&);
template void attention_forward_cpu<double>(const AttentionProblem<double>&);
template void batched_scores_cpu<float>(const float*, const float*, float*, int, int, int, int,
                                        float);
template void batched_scores_cpu<double>(const double*, const double*, double*, int, int, int, int,
                                         double);
template void softmax_rows_cpu<float>(const float*, float*, long, int, float, bool);
template void softmax_rows_cpu<double>(const double*, double*, long, int, double, bool);

}  // namespace attn
