// cuda_device.hpp: is there a GPU, and which. Compiled into every build; without CUDA it always
// answers "none".
#pragma once

#include <string>

namespace attn {

struct GpuInfo {
  bool present = false;
  std::string name;                // e.g. "NVIDIA H200"
  std::string compute_capability;  // e.g. "9.0"
  std::string driver;              // CUDA driver version, e.g. "13.0"
  std::string runtime;             // CUDA runtime version the binary uses
  double memory_gib = 0;
  int multiprocessors = 0;
  std::string why_not;  // when !present: the reason, for the one-line notice
};

// Asks the CUDA runtime for device `index` modulo the device count (an MPI rank's rank on its
// node, so that each rank drives its own GPU) and makes it the current device. Any error means
// "no device" (DESIGN.md).
GpuInfo query_gpu(int index = 0);

}  // namespace attn
