// memory.hpp: how much memory this process can still take, and byte counts for messages. Every
// refusal of a request too large for the machine asks here.
#pragma once

#include <string>

namespace attn {

// Bytes this process can still allocate: the least of the address-space and data limits
// (setrlimit, `ulimit -v`) less what it uses, the cgroup's memory.max less its usage, and the
// system's MemAvailable; the physical memory when none of them can be read.
double memory_available();

// "1.23 GB" (decimal gigabytes, three significant digits), for messages.
std::string human_bytes(double bytes);

}  // namespace attn
