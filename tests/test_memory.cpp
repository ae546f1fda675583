// test_memory.cpp: host/memory.hpp's large_allocation: aligned, writable end to end, and
// advised as huge pages (the mapping's "hg" flag in /proc/self/smaps, where Linux has it).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "host/memory.hpp"

namespace attn {
namespace {

// The VmFlags line of the mapping that holds address p, or "" when smaps cannot be read.
std::string vm_flags_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' '))
      inside = lo <= at && at < hi;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return "";
}

TEST(LargeAllocation, AlignedWritableAndAdvisedAsHugePages) {
  constexpr std::size_t kHuge = std::size_t(2) << 20;
  for (std::size_t bytes : {std::size_t(0), std::size_t(100), kHuge - 1, kHuge, 3 * kHuge + 5}) {
    auto p = large_buffer<unsigned char>(bytes);
    ASSERT_NE(p.get(), nullptr) << bytes;
    std::memset(p.get(), 0xab, bytes);
    if (bytes > 0) {
      EXPECT_EQ(p[bytes - 1], 0xab);
    }
    if (bytes < kHuge) continue;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p.get()) % kHuge, 0u) << bytes;
    const std::string flags = vm_flags_at(p.get());
    if (flags.empty()) GTEST_SKIP() << "no /proc/self/smaps";
    EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
  }
}

}  // namespace
}  // namespace attn
