// memory.hpp: how much memory this process can still take, and byte counts for messages. Every
// refusal of a request too large for the machine asks here.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

namespace attn {

// Bytes this process can still allocate: the least of the address-space and data limits
// (setrlimit, `ulimit -v`) less what it uses, the cgroup's memory.max less its usage, and the
// system's MemAvailable; the physical memory when none of them can be read.
double memory_available();

// `bytes` of memory for results that are large and written once (std::free releases it):
// from 2 MiB up aligned to 2 MiB and advised as huge pages (Linux's transparent huge pages,
// where enabled), so that first writing a gigabyte of results takes hundreds of page faults,
// not hundreds of thousands. Throws std::bad_alloc.
void* large_allocation(std::size_t bytes);

struct FreeDeleter {
  void operator()(void* p) const noexcept { std::free(p); }
};
// large_allocation for `count` T (T trivial).
template <class T>
std::unique_ptr<T[], FreeDeleter> large_buffer(std::size_t count) {
  return std::unique_ptr<T[], FreeDeleter>(static_cast<T*>(large_allocation(count * sizeof(T))));
}

// "4.94 kB", "1.23 GB": decimal units from bytes to petabytes, three significant digits, for
// messages.
std::string human_bytes(double bytes);

}  // namespace attn
