// simd.hpp: vectors of float or double at one CPU level, for the blocked attention kernels
// (attention_cpu.cpp). Host only.
//
// Simd<L, T> is the ISA shim of cpu_clones.hpp: the operations the kernels need on one vector
// of kLanes values of T, as one AVX-512 register (x86-64-v4), one AVX2 register (x86-64-v3) or
// one scalar (the baseline, and builds without CPU levels). Every operation acts lane by lane
// and rounds as IEEE 754 says (fma: once), so a lane's value never depends on the level: the
// same loop gives the same bits at every level. The baseline's fma is libm's (slow where the
// CPU has no FMA unit, exact everywhere). Members carry their level's target and are inlined
// into that level's flattened copy of the loop.
//
// exp_nonpositive<S>(x) is exp on x <= 0 (or -inf) in S's lanes, written once over these
// operations; at float it is this project's own (under 1 ulp), at double the C library's bits
// (through lanes.hpp's pack exp where a vector holds a pack).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "cpu_clones.hpp"
#include "hd.hpp"
#include "lanes.hpp"

#if ATTN_HAVE_CPU_LEVELS
#include <immintrin.h>
#endif

namespace attn::simd {

// The baseline: one lane, plain C++.
template <class T>
struct Scalar {
  using Elem = T;
  using V = T;
  using Bits = unsigned;  // one bit per lane, lane l in bit l
  static constexpr int kLanes = 1;
  static V load(const T* p) { return *p; }
  static V load_n(const T* p, int, T) { return *p; }  // count is 1: the one lane
  static void store(T* p, V v) { *p = v; }
  static void store_n(T* p, V v, int) { *p = v; }
  static V set1(T x) { return x; }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V max(V a, V b) { return a > b ? a : b; }  // b where either is NaN
  static Bits nan(V a) { return a != a; }
  static Bits not_finite(V a) { return !(a - a == T(0)); }
  static void to_array(V v, T* out) { *out = v; }
  // 2^n for a whole n in [-126, 127] (float lanes only).
  static V pow2(V n) {
    const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
    float r;
    std::memcpy(&r, &bits, sizeof r);
    return r;
  }
};

#if ATTN_HAVE_CPU_LEVELS
// GCC 12 warns that the intrinsics' internal __Y "may be used uninitialized" (a known false
// positive of the _mm*_set1/undefined intrinsics under -Wextra).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

struct V4F {  // 16 floats, one AVX-512 register
  using Elem = float;
  using T = Elem;
  using V = __m512;
  using Bits = unsigned;
  static constexpr int kLanes = 16;
  ATTN_TARGET_V4 static __mmask16 first(int n) { return __mmask16((1u << n) - 1); }
  ATTN_TARGET_V4 static V load(const T* p) { return _mm512_loadu_ps(p); }
  ATTN_TARGET_V4 static V load_n(const T* p, int n, T fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), first(n), p);
  }
  ATTN_TARGET_V4 static void store(T* p, V v) { _mm512_storeu_ps(p, v); }
  ATTN_TARGET_V4 static void store_n(T* p, V v, int n) { _mm512_mask_storeu_ps(p, first(n), v); }
  ATTN_TARGET_V4 static V set1(T x) { return _mm512_set1_ps(x); }
  ATTN_TARGET_V4 static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  ATTN_TARGET_V4 static V add(V a, V b) { return _mm512_add_ps(a, b); }
  ATTN_TARGET_V4 static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  ATTN_TARGET_V4 static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  ATTN_TARGET_V4 static V div(V a, V b) { return _mm512_div_ps(a, b); }
  ATTN_TARGET_V4 static V max(V a, V b) { return _mm512_max_ps(a, b); }
  ATTN_TARGET_V4 static Bits nan(V a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  ATTN_TARGET_V4 static Bits not_finite(V a) {
    return _mm512_cmp_ps_mask(_mm512_sub_ps(a, a), _mm512_setzero_ps(), _CMP_NEQ_UQ);
  }
  ATTN_TARGET_V4 static void to_array(V v, T* out) { _mm512_storeu_ps(out, v); }
  ATTN_TARGET_V4 static V pow2(V n) {
    const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
  }
};

