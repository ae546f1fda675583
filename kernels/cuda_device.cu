// cuda_device.cu: see cuda_device.hpp (CUDA build).
#include <cuda_runtime.h>

#include <fstream>

#include "cuda_device.hpp"

namespace attn {
namespace {

std::string version_string(int v) {  // 12040 -> "12.4"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

GpuInfo query_gpu(int index) {
  GpuInfo g;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    // Without the kernel driver the runtime reports an "insufficient" driver; say what it is.
    const bool driver = std::ifstream("/proc/driver/nvidia/version").good();
    g.why_not = e == cudaErrorInsufficientDriver && !driver ? "no NVIDIA driver"
                : e == cudaErrorInsufficientDriver
                    ? "the NVIDIA driver is older than this build's CUDA runtime"
                    : cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky error state
    return g;
  }
  if (count < 1) {
    g.why_not = "no CUDA device";
    return g;
  }
  const int device = index % count;  // ranks on a node share its GPUs round-robin
  if (cudaSetDevice(device) != cudaSuccess) {
    g.why_not = "cudaSetDevice(" + std::to_string(device) + ") failed";
    cudaGetLastError();
    return g;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    g.why_not = "cudaGetDeviceProperties failed";
    return g;
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  g.present = true;
  g.name = prop.name;
  g.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  g.driver = version_string(driver);
  g.runtime = version_string(runtime);
  g.memory_gib = static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
  g.multiprocessors = prop.multiProcessorCount;
  return g;
}

}  // namespace attn
