// cuda_device.cu: see cuda_device.hpp (CUDA build).
#include <cuda_runtime.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

#include "cuda_device.hpp"

#if !defined(ATTNLAB_CUDA_TARGETS)
#define ATTNLAB_CUDA_TARGETS "unknown"
#endif

namespace attn {
namespace {

// Does nothing; cudaFuncGetAttributes on it asks whether this build has code for the device.
__global__ void probe_kernel() {}

std::string version_string(int v) {  // 12040 -> "12.4"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string error_text(cudaError_t e) {
  cudaGetLastError();  // clear the error state that a failed call leaves behind
  return cudaGetErrorString(e);
}

// Empty when device i is usable (and then current), else why not.
std::string try_device(int i, const cudaDeviceProp& prop) {
  const std::string cc = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  int mode = cudaComputeModeDefault;  // CUDA 13 dropped cudaDeviceProp::computeMode
  cudaError_t e = cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, i);
  if (e != cudaSuccess) return "cannot read the compute mode (" + error_text(e) + ")";
  if (mode == cudaComputeModeProhibited) return "compute mode is prohibited";
  e = cudaSetDevice(i);
  if (e == cudaSuccess) e = cudaFree(nullptr);  // creates the context
  if (e != cudaSuccess) return "cannot create a context (" + error_text(e) + ")";
  cudaFuncAttributes attr{};
  e = cudaFuncGetAttributes(&attr, probe_kernel);
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorUnsupportedPtxVersion ||
      e == cudaErrorInvalidDeviceFunction)
    return "compute capability " + cc + " is not among this build's targets (" +
           ATTNLAB_CUDA_TARGETS + ")";
  if (e != cudaSuccess) return "cannot load this build's kernels (" + error_text(e) + ")";
  return "";
}

GpuInfo select_uncached(int requested, int local_rank) {
  GpuInfo g;
  g.targets = ATTNLAB_CUDA_TARGETS;
  const cudaError_t e = cudaGetDeviceCount(&g.count);
  if (e != cudaSuccess) {
    // Without the kernel driver the runtime reports an "insufficient" driver; say what it is.
    const bool driver = std::ifstream("/proc/driver/nvidia/version").good();
    g.count = 0;
    g.why_not = e == cudaErrorInsufficientDriver && !driver ? "no NVIDIA driver"
                : e == cudaErrorInsufficientDriver
                    ? "the NVIDIA driver is older than this build's CUDA runtime"
                    : error_text(e);
    return g;
  }
  if (g.count < 1) {
    g.why_not = "no CUDA device";
    return g;
  }
  if (requested >= g.count) {
    g.why_not = "--gpu " + std::to_string(requested) + ": the runtime sees " +
                std::to_string(g.count) + " CUDA device(s), numbered from 0";
    return g;
  }
  // --gpu N: that device alone. Else every device once, starting at the local rank's share (MPI
  // ranks on a node spread over its GPUs round-robin; one process starts at device 0).
  const int first = requested >= 0 ? requested : local_rank % g.count;
  const int tries = requested >= 0 ? 1 : g.count;
  for (int t = 0; t < tries; ++t) {
    const int i = (first + t) % g.count;
    cudaDeviceProp prop{};
    std::string why;
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess)
      why = "cudaGetDeviceProperties failed";
    else
      why = try_device(i, prop);
    if (!why.empty()) {
      const std::string line = "GPU " + std::to_string(i) + " (" + prop.name + "): " + why;
      g.passed_over += (g.passed_over.empty() ? "" : "; ") + line;
      continue;
    }
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    g.present = true;
    g.index = i;
    g.name = prop.name;
    g.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    g.driver = version_string(driver);
    g.runtime = version_string(runtime);
    g.memory_gib = static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
    g.multiprocessors = prop.multiProcessorCount;
    return g;
  }
  g.why_not = g.passed_over.empty() ? "no usable CUDA device" : g.passed_over;
  return g;
}

}  // namespace

GpuInfo select_gpu(int requested, int local_rank) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, GpuInfo> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  const std::pair<int, int> key{requested, requested >= 0 ? 0 : local_rank};
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, select_uncached(key.first, key.second)).first;
  if (it->second.present) cudaSetDevice(it->second.index);  // current on this thread too
  return it->second;
}

GpuInfo query_gpu() {
  const char* env = std::getenv("ATTNLAB_GPU");
  if (!env || !*env) return select_gpu(-1);
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 0 || n > 1 << 20) {
    GpuInfo g;
    g.why_not = std::string("ATTNLAB_GPU=") + env + " is not a device ordinal";
    return g;
  }
  return select_gpu(static_cast<int>(n));
}

}  // namespace attn