struct V4D {  // 8 doubles, one AVX-512 register
  using Elem = double;
  using T = Elem;
  using V = __m512d;
  using Bits = unsigned;
  static constexpr int kLanes = 8;
  ATTN_TARGET_V4 static __mmask8 first(int n) { return __mmask8((1u << n) - 1); }
  ATTN_TARGET_V4 static V load(const T* p) { return _mm512_loadu_pd(p); }
  ATTN_TARGET_V4 static V load_n(const T* p, int n, T fill) {
    return _mm512_mask_loadu_pd(_mm512_set1_pd(fill), first(n), p);
  }
  ATTN_TARGET_V4 static void store(T* p, V v) { _mm512_storeu_pd(p, v); }
  ATTN_TARGET_V4 static void store_n(T* p, V v, int n) { _mm512_mask_storeu_pd(p, first(n), v); }
  ATTN_TARGET_V4 static V set1(T x) { return _mm512_set1_pd(x); }
  ATTN_TARGET_V4 static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  ATTN_TARGET_V4 static V add(V a, V b) { return _mm512_add_pd(a, b); }
  ATTN_TARGET_V4 static V sub(V a, V b) { return _mm512_sub_pd(a, b); }
  ATTN_TARGET_V4 static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  ATTN_TARGET_V4 static V div(V a, V b) { return _mm512_div_pd(a, b); }
  ATTN_TARGET_V4 static V max(V a, V b) { return _mm512_max_pd(a, b); }
  ATTN_TARGET_V4 static Bits nan(V a) { return _mm512_cmp_pd_mask(a, a, _CMP_UNORD_Q); }
  ATTN_TARGET_V4 static Bits not_finite(V a) {
    return _mm512_cmp_pd_mask(_mm512_sub_pd(a, a), _mm512_setzero_pd(), _CMP_NEQ_UQ);
  }
  ATTN_TARGET_V4 static void to_array(V v, T* out) { _mm512_storeu_pd(out, v); }
};

struct V3F {  // 8 floats, one AVX2 register
  using Elem = float;
  using T = Elem;
  using V = __m256;
  using Bits = unsigned;
  static constexpr int kLanes = 8;
  ATTN_TARGET_V3 static __m256i first(int n) {  // lanes below n all ones
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  ATTN_TARGET_V3 static V load(const T* p) { return _mm256_loadu_ps(p); }
  ATTN_TARGET_V3 static V load_n(const T* p, int n, T fill) {
    const __m256i m = first(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  ATTN_TARGET_V3 static void store(T* p, V v) { _mm256_storeu_ps(p, v); }
  ATTN_TARGET_V3 static void store_n(T* p, V v, int n) { _mm256_maskstore_ps(p, first(n), v); }
  ATTN_TARGET_V3 static V set1(T x) { return _mm256_set1_ps(x); }
  ATTN_TARGET_V3 static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  ATTN_TARGET_V3 static V add(V a, V b) { return _mm256_add_ps(a, b); }
  ATTN_TARGET_V3 static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  ATTN_TARGET_V3 static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  ATTN_TARGET_V3 static V div(V a, V b) { return _mm256_div_ps(a, b); }
  ATTN_TARGET_V3 static V max(V a, V b) { return _mm256_max_ps(a, b); }
  ATTN_TARGET_V3 static Bits nan(V a) {
    return unsigned(_mm256_movemask_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q)));
  }
  ATTN_TARGET_V3 static Bits not_finite(V a) {
    return unsigned(
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_sub_ps(a, a), _mm256_setzero_ps(), _CMP_NEQ_UQ)));
  }
  ATTN_TARGET_V3 static void to_array(V v, T* out) { _mm256_storeu_ps(out, v); }
  ATTN_TARGET_V3 static V pow2(V n) {
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
};

struct V3D {  // 4 doubles, one AVX2 register
  using Elem = double;
  using T = Elem;
  using V = __m256d;
  using Bits = unsigned;
  static constexpr int kLanes = 4;
  ATTN_TARGET_V3 static __m256i first(int n) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  ATTN_TARGET_V3 static V load(const T* p) { return _mm256_loadu_pd(p); }
  ATTN_TARGET_V3 static V load_n(const T* p, int n, T fill) {
    const __m256i m = first(n);
    return _mm256_blendv_pd(_mm256_set1_pd(fill), _mm256_maskload_pd(p, m), _mm256_castsi256_pd(m));
  }
  ATTN_TARGET_V3 static void store(T* p, V v) { _mm256_storeu_pd(p, v); }
  ATTN_TARGET_V3 static void store_n(T* p, V v, int n) { _mm256_maskstore_pd(p, first(n), v); }
  ATTN_TARGET_V3 static V set1(T x) { return _mm256_set1_pd(x); }
  ATTN_TARGET_V3 static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  ATTN_TARGET_V3 static V add(V a, V b) { return _mm256_add_pd(a, b); }
  ATTN_TARGET_V3 static V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  ATTN_TARGET_V3 static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  ATTN_TARGET_V3 static V div(V a, V b) { return _mm256_div_pd(a, b); }
  ATTN_TARGET_V3 static V max(V a, V b) { return _mm256_max_pd(a, b); }
  ATTN_TARGET_V3 static Bits nan(V a) {
    return unsigned(_mm256_movemask_pd(_mm256_cmp_pd(a, a, _CMP_UNORD_Q)));
  }
  ATTN_TARGET_V3 static Bits not_finite(V a) {
    return unsigned(
        _mm256_movemask_pd(_mm256_cmp_pd(_mm256_sub_pd(a, a), _mm256_setzero_pd(), _CMP_NEQ_UQ)));
  }
  ATTN_TARGET_V3 static void to_array(V v, T* out) { _mm256_storeu_pd(out, v); }
};

