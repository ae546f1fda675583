// cuda_device_none.cpp: select_gpu() and query_gpu() for a build without CUDA.
#include "cuda_device.hpp"

namespace attn {

GpuInfo select_gpu(int, int) {
  GpuInfo g;
  g.why_not = "this build has no CUDA backend";
  return g;
}

GpuInfo query_gpu() { return select_gpu(-1); }

}  // namespace attn
