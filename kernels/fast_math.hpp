// fast_math.hpp: float32 log and sin/cos for Box-Muller, identical on host and device.
//
// Built only from integer bit operations, float adds/multiplies and explicit fmaf, all of which
// IEEE 754 rounds the same way on a CPU with FMA and on a GPU. So the CPU twin and the CUDA
// kernel produce the same bits (nvcc builds with -fmad=false and the host with
// -ffp-contract=off, so neither compiler fuses operations on its own).
// Coefficients: tools/fit_polynomials.py (least squares on Chebyshev points, rounded to float),
// which also reports the worst error: log 1.1 ulp, sin 1.6 ulp, cos 0.9 ulp.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "hd.hpp"

namespace attn::fm {

ATTN_HD ATTN_INLINE std::int32_t float_bits(float x) {
#if ATTN_DEVICE_CODE
  return __float_as_int(x);
#else
  std::int32_t i;
  std::memcpy(&i, &x, sizeof i);
  return i;
#endif
}

ATTN_HD ATTN_INLINE float bits_float(std::int32_t i) {
#if ATTN_DEVICE_CODE
  return __int_as_float(i);
#else
  float x;
  std::memcpy(&x, &i, sizeof x);
  return x;
#endif
}

ATTN_HD ATTN_INLINE float fma(float a, float b, float c) {
#if ATTN_DEVICE_CODE
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Natural log of a positive, normal, finite float (callers guarantee it: x in [2^-32, 1]).
// x = m * 2^e with m in [sqrt(1/2), sqrt(2)); ln x = e ln 2 + log1p(m - 1), the latter as
// f + f^2 P(f) with P of degree 7.
ATTN_HD ATTN_INLINE float log_positive(float x) {
  const std::int32_t bits = float_bits(x);
  const std::int32_t e = (bits - 0x3f3504f3) >> 23;  // 0x3f3504f3 = sqrt(1/2)
  const float f = bits_float(bits - (e << 23)) - 1.0f;
  float p = 0x1.5ceb6p-4f;
  p = fma(p, f, -0x1.22e4bp-3f);
  p = fma(p, f, 0x1.32298ap-3f);
  p = fma(p, f, -0x1.53b2c4p-3f);
  p = fma(p, f, 0x1.98cb5ap-3f);
  p = fma(p, f, -0x1.0002b4p-2f);
  p = fma(p, f, 0x1.555702p-2f);
  p = fma(p, f, -0x1p-1f);
  const float log1p_f = fma(f * f, p, f);
  const float ef = static_cast<float>(e);
  constexpr float kLn2Hi = 0x1.62e4p-1f;     // ln 2 = kLn2Hi + kLn2Lo; e * kLn2Hi is
  constexpr float kLn2Lo = 0x1.7f7d1cp-20f;  // exact for |e| < 2^7 (here |e| <= 33)
  return fma(ef, kLn2Hi, fma(ef, kLn2Lo, log1p_f));
}

// sin(pi/2 t) and cos(pi/2 t) for t in [-1/2, 1/2]: t S(t^2) and C(t^2).
ATTN_HD ATTN_INLINE void sincos_halfpi(float t, float& s, float& c) {
  const float u = t * t;
  float ps = -0x1.2d9b7cp-8f;
  ps = fma(ps, u, 0x1.465ec4p-4f);
  ps = fma(ps, u, -0x1.4abbbap-1f);
  ps = fma(ps, u, 0x1.921fb6p+0f);
  s = t * ps;
  float pc = 0x1.d9c326p-11f;
  pc = fma(pc, u, -0x1.55c57ap-6f);
  pc = fma(pc, u, 0x1.03c1dcp-2f);
  pc = fma(pc, u, -0x1.3bd3ccp+0f);
  c = fma(pc, u, 1.0f);
}

}  // namespace attn::fm