#pragma GCC diagnostic pop
#endif

// The shim for level L and T.
template <CpuLevel L, class T>
struct ForLevel {
  using type = Scalar<T>;
};
#if ATTN_HAVE_CPU_LEVELS
template <>
struct ForLevel<CpuLevel::v4, float> {
  using type = V4F;
};
template <>
struct ForLevel<CpuLevel::v4, double> {
  using type = V4D;
};
template <>
struct ForLevel<CpuLevel::v3, float> {
  using type = V3F;
};
template <>
struct ForLevel<CpuLevel::v3, double> {
  using type = V3D;
};
#endif
template <CpuLevel L, class T>
using Simd = typename ForLevel<L, T>::type;

// exp(x) in every lane, for x <= 0 or -inf (NaN: unspecified), float lanes: the result within
// 1 ulp of exp (E from tools/fit_polynomials.py; tests/test_simd.cpp checks 1.2e7 inputs, every
// 97th float of [-104, 0], and finds 0.996 at worst), exactly 1 at 0, subnormal results rounded
// once, 0 below -104 (where exp(x) < 2^-150 rounds to 0). x = n ln 2 + r with n = round(x / ln 2)
// (the 1.5 * 2^23 shifter rounds to nearest) and r in [-ln2/2, ln2/2] (Cody and Waite's two-part ln
// 2, each step one fma); exp(r) = 1 + r + r^2 E(r) with E of degree 4; then times 2^n in two exact
// steps, 2^max(n, -100) and 2^(n - max(n, -100)), so that only the last multiply rounds.
template <class S>
ATTN_INLINE typename S::V exp_nonpositive(typename S::V x) {
  using V = typename S::V;
  using T = typename S::Elem;
  if constexpr (sizeof(T) == sizeof(double)) {
    T in[S::kLanes], out[S::kLanes];
    S::to_array(x, in);
    if constexpr (S::kLanes == kPackLanes) {  // lanes.hpp's pack exp: the C library's bits
      PackD p;
      std::memcpy(&p, in, sizeof p);
      p = exp_t(p);
      std::memcpy(out, &p, sizeof p);
    } else {
      for (int l = 0; l < S::kLanes; ++l) out[l] = std::exp(in[l]);
    }
    return S::load(out);
  } else {
    constexpr float kShifter = 0x1.8p23f, kLog2e = 0x1.715476p+0f;
    constexpr float kLn2Hi = 0x1.62e43p-1f, kLn2Lo = -0x1.05c610p-29f;  // ln 2 = hi + lo
    const V xc = S::max(x, S::set1(-104.0f));
    const V n = S::sub(S::fma(xc, S::set1(kLog2e), S::set1(kShifter)), S::set1(kShifter));
    V r = S::fma(n, S::set1(-kLn2Hi), xc);
    r = S::fma(n, S::set1(-kLn2Lo), r);
    V e = S::set1(0x1.687c22p-10f);
    e = S::fma(e, r, S::set1(0x1.123b8ep-7f));
    e = S::fma(e, r, S::set1(0x1.555b58p-5f));
    e = S::fma(e, r, S::set1(0x1.55548ep-3f));
    e = S::fma(e, r, S::set1(0x1.fffff8p-2f));
    const V y = S::add(S::fma(S::mul(r, r), e, r), S::set1(1.0f));
    const V n1 = S::max(n, S::set1(-100.0f));
    return S::mul(S::mul(y, S::pow2(n1)), S::pow2(S::sub(n, n1)));
  }
}

}  // namespace attn::simd
