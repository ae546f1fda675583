// attention_cuda.cu: the GPU path of the batched attention forward (attention.hpp).
//
// Projections, scores and the weighted sum are cuBLAS strided-batched GEMMs; the row softmax is
// one of two kernels (attention.hpp: v1 thread per row, v2 warp per row). cuBLAS is column-major: a
// row-major (r x c) matrix is its column-major transpose, so row-major C = A B is computed as
// column-major C^T = B^T A^T.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "attention.hpp"
#include "cuda_check.hpp"
#include "device_buffer.hpp"
#include "softmax.hpp"

namespace attn {
namespace {

enum class BTransposed : bool { no = false, yes = true };

// Row-major, for every batch entry b: C_b (m x n) = alpha * A_b (m x k) * B'_b, where B'_b is
// B_b (k x n) or, with BTransposed::yes, the transpose of B_b stored (n x k). Strides in
// elements; a stride of 0 shares one matrix across the batch. The one place that spells out the
// column-major swap for cublas{S,D}gemmStridedBatched.
template <class T>
void gemm_rowmajor(BTransposed b_transposed, int m, int n, int k, T alpha, const T* a,
                   long long stride_a, const T* b, long long stride_b, T* c, long long stride_c,
                   int batch) {
  // Column-major, the same memory reads C^T (n x m) = B'^T (n x k) * A^T (k x m).
  const T beta = 0;
  const bool t = b_transposed == BTransposed::yes;
  const cublasOperation_t op_b = t ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = t ? k : n;
  if constexpr (std::is_same_v<T, double>) {
    ATTN_CUDA_CHECK(cuda_detail::cublas().dgemm_strided_batched(
        cuda_detail::cublas_handle(), op_b, CUBLAS_OP_N, n, m, k, &alpha, b, ldb, stride_b, a, k,
        stride_a, &beta, c, n, stride_c, batch));
  } else {
    ATTN_CUDA_CHECK(cuda_detail::cublas().sgemm_strided_batched(
        cuda_detail::cublas_handle(), op_b, CUBLAS_OP_N, n, m, k, &alpha, b, ldb, stride_b, a, k,
        stride_a, &beta, c, n, stride_c, batch));
  }
}

// v1: one thread per row, softmax.hpp's softmax_row itself (the CPU twin's code).
template <class T>
__global__ void softmax_rows_v1_kernel(const T* __restrict__ scores, T* __restrict__ weights,
                                       long rows, int n, T scale, bool causal) {
  const long row = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const int valid = causal ? static_cast<int>(row % n) + 1 : n;
  softmax_row(scores + row * n, weights + row * n, n, scale, valid);
}

// v2: one warp per row of n scores: softmax.hpp's rule (RowMax: the visible maximum and whether a
// NaN is among them, merged across the warp), then numerator / sum, with the row reductions
// spread over the warp.
template <class T>
__global__ void softmax_rows_v2_kernel(const T* __restrict__ scores, T* __restrict__ weights,
                                       long rows, int n, T scale, bool causal) {
  const long row = static_cast<long>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* s = scores + row * n;
  T* w = weights + row * n;
  const int valid = causal ? static_cast<int>(row % n) + 1 : n;
  RowMax<T> r;
  for (int j = lane; j < valid; j += 32) r.add(s[j]);
  for (int off = 16; off > 0; off /= 2) {
    RowMax<T> o;
    o.m = __shfl_xor_sync(0xffffffffu, r.m, off);
    o.nan = __shfl_xor_sync(0xffffffffu, static_cast<int>(r.nan), off) != 0;
    r.merge(o);
  }
  T sum = 0;
  for (int j = lane; j < valid; j += 32) sum += r.numerator(s[j], scale);
  for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  for (int j = lane; j < n; j += 32) w[j] = j < valid ? r.numerator(s[j], scale) / sum : T(0);
}

// After the score GEMM (scale * Q K^T, rows = batch * n_q query rows of n_k scores): masked
// entries (causal, where n_q = n_k: column > row) become -inf, and visible entries that came out
// non-finite are recomputed by rescued_score (attention.hpp's rule, the CPU twin's: a score
// overflows only where the scaled score does). One thread per entry.
template <class T>
__global__ void finish_scores_kernel(T* scores, const T* q, const T* k, long rows, int n_q, int n_k,
                                     int d_k, double scale, bool causal) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * n_k) return;
  const long row = idx / n_k;  // batch entry row / n_q, query row % n_q
  const int col = static_cast<int>(idx % n_k);
  if (causal && col > row % n_q) {
    scores[idx] = neg_infinity<T>();
  } else if (score_not_finite(scores[idx])) {
    const long key_row = (row / n_q) * n_k + col;
    scores[idx] = rescued_score(q + row * d_k, k + key_row * d_k, d_k, scale);
  }
}

