// training_cuda.cu: the training sweep on the GPU. One thread per seed: it makes the seed's
// initial weights with numpy's generator (numpy_random.hpp, on the device), runs the whole
// training loop of tiny_model.hpp in registers, and writes one TrainResult. One launch per
// call, no launch per step. The number of trained matrices is a constant in each branch of the
// kernel, so that the loops over them unroll and no parameter needs a stack frame (ptxas: 0
// bytes stack, tests/test_residency.cpp).
#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "device_buffer.hpp"
#include "tiny_model.hpp"

namespace attn::tiny {
namespace {

template <class T>
__global__ void train_kernel(Config c, const std::uint64_t* __restrict__ seeds, std::int64_t n,
                             TrainOptions o, TrainResult* __restrict__ out) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Params<T> p = initial_params<T>(c, seeds[i]);
  if (trains_values(c))
    train(p, 3, o);
  else
    train(p, 2, o);
  out[i] = result_of(p);
}

}  // namespace

template <class T>
void train_seeds_cuda_device(Config c, const std::uint64_t* d_seeds, std::int64_t n,
                             const TrainOptions& o, TrainResult* d_out) {
  if (n <= 0) return;
  constexpr int kThreads = 128;
  train_kernel<T><<<grid_blocks(n, kThreads), kThreads>>>(c, d_seeds, n, o, d_out);
  ATTN_CUDA_CHECK_LAUNCH();
}

template <class T>
void train_seeds_cuda(Config c, const std::uint64_t* seeds, std::int64_t n, const TrainOptions& o,
                      TrainResult* out) {
  if (n <= 0) return;
  const auto d_seeds = DeviceBuffer<std::uint64_t>::from_host(seeds, n);
  DeviceBuffer<TrainResult> d_out(n);
  train_seeds_cuda_device<T>(c, d_seeds.data(), n, o, d_out.data());
  d_out.download(out);
}

template void train_seeds_cuda_device<double>(Config, const std::uint64_t*, std::int64_t,
                                              const TrainOptions&, TrainResult*);
template void train_seeds_cuda_device<float>(Config, const std::uint64_t*, std::int64_t,
                                             const TrainOptions&, TrainResult*);
template void train_seeds_cuda<double>(Config, const std::uint64_t*, std::int64_t,
                                       const TrainOptions&, TrainResult*);
template void train_seeds_cuda<float>(Config, const std::uint64_t*, std::int64_t,
                                      const TrainOptions&, TrainResult*);

}  // namespace attn::tiny
