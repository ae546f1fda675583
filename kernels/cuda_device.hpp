// cuda_device.hpp: is there a usable GPU, and which. Compiled into every build; without CUDA it
// always answers "none".
#pragma once

#include <string>

namespace attn {

struct GpuInfo {
  bool present = false;            // a usable GPU was chosen and made current
  int index = -1;                  // its CUDA device ordinal
  int count = 0;                   // CUDA devices the runtime sees (usable or not)
  std::string name;                // e.g. "NVIDIA H200"
  std::string compute_capability;  // e.g. "9.0"
  std::string driver;              // CUDA driver version, e.g. "13.0"
  std::string runtime;             // CUDA runtime version the binary uses
  std::string targets;             // the GPU targets this build carries, e.g. "90-real 75-virtual"
  double memory_gib = 0;
  int multiprocessors = 0;
  std::string why_not;      // when !present: the reason, for the one-line notice
  std::string passed_over;  // devices tried before the chosen one and why each was unusable
};

// Chooses a GPU and makes it the calling thread's current device. requested < 0: the first
// usable device in ordinal order, starting at device local_rank % count (an MPI rank's rank on
// its node, so that ranks spread over the node's GPUs); requested >= 0: that device or none. A
// device is usable when its compute mode is not "prohibited", a context can be created on it
// (cudaSetDevice then cudaFree(0): fails for a GPU held by another process in exclusive mode), and
// this build's kernels can run on it (cudaFuncGetAttributes on a probe kernel: fails with "no
// kernel image" for a GPU older than the built targets). Any failure means "no device" with the
// reason in why_not; nothing throws. The answer is computed once per process and per `requested`.
GpuInfo select_gpu(int requested = -1, int local_rank = 0);

// select_gpu() with the device named by the environment variable ATTNLAB_GPU (an ordinal) or,
// without it, the first usable one: for the gpu tests and benchmarks, which take no options.
GpuInfo query_gpu();

}  // namespace attn