// out (batch, n, d_v) = weights (batch, n, n) v (batch, n, d_v), where query row i sums over
// its visible keys j <= i only: a masked key's value is never read, so NaN or inf there cannot
// reach a visible output (a GEMM would multiply the zero weights by it). One block per query
// row (rows first + blockIdx.x of a launch), threads over d_v; the sum runs over j in ascending
// order, like the CPU twin.
template <class T>
__global__ void causal_weighted_sum_kernel(const T* __restrict__ weights, const T* __restrict__ v,
                                           T* __restrict__ out, long first, long rows, int n,
                                           int d_v) {
  const long row = first + blockIdx.x;
  if (row >= rows) return;
  const int valid = static_cast<int>(row % n) + 1;
  const T* p = weights + row * n;
  const T* vb = v + (row / n) * n * static_cast<long>(d_v);
  for (int c = threadIdx.x; c < d_v; c += blockDim.x) {
    T acc = 0;
    for (int j = 0; j < valid; ++j) acc += p[j] * vb[static_cast<long>(j) * d_v + c];
    out[row * d_v + c] = acc;
  }
}

template <class T>
void finish_scores(T* scores, const T* q, const T* k, long rows, int n_q, int n_k, int d_k,
                   double scale, bool causal) {
  finish_scores_kernel<T>
      <<<grid_blocks(rows * n_k, 256), 256>>>(scores, q, k, rows, n_q, n_k, d_k, scale, causal);
  ATTN_CUDA_CHECK_LAUNCH();
}

template <class T>
void causal_weighted_sum(const T* weights, const T* v, T* out, long rows, int n, int d_v) {
  const int threads = d_v < 128 ? ((d_v + 31) / 32) * 32 : 128;
  // One block per row, in launches of at most the 2^31 - 1 blocks a grid holds.
  constexpr long kMaxBlocks = 0x7fffffffL;
  for (long first = 0; first < rows; first += kMaxBlocks) {
    const long count = rows - first < kMaxBlocks ? rows - first : kMaxBlocks;
    causal_weighted_sum_kernel<T>
        <<<static_cast<unsigned>(count), threads>>>(weights, v, out, first, rows, n, d_v);
    ATTN_CUDA_CHECK_LAUNCH();
  }
}

// scores (batch, n_q, n_k) = scale * q (batch, n_q, d) k (batch, n_k, d)^T, then
// finish_scores: the CPU twin's rescue of non-finite scores (with the scale in double, as the
// CPU's) and, with causal (n_q = n_k), the mask.
template <class T>
void scores_rowmajor(const T* q, const T* k, T* scores, int batch, int n_q, int n_k, int d,
                     double scale, bool causal) {
  if (batch <= 0 || n_q <= 0 || n_k <= 0) return;
  gemm_rowmajor<T>(BTransposed::yes, n_q, n_k, d, static_cast<T>(scale), q, 1LL * n_q * d, k,
                   1LL * n_k * d, scores, 1LL * n_q * n_k, batch);
  finish_scores(scores, q, k, static_cast<long>(batch) * n_q, n_q, n_k, d, scale, causal);
}

}  // namespace

template <class T>
void softmax_rows_cuda(const T* scores, T* weights, long rows, int n, T scale, bool causal,
                       SoftmaxKernel version) {
  if (rows <= 0) return;
  if (version == SoftmaxKernel::automatic)
    version = n <= 32 ? SoftmaxKernel::thread_per_row : SoftmaxKernel::warp_per_row;
  constexpr int kThreads = 256;
  if (version == SoftmaxKernel::thread_per_row) {
    softmax_rows_v1_kernel<T>
        <<<grid_blocks(rows, kThreads), kThreads>>>(scores, weights, rows, n, scale, causal);
  } else {
    softmax_rows_v2_kernel<T>  // a warp per row: 8 rows per block
        <<<grid_blocks(rows, kThreads / 32), kThreads>>>(scores, weights, rows, n, scale, causal);
  }
  ATTN_CUDA_CHECK_LAUNCH();
}

template <class T>
void batched_scores_cuda(const T* q, const T* k, T* scores, int batch, int n_q, int n_k, int d,
                         T scale) {
  scores_rowmajor(q, k, scores, batch, n_q, n_k, d, double(scale), false);
}

template <class T>
void attention_forward_cuda(const AttentionProblem<T>& p) {
  const AttentionShape& s = p.shape;
  s.validate_one_head();
  const long long x_stride = 1LL * s.n * s.d_model;
  const long long wk_stride = s.shared_weights ? 0 : 1LL * s.d_model * s.d_k;
  const long long wv_stride = s.shared_weights ? 0 : 1LL * s.d_model * s.d_v;
  const long long qk_stride = 1LL * s.n * s.d_k, v_stride = 1LL * s.n * s.d_v;
  const long long s_stride = 1LL * s.n * s.n;
  // Q, K (n x d_k) and V (n x d_v) = X (n x d_model) W.
  gemm_rowmajor<T>(BTransposed::no, s.n, s.d_k, s.d_model, T(1), p.x, x_stride, p.w_q, wk_stride,
                   p.q, qk_stride, s.batch);
  gemm_rowmajor<T>(BTransposed::no, s.n, s.d_k, s.d_model, T(1), p.x, x_stride, p.w_k, wk_stride,
                   p.k, qk_stride, s.batch);
  gemm_rowmajor<T>(BTransposed::no, s.n, s.d_v, s.d_model, T(1), p.x, x_stride, p.w_v, wv_stride,
                   p.v, v_stride, s.batch);
  // S (n x n) = scale * Q K^T, non-finite scores rescued, the causal mask.
  scores_rowmajor(p.q, p.k, p.scores, s.batch, s.n, s.n, s.d_k, s.effective_scale(), s.causal);
  const long rows = static_cast<long>(s.batch) * s.n;
  softmax_rows_cuda<T>(p.scores, p.weights, rows, s.n, T(1), s.causal);
  // O (n x d_v) = P (n x n) V (n x d_v): a GEMM when every key is visible; under the causal
  // mask a kernel that never reads a masked key's value.
  if (s.causal) {
    causal_weighted_sum(p.weights, p.v, p.out, rows, s.n, s.d_v);
  } else {
    gemm_rowmajor<T>(BTransposed::no, s.n, s.d_v, s.n, T(1), p.weights, s_stride, p.v, v_stride,
                     p.out, v_stride, s.batch);
  }
}

