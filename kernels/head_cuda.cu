// head_cuda.cu: the general head's training on the GPU (head.hpp), batched over seeds.
//
// One seed per thread, the whole training loop in one launch: the thread draws its seed's start
// with numpy's generator (numpy_random.hpp, on the device), then runs head.hpp's train() on its
// workspace, and writes its results. Workspaces live in one device buffer, element e of seed i at
// [e * count + i], so that the threads of a warp (neighbouring seeds) read and write neighbouring
// addresses in every step of the shared loop. Parameters and activations stay resident for the
// whole run; the only copies are the task (X, Y) and the seeds in, the results out, once per
// call; nothing is allocated per step.
//
// Why one model per thread and not strided-batched GEMM (cuBLAS, seeds as the batch): at the
// sizes this table is for (n = 8, d = 16: a seed's products are 8×16×16, about 4 kFLOP each),
// a sequential step is ~20 dependent products and softmax/elementwise kernels, i.e. ~20,000
// launches per 1,000 steps, each streaming the whole batch's activations through HBM, and cuBLAS
// runs such tiny matrices far below peak. One thread per seed has no launches per step and keeps
// its working rows in L1/L2. For large shapes (d_k, n in the hundreds) the GEMM form would win;
// it is not built yet (README, "GPU").
#include <cuda_runtime.h>

#include "cuda_check.hpp"
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
                             double* __restrict__ workspace, double* __restrict__ out) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const Strided w{workspace + i, count};
  Store store{w};
  initial_weights(m, seeds[i], store);
  train<double>(m, w);
  Get get{w};
  write_result(m, get, out + i * result_size(m));
}

// A device allocation freed on every path.
struct DeviceArray {
  void* p = nullptr;
  explicit DeviceArray(std::size_t bytes) { ATTN_CUDA_CHECK(cudaMalloc(&p, bytes)); }
  ~DeviceArray() { cudaFree(p); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

}  // namespace

void train_seeds_cuda(const Model& host_model, const std::uint64_t* seeds, std::int64_t count,
                      double* out) {
  if (count <= 0) return;
  const std::size_t nx = static_cast<std::size_t>(host_model.n) * host_model.d_model;
  const std::size_t ny = static_cast<std::size_t>(host_model.n) * host_model.d_v;
  const std::size_t results = static_cast<std::size_t>(count) * result_size(host_model);
  DeviceArray d_x(nx * sizeof(double)), d_y(ny * sizeof(double));
  DeviceArray d_seeds(count * sizeof(std::uint64_t)), d_out(results * sizeof(double));
  DeviceArray d_ws(static_cast<std::size_t>(count) * layout(host_model).total * sizeof(double));
  ATTN_CUDA_CHECK(cudaMemcpy(d_x.p, host_model.x, nx * sizeof(double), cudaMemcpyHostToDevice));
  ATTN_CUDA_CHECK(cudaMemcpy(d_y.p, host_model.y, ny * sizeof(double), cudaMemcpyHostToDevice));
  ATTN_CUDA_CHECK(
      cudaMemcpy(d_seeds.p, seeds, count * sizeof(std::uint64_t), cudaMemcpyHostToDevice));
  Model m = host_model;
  m.x = d_x.as<double>();
  m.y = d_y.as<double>();
  constexpr int kThreads = 128;
  train_kernel<<<static_cast<unsigned>((count + kThreads - 1) / kThreads), kThreads>>>(
      m, d_seeds.as<std::uint64_t>(), count, d_ws.as<double>(), d_out.as<double>());
  ATTN_CUDA_CHECK_LAUNCH();
  ATTN_CUDA_CHECK(cudaMemcpy(out, d_out.p, results * sizeof(double), cudaMemcpyDeviceToHost));
}

}  // namespace attn::head
