// saturation_cuda.cu: the softmax-saturation pipeline on the GPU: a fill kernel (one thread per
// block of four normals), the batched score GEMM and row-softmax kernels of attention_cuda.cu,
// and a row-statistics kernel (one thread per row).
#include <cuda_runtime.h>

#include <cmath>

#include "attention.hpp"
#include "cuda_check.hpp"
#include "saturation.hpp"
#include "softmax.hpp"

namespace attn::saturation {
namespace {

__global__ void fill_kernel(Params p, std::uint64_t first, std::int64_t rows, std::uint32_t blocks,
                            double* q, double* k) {
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * blocks) return;
  const std::int64_t r = idx / blocks;
  const std::uint32_t b = static_cast<std::uint32_t>(idx % blocks);
  fill_block(p, first + r, b, q + r * p.d_k, k + r * p.keys * static_cast<std::int64_t>(p.d_k));
}

__global__ void stats_kernel(const double* weights, std::int64_t rows, int n, int which,
                             double* out) {
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const RowStats s = row_stats(weights + r * n, n);
  double* o = out + r * kStats + 3 * which;
  o[0] = s.max_weight;
  o[1] = s.entropy;
  o[2] = s.jacobian_norm;
}

}  // namespace

void row_stats_cuda(const Params& p, std::uint64_t first, std::int64_t rows, double* out) {
  if (rows <= 0) return;
  const int n = p.keys, d = static_cast<int>(p.d_k);
  const std::uint32_t blocks = static_cast<std::uint32_t>((p.normals_per_row() + 3) / 4);
  double *q = nullptr, *k = nullptr, *scores = nullptr, *weights = nullptr, *stats = nullptr;
  try {
    ATTN_CUDA_CHECK(cudaMalloc(&q, rows * d * sizeof(double)));
    ATTN_CUDA_CHECK(cudaMalloc(&k, rows * n * d * sizeof(double)));
    ATTN_CUDA_CHECK(cudaMalloc(&scores, rows * n * sizeof(double)));
    ATTN_CUDA_CHECK(cudaMalloc(&weights, rows * n * sizeof(double)));
    ATTN_CUDA_CHECK(cudaMalloc(&stats, rows * kStats * sizeof(double)));
    const std::int64_t fill_threads = rows * blocks;
    fill_kernel<<<static_cast<unsigned>((fill_threads + 255) / 256), 256>>>(p, first, rows, blocks,
                                                                            q, k);
    ATTN_CUDA_CHECK_LAUNCH();
    batched_scores_cuda<double>(q, k, scores, static_cast<int>(rows), 1, n, d, 1.0);
    const double scales[2] = {1.0, 1.0 / std::sqrt(static_cast<double>(d))};
    for (int which = 0; which < 2; ++which) {
      softmax_rows_cuda<double>(scores, weights, rows, n, scales[which], false);
      stats_kernel<<<static_cast<unsigned>((rows + 255) / 256), 256>>>(weights, rows, n, which,
                                                                       stats);
      ATTN_CUDA_CHECK_LAUNCH();
    }
    ATTN_CUDA_CHECK(cudaMemcpy(out, stats, rows * kStats * sizeof(double), cudaMemcpyDeviceToHost));
  } catch (...) {
    for (double* ptr : {q, k, scores, weights, stats}) cudaFree(ptr);
    throw;
  }
  for (double* ptr : {q, k, scores, weights, stats}) ATTN_CUDA_CHECK(cudaFree(ptr));
}

}  // namespace attn::saturation
