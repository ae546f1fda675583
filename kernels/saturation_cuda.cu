// saturation_cuda.cu: the softmax-saturation pipeline on the GPU: a fill kernel (one thread per
// Philox block of four normals), the batched score GEMM and row-softmax kernels of
// attention_cuda.cu, and a row-statistics kernel (one thread per row). The host wrapper keeps its
// device buffers from call to call (per host thread, grown when a call needs more) and copies
// the statistics back through page-locked memory.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>

#include "attention.hpp"
#include "cuda_check.hpp"
#include "device_buffer.hpp"
#include "saturation.hpp"
#include "softmax.hpp"

namespace attn::saturation {
namespace {

// quads: Philox blocks (four normals each) per row.
__global__ void fill_kernel(Params p, std::uint64_t first, std::int64_t rows, std::uint32_t quads,
                            double* q, double* k) {
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * quads) return;
  const std::int64_t r = idx / quads;
  const std::uint32_t b = static_cast<std::uint32_t>(idx % quads);
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

void row_stats_cuda_device(const Params& p, std::uint64_t first, std::int64_t rows,
                           const DeviceScratch& s, double* d_out) {
  if (rows <= 0) return;
  const int n = p.keys, d = static_cast<int>(p.d_k);
  const std::uint32_t quads = static_cast<std::uint32_t>((p.normals_per_row() + 3) / 4);
  const std::int64_t fill_threads = rows * quads;
  fill_kernel<<<grid_blocks(fill_threads, 256), 256>>>(p, first, rows, quads, s.q, s.k);
  ATTN_CUDA_CHECK_LAUNCH();
  batched_scores_cuda<double>(s.q, s.k, s.scores, static_cast<int>(rows), 1, n, d, 1.0);
  const double scales[2] = {1.0, 1.0 / std::sqrt(static_cast<double>(d))};
  for (int which = 0; which < 2; ++which) {
    softmax_rows_cuda<double>(s.scores, s.weights, rows, n, scales[which], false);
    stats_kernel<<<grid_blocks(rows, 256), 256>>>(s.weights, rows, n, which, d_out);
    ATTN_CUDA_CHECK_LAUNCH();
  }
}

namespace {
// The host wrapper's device buffers and the page-locked memory its results come back through,
// per host thread. Every call waits for its work before it returns, so they may grow at the
// start of the next.
struct Scratch {
  DeviceBuffer<double> q, k, scores, weights, stats;
  PinnedBuffer<double> results;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}
}  // namespace

void row_stats_cuda(const Params& p, std::uint64_t first, std::int64_t rows, double* out) {
  if (rows <= 0) return;
  const std::size_t r = static_cast<std::size_t>(rows), n = p.keys, d = p.d_k;
  Scratch& s = scratch();
  s.q.reserve(r * d);
  s.k.reserve(r * n * d);
  s.scores.reserve(r * n);
  s.weights.reserve(r * n);
  s.stats.reserve(r * kStats);
  double* results = s.results.reserve(r * kStats);
  row_stats_cuda_device(p, first, rows, {s.q.data(), s.k.data(), s.scores.data(), s.weights.data()},
                        s.stats.data());
  const std::size_t bytes = r * kStats * sizeof(double);
  ATTN_CUDA_CHECK(cudaMemcpyAsync(results, s.stats.data(), bytes, cudaMemcpyDeviceToHost, nullptr));
  ATTN_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  std::memcpy(out, results, bytes);
}

}  // namespace attn::saturation
