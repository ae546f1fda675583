// log1p_glibc.hpp: glibc 2.36's log1p (__log1p_fma) as one function for host and device, so that
// a kernel's numpy normals (the ziggurat's tail, numpy_random.hpp) get the bits the CPU gets
// from the C library rather than CUDA's log1p, which differs from it in the last place for some
// arguments: an initial weight one ulp off, which a training can grow.
//
// The method is fdlibm's (sysdeps/ieee754/dbl-64/s_log1p.c, SunPro 1993): 1 + x = 2^k (1 + f)
// with √2/2 < 1 + f < √2, a correction c = ((1 + x) − u)/u for the rounding of u = 1 + x, and
// log1p(f) = f − (hfsq − s (hfsq + R)), s = f/(2 + f), hfsq = f²/2, R a degree-14 polynomial in s
// (seven coefficients in z = s²). glibc's ifunc runs the copy built with -mfma -mavx2 on a CPU
// with FMA and AVX2, where GCC fused some of its a * b + c: each fma below is one vfmadd of
// __log1p_fma as Debian 12's libm has it (gdb -batch -ex 'disassemble __log1p_fma'
// /lib/x86_64-linux-gnu/libm.so.6), each other operation one rounded instruction, so the result
// is that library's, bit for bit (tests/test_lanes.cpp compares them on the host).
#pragma once

#include <cmath>
#include <cstdint>

#include "exp_glibc.hpp"  // its bits_of and double_of
#include "hd.hpp"

namespace attn {
namespace log1p_glibc_detail {

using exp_glibc_detail::bits_of;
using exp_glibc_detail::double_of;
// u with its high 32 bits replaced by high (its low 32 bits kept).
ATTN_HD inline double with_high_word(double u, std::uint32_t high) {
  return double_of((static_cast<std::uint64_t>(high) << 32) | (bits_of(u) & 0xffffffffu));
}

// ln 2 = kLn2Hi + kLn2Lo, kLn2Hi with its low 32 bits 0 (k kLn2Hi exact for |k| < 2000).
constexpr double kLn2Hi = 0x1.62e42feep-1;
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
// The polynomial R(s) = Lp1 s² + Lp2 s⁴ + ... + Lp7 s¹⁴.
constexpr double kLp1 = 0x1.5555555555593p-1;
constexpr double kLp2 = 0x1.999999997fa04p-2;
constexpr double kLp3 = 0x1.2492494229359p-2;
constexpr double kLp4 = 0x1.c71c51d8e78afp-3;
constexpr double kLp5 = 0x1.7466496cb03dep-3;
constexpr double kLp6 = 0x1.39a09d078c69fp-3;
constexpr double kLp7 = 0x1.2f112df3e5244p-3;
constexpr double kTwo54 = 0x1p54;
constexpr double kTwoThirds = 0x1.5555555555555p-1;

}  // namespace log1p_glibc_detail

// log1p(x) with glibc's __log1p_fma bits on host and device (above). Special values as glibc:
// log1p(−1) = −inf, NaN below −1 and for NaN, +inf for +inf, x itself for |x| < 2^-54.
ATTN_HD inline double log1p_glibc(double x) {
  using namespace log1p_glibc_detail;
  const std::int32_t hx = static_cast<std::int32_t>(bits_of(x) >> 32);
  const std::int32_t ax = hx & 0x7fffffff;
  int k = 1;
  double f = 0, c = 0, u = 0;
  std::int32_t hu = 0;
  if (hx < 0x3fda827a) {     // x < 0.41422
    if (ax >= 0x3ff00000) {  // x <= −1
      if (x == -1.0) return -kTwo54 / 0.0;
      return (x - x) / (x - x);
    }
    if (ax < 0x3e200000) {  // |x| < 2^-29
      if (ax < 0x3c900000) return x;
      return fma(-(x * x), 0.5, x);  // x − x²/2
    }
    if (hx > 0 || hx <= static_cast<std::int32_t>(0xbfd2bec3u)) {  // −0.2929 < x < 0.41422
      k = 0;
      f = x;
      hu = 1;
    }
  } else if (hx >= 0x7ff00000) {  // inf, nan
    return x + x;
  }
  if (k != 0) {
    if (hx < 0x43400000) {  // x < 2^53
      u = 1.0 + x;
      hu = static_cast<std::int32_t>(bits_of(u) >> 32);
      k = (hu >> 20) - 1023;
      c = (k > 0 ? 1.0 - (u - x) : x - (u - 1.0)) / u;
    } else {
      u = x;
      hu = hx;
      k = (hu >> 20) - 1023;
      c = 0;
    }
    hu &= 0x000fffff;
    if (hu < 0x6a09e) {  // u normalized into [1, √2)
      u = with_high_word(u, static_cast<std::uint32_t>(hu) | 0x3ff00000u);
    } else {  // u/2 into [√2/2, 1)
      k += 1;
      u = with_high_word(u, static_cast<std::uint32_t>(hu) | 0x3fe00000u);
      hu = (0x00100000 - hu) >> 2;
    }
    f = u - 1.0;
  }
  const double hfsq = (0.5 * f) * f;
  const double dk = static_cast<double>(k);
  if (hu == 0) {  // |f| < 2^-20
    if (f == 0.0) {
      if (k == 0) return 0.0;
      return fma(dk, kLn2Hi, fma(dk, kLn2Lo, c));
    }
    const double r = fma(-f, kTwoThirds, 1.0) * hfsq;
    if (k == 0) return f - r;
    return fma(dk, kLn2Hi, -((r - fma(dk, kLn2Lo, c)) - f));
  }
  const double s = f / (2.0 + f);
  const double z = s * s;
  const double r2 = fma(z, kLp3, kLp2), r3 = fma(z, kLp5, kLp4), r4 = fma(z, kLp7, kLp6);
  const double z2 = z * z, z4 = z2 * z2, z6 = z4 * z2;
  const double r = fma(z6, r4, fma(z4, r3, fma(z, kLp1, z2 * r2)));
  const double t = s * (hfsq + r);
  if (k == 0) return f - (hfsq - t);
  return fma(dk, kLn2Hi, -((hfsq - (t + fma(dk, kLn2Lo, c))) - f));
}

}  // namespace attn
