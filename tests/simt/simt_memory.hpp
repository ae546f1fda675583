// simt_memory.hpp: the SIMT emulation's view of device memory, for the emulated cuBLAS and for
// tests (counts of allocations and of bytes copied between host and device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace simt {

struct Stats {
  std::uint64_t device_allocations = 0;      // cudaMalloc calls
  std::uint64_t device_bytes_allocated = 0;  // their bytes
  std::uint64_t pinned_allocations = 0;      // cudaMallocHost / cudaHostAlloc calls
  std::uint64_t pageable_copy_bytes = 0;     // host <-> device through pageable host memory
  std::uint64_t pinned_copy_bytes = 0;       // host <-> device through page-locked host memory
};
// Since the last clear_stats().
Stats stats();
void clear_stats();

namespace detail {
// Empty when [p, p + bytes) lies inside one device allocation, else why not.
std::string device_range(const void* p, std::size_t bytes);
bool is_device(const void* p);
}  // namespace detail

}  // namespace simt