namespace {

// The host wrapper's device buffers and the page-locked memory its copies go through, per host
// thread and element type. Every call waits for its work before it returns, so they may grow at
// the start of the next.
template <class T>
struct HostScratch {
  DeviceBuffer<T> x, w_q, w_k, w_v, q, k, v, scores, weights, out;
  PinnedBuffer<T> staging;
};
template <class T>
HostScratch<T>& host_scratch() {
  thread_local HostScratch<T> s;
  return s;
}

// One array of a host problem (Host: const T* for an input, T* for an output) and its device
// buffer, for the copies.
template <class Host, class T>
struct Transfer {
  Host host;
  DeviceBuffer<T>* device;
  std::size_t count;
};

}  // namespace

template <class T>
void attention_forward_cuda_host(const AttentionProblem<T>& h) {
  const AttentionShape& s = h.shape;
  s.validate_one_head();
  const std::size_t w_count = s.shared_weights ? 1 : static_cast<std::size_t>(s.batch);
  const std::size_t rows = static_cast<std::size_t>(s.batch) * s.n;
  HostScratch<T>& d = host_scratch<T>();
  const Transfer<const T*, T> in[] = {{h.x, &d.x, rows * s.d_model},
                                      {h.w_q, &d.w_q, w_count * s.d_model * s.d_k},
                                      {h.w_k, &d.w_k, w_count * s.d_model * s.d_k},
                                      {h.w_v, &d.w_v, w_count * s.d_model * s.d_v}};
  const Transfer<T*, T> out[] = {
      {h.q, &d.q, rows * s.d_k},           {h.k, &d.k, rows * s.d_k},
      {h.v, &d.v, rows * s.d_v},           {h.scores, &d.scores, rows * s.n},
      {h.weights, &d.weights, rows * s.n}, {h.out, &d.out, rows * s.d_v}};
  std::size_t in_count = 0, out_count = 0;
  for (const auto& t : in) {
    t.device->reserve(t.count);
    in_count += t.count;
  }
  for (const auto& t : out) {
    t.device->reserve(t.count);
    out_count += t.count;
  }
  // Inputs and outputs share the staging memory: stream 0 runs the copies in before the
  // outputs' copies write it.
  T* staging = d.staging.reserve(std::max(in_count, out_count));
  T* at = staging;
  for (const auto& t : in) {
    std::memcpy(at, t.host, t.count * sizeof(T));
    ATTN_CUDA_CHECK(cudaMemcpyAsync(t.device->data(), at, t.count * sizeof(T),
                                    cudaMemcpyHostToDevice, nullptr));
    at += t.count;
  }
  attention_forward_cuda(AttentionProblem<T>{s, d.x.data(), d.w_q.data(), d.w_k.data(),
                                             d.w_v.data(), d.q.data(), d.k.data(), d.v.data(),
                                             d.scores.data(), d.weights.data(), d.out.data()});
  at = staging;
  for (const auto& t : out) {
    ATTN_CUDA_CHECK(cudaMemcpyAsync(at, t.device->data(), t.count * sizeof(T),
                                    cudaMemcpyDeviceToHost, nullptr));
    at += t.count;
  }
  ATTN_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  at = staging;
  for (const auto& t : out) {
    std::memcpy(t.host, at, t.count * sizeof(T));
    at += t.count;
  }
}

template void attention_forward_cuda_host<float>(const AttentionProblem<float>&);
template void attention_forward_cuda_host<double>(const AttentionProblem<double>&);
template void attention_forward_cuda<float>(const AttentionProblem<float>&);
template void attention_forward_cuda<double>(const AttentionProblem<double>&);
template void batched_scores_cuda<float>(const float*, const float*, float*, int, int, int, int,
                                         float);
template void batched_scores_cuda<double>(const double*, const double*, double*, int, int, int, int,
                                          double);
template void softmax_rows_cuda<float>(const float*, float*, long, int, float, bool, SoftmaxKernel);
template void softmax_rows_cuda<double>(const double*, double*, long, int, double, bool,
                                        SoftmaxKernel);

}  // namespace attn
