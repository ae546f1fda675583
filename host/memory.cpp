// memory.cpp: see memory.hpp.
#include "host/memory.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <new>

namespace attn {

void* large_allocation(std::size_t bytes) {
  constexpr std::size_t kHuge = std::size_t(2) << 20;
  if (bytes < kHuge) {
    if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
    throw std::bad_alloc();
  }
  const std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;  // aligned_alloc's rule
  void* p = std::aligned_alloc(kHuge, rounded);
  if (p == nullptr) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
  madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without huge pages, plain pages
#endif
  return p;
}

double memory_available() {
  double avail = INFINITY;
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  double vm_size = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long pages = 0;
    if (std::fscanf(f, "%lu", &pages) == 1) vm_size = static_cast<double>(pages) * page;
    std::fclose(f);
  }
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit r {};
    if (getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
      avail = std::fmin(avail, static_cast<double>(r.rlim_cur) - vm_size);
  }
  const auto read_number = [](const char* path, double& out) {
    std::FILE* f = std::fopen(path, "r");
    if (!f) return false;
    const bool ok = std::fscanf(f, "%lf", &out) == 1;
    std::fclose(f);
    return ok;
  };
  double max = 0, current = 0;
  if (read_number("/sys/fs/cgroup/memory.max", max) &&
      read_number("/sys/fs/cgroup/memory.current", current))
    avail = std::fmin(avail, max - current);
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    double kb;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %lf kB", &kb) == 1) avail = std::fmin(avail, kb * 1024);
    std::fclose(f);
  }
  if (std::isinf(avail))
    avail =
        static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  return avail;
}

std::string human_bytes(double bytes) {
  static const char* const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (u < 5 && std::fabs(bytes) >= 999.5) {
    bytes /= 1000;
    ++u;
  }
  char s[32];
  std::snprintf(s, sizeof s, std::fabs(bytes) >= 999.5 ? "%.0f %s" : "%.3g %s", bytes, units[u]);
  return s;
}

}  // namespace attn
