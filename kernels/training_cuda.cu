// training_cuda.cu: the training sweep on the GPU. One thread per seed: it makes the seed's
// initial weights with numpy's generator (numpy_random.hpp, on the device), runs the whole
// training loop of tiny_model.hpp in registers, and writes one TrainResult. One launch per
// call, no launch per step.
#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "tiny_model.hpp"

namespace attn::tiny {
namespace {

template <class T>
__global__ void train_kernel(Config c, const std::uint64_t* __restrict__ seeds, std::int64_t n,
                             TrainOptions o, TrainResult* __restrict__ out) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = train_one<T>(c, seeds[i], o);
}

}  // namespace

template <class T>
void train_seeds_cuda(Config c, const std::uint64_t* seeds, std::int64_t n, const TrainOptions& o,
                      TrainResult* out) {
  if (n <= 0) return;
  std::uint64_t* d_seeds = nullptr;
  TrainResult* d_out = nullptr;
  try {
    ATTN_CUDA_CHECK(cudaMalloc(&d_seeds, n * sizeof(std::uint64_t)));
    ATTN_CUDA_CHECK(cudaMalloc(&d_out, n * sizeof(TrainResult)));
    ATTN_CUDA_CHECK(cudaMemcpy(d_seeds, seeds, n * sizeof(std::uint64_t), cudaMemcpyHostToDevice));
    constexpr int kThreads = 128;
    train_kernel<T><<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(
        c, d_seeds, n, o, d_out);
    ATTN_CUDA_CHECK_LAUNCH();
    ATTN_CUDA_CHECK(cudaMemcpy(out, d_out, n * sizeof(TrainResult), cudaMemcpyDeviceToHost));
  } catch (...) {
    cudaFree(d_seeds);
    cudaFree(d_out);
    throw;
  }
  ATTN_CUDA_CHECK(cudaFree(d_seeds));
  ATTN_CUDA_CHECK(cudaFree(d_out));
}

template void train_seeds_cuda<double>(Config, const std::uint64_t*, std::int64_t,
                                       const TrainOptions&, TrainResult*);
template void train_seeds_cuda<float>(Config, const std::uint64_t*, std::int64_t,
                                      const TrainOptions&, TrainResult*);

}  // namespace attn::tiny
