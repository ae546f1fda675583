// head_cuda.cu: the general head's training on the GPU (head.hpp), batched over seeds.
//
// One seed per thread. A launch trains every seed of the call through a slice of steps
// [s0, s1): the first slice's threads draw their seed's start with numpy's generator
// (numpy_random.hpp, on the device) and run the forward pass; every slice runs head.hpp's
// train_steps on the thread's workspace; the last writes the results. Workspaces live in one
// device buffer, element e of seed i at [e * count + i], so that the threads of a warp
// (neighbouring seeds) read and write neighbouring addresses in every step of the shared loop.
// The workspace holds all of a seed's state between steps, so slicing a training across
// launches changes no arithmetic: the host wrapper slices so that the host can ask for a stop
// between launches. Parameters and activations stay resident for the whole call; the only
// copies are the task (X, Y) and the seeds in, the results out, once per call; nothing is
// allocated per step or per slice.
//
// Why one model per thread and not strided-batched GEMM (cuBLAS, seeds as the batch): at the
// sizes this table is for (n = 8, d = 16: a seed's products are 8×16×16, about 4 kFLOP each),
// a sequential step is ~20 dependent products and softmax/elementwise kernels, i.e. ~20,000
// launches per 1,000 steps, each streaming the whole batch's activations through HBM, and cuBLAS
// runs such tiny matrices far below peak. One thread per seed has no launches per step and keeps
// its working rows in L1/L2. For large shapes (d_k, n in the hundreds) the GEMM form would win;
// it is not built yet (docs/GPU.md).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cuda_check.hpp"
#include "device_buffer.hpp"
#include "head.hpp"

namespace attn::head {
namespace {

// Element e of this thread's seed in the interleaved workspace.
struct Strided {
  double* base;
  std::int64_t stride;
  __device__ double& operator[](std::int64_t e) const { return base[e * stride]; }
};

struct Store {
  Strided w;
  __device__ void operator()(std::int64_t at, double v) const { w[at] = v; }
};

struct Get {
  Strided w;
  __device__ double operator()(std::int64_t at) const { return w[at]; }
};

__global__ void train_kernel(Model m, const std::uint64_t* __restrict__ seeds, std::int64_t count,
                             double* __restrict__ workspace, double* __restrict__ out, int s0,
                             int s1) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const Strided w{workspace + i, count};
  if (s0 == 0) {
    Store store{w};
    initial_weights(m, seeds[i], store);
    start<double>(m, w);
  }
  train_steps<double>(m, w, s0, s1);
  if (s1 == m.steps) {
    Get get{w};
    write_result(m, get, out + i * result_size(m));
  }
}

}  // namespace

void train_seeds_cuda_device(const Model& m, const std::uint64_t* d_seeds, std::int64_t count,
                             double* d_workspace, double* d_out, int s0, int s1) {
  if (!(0 <= s0 && s0 <= s1 && s1 <= m.steps))
    throw std::invalid_argument("train_seeds_cuda_device: steps [" + std::to_string(s0) + ", " +
                                std::to_string(s1) + ") outside [0, " + std::to_string(m.steps) +
                                "]");
  if (count <= 0) return;
  constexpr int kThreads = 128;
  train_kernel<<<grid_blocks(count, kThreads), kThreads>>>(m, d_seeds, count, d_workspace, d_out,
                                                           s0, s1);
  ATTN_CUDA_CHECK_LAUNCH();
}

void train_seeds_cuda(const Model& host_model, const std::uint64_t* seeds, std::int64_t count,
                      double* out, int steps_per_slice, const Monitor& monitor) {
  if (count <= 0) return;
  const std::size_t n = static_cast<std::size_t>(count);
  // The inputs, stacked (head.hpp's Model): once per call, shared by every seed.
  const std::size_t rows = static_cast<std::size_t>(host_model.inputs) * host_model.n;
  const auto d_x = DeviceBuffer<double>::from_host(host_model.x, rows * host_model.d_model);
  const auto d_y = DeviceBuffer<double>::from_host(host_model.y, rows * host_model.d_out());
  const auto d_seeds = DeviceBuffer<std::uint64_t>::from_host(seeds, n);
  DeviceBuffer<double> d_ws(n * static_cast<std::size_t>(layout(host_model).total));
  DeviceBuffer<double> d_out(n * static_cast<std::size_t>(result_size(host_model)));
  Model m = host_model;
  m.x = d_x.data();
  m.y = d_y.data();
  const int slice = steps_per_slice > 0 ? steps_per_slice : m.steps;
  // One launch even for zero steps: it draws the start and writes the results.
  for (int s0 = 0;;) {
    const int s1 = m.steps - s0 > slice ? s0 + slice : m.steps;
    train_seeds_cuda_device(m, d_seeds.data(), count, d_ws.data(), d_out.data(), s0, s1);
    if (s1 == m.steps) break;
    // Wait for the slice, so that the stop test comes between slices and not all at once.
    ATTN_CUDA_CHECK(cudaDeviceSynchronize());
    monitor.stop_point();
    s0 = s1;
  }
  d_out.download(out);
}

}  // namespace attn::head
