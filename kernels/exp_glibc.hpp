// exp_glibc.hpp: glibc 2.36's exp (__exp_fma) as one function for host and device, so that a
// kernel's exp gives the bits the CPU twins get from the C library (std::exp on a CPU with FMA,
// exp_fma.cpp's lane packs) rather than CUDA's exp, which differs from it in the last place for
// some arguments, a difference a training grows over its steps. The steps, constants and table
// are exp_fma.cpp's, whose header lists them (sysdeps/ieee754/dbl-64/e_exp.c;
// exp_fma_table.inc), for 2^-54 <= |x| < 512; 1 + x below; |x| >= 512, inf and nan go to the
// platform's exp (the C library's on the host, CUDA's on the device: overflow and underflow,
// rare in a softmax).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "hd.hpp"

namespace attn {
namespace exp_glibc_detail {
#include "exp_fma_table.inc"

struct Table {
  std::uint64_t v[256];
};
constexpr Table table() {
  Table t{};
  for (int i = 0; i < 256; ++i) t.v[i] = kExpTab[i];
  return t;
}
#if defined(__CUDACC__)
__constant__ Table kDeviceTable = table();  // the table where the device reads it
#endif

ATTN_HD inline std::uint64_t bits_of(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
ATTN_HD inline double double_of(std::uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}
}  // namespace exp_glibc_detail

// exp(x) with glibc's __exp_fma bits on host and device (above).
ATTN_HD inline double exp_glibc(double x) {
  using namespace exp_glibc_detail;
#if defined(__CUDA_ARCH__)
  const std::uint64_t* tab = kDeviceTable.v;
#else
  const std::uint64_t* tab = kExpTab;
#endif
  const unsigned abstop = static_cast<unsigned>(bits_of(x) >> 52) & 0x7ff;
  if (abstop < 0x3c9) return 1.0 + x;
  if (abstop > 0x407) return exp(x);
  const double kd_shifted = fma(x, kExp_invln2N, kExp_shift);
  const std::uint64_t ki = bits_of(kd_shifted);
  const double kd = kd_shifted - kExp_shift;
  const double r = fma(kd, kExp_negln2loN, fma(kd, kExp_negln2hiN, x));
  const unsigned j = static_cast<unsigned>(2 * (ki & 0x7f));
  const double tail = double_of(tab[j]);
  const double scale = double_of(tab[j + 1] + (ki << 45));
  const double r2 = r * r;
  const double tmp =
      fma(r2 * r2, fma(r, kExp_C5, kExp_C4), fma(fma(r, kExp_C3, kExp_C2), r2, tail + r));
  return fma(scale, tmp, scale);
}

}  // namespace attn
