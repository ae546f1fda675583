// cuda_device_none.cpp: query_gpu() for a build without CUDA.
#include "cuda_device.hpp"

namespace attn {

GpuInfo query_gpu(int index) {
  (void)index;
  GpuInfo g;
  g.why_not = "this build has no CUDA backend";
  return g;
}

}  // namespace attn
