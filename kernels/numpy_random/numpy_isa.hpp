// numpy_isa.hpp: the ISA shims of numpy's vector decoder (numpy_simd.cpp): the operations its
// loop needs on eight 64-bit lanes, as one AVX-512 register (IsaV4) or two AVX2 ones (IsaV3).
// Each member carries its level's target and is inlined into that level's copy of the loop
// (cpu_clones.hpp). Host only, in builds with CPU levels.
#pragma once

#include "cpu_clones.hpp"

#if ATTN_HAVE_CPU_LEVELS
#include <immintrin.h>

#include <array>
#include <cstdint>

#include "kernels/numpy_random/ziggurat_tables.hpp"

namespace attn::dk_std::stream {

// Each layer's k and w side by side, for the AVX2 decoder's paired loads (IsaV3::layer).
struct alignas(16) KW {
  std::uint64_t k;
  double w;
};
alignas(64) constexpr std::array<KW, 256> kLayers = [] {
  std::array<KW, 256> t{};
  for (int i = 0; i < 256; ++i) t[i] = KW{zig::kZigguratK[i], zig::kZigguratW[i]};
  return t;
}();

// GCC 12 warns that the intrinsics' internal __Y "may be used uninitialized" (a known false
// positive of the _mm*_set1/undefined intrinsics under -Wextra).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

struct IsaV4 {  // one AVX-512 register
  using V = __m512i;
  using D = __m512d;
  ATTN_TARGET_V4 static V set1(std::uint64_t x) {
    return _mm512_set1_epi64(static_cast<long long>(x));
  }
  ATTN_TARGET_V4 static V load(const std::uint64_t* p) { return _mm512_load_si512(p); }
  ATTN_TARGET_V4 static void store(std::uint64_t* p, V v) { _mm512_store_si512(p, v); }
  ATTN_TARGET_V4 static void storeu(double* p, D v) { _mm512_storeu_pd(p, v); }
  ATTN_TARGET_V4 static V add(V a, V b) { return _mm512_add_epi64(a, b); }
  ATTN_TARGET_V4 static V and_(V a, V b) { return _mm512_and_si512(a, b); }
  ATTN_TARGET_V4 static V xor_(V a, V b) { return _mm512_xor_si512(a, b); }
  ATTN_TARGET_V4 static D xor_(D a, V b) {
    return _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(a), b));
  }
  template <int N>
  ATTN_TARGET_V4 static V srl(V a) {
    return _mm512_srli_epi64(a, N);
  }
  template <int N>
  ATTN_TARGET_V4 static V sll(V a) {
    return _mm512_slli_epi64(a, N);
  }
  ATTN_TARGET_V4 static V mul_u32(V a, V b) { return _mm512_mul_epu32(a, b); }
  ATTN_TARGET_V4 static V mul_lo(V a, V b) { return _mm512_mullo_epi64(a, b); }
  ATTN_TARGET_V4 static V rotr(V x, V r) { return _mm512_rorv_epi64(x, r); }
  // hi + 1 where sum < addend (the carry out of sum = addend + something, mod 2^64).
  ATTN_TARGET_V4 static V add_carry(V hi, V sum, V addend) {
    return _mm512_mask_add_epi64(hi, _mm512_cmplt_epu64_mask(sum, addend), hi, set1(1));
  }
  // The lanes surely accepted: rabs >> 36 < k16[idx] (k16 = kZigguratK >> 36, so then rabs <
  // kZigguratK[idx]). The 256 16-bit thresholds sit in eight registers and are read by four
  // two-register permutes, cheaper than an eight-lane gather. A lane with rabs >> 36 ==
  // k16[idx] (p = 2^-16) is left to resolve_block's exact test, as are the rejected ones.
  struct KTable {
    __m512i t[8];
    ATTN_TARGET_V4 KTable() {
      alignas(64) std::uint16_t k[256];
      for (int i = 0; i < 256; ++i) k[i] = static_cast<std::uint16_t>(zig::kZigguratK[i] >> 36);
      for (int i = 0; i < 8; ++i) t[i] = _mm512_load_si512(k + 32 * i);
    }
  };
  // A vector's layers: the indices, k read by surely_accepted's permutes, w by width's gather.
  struct Layer {
    const KTable& k;
    V idx;
  };
  ATTN_TARGET_V4 static Layer layer(const KTable& k, V idx) { return {k, idx}; }
  ATTN_TARGET_V4 static D width(const Layer& l) {
    return _mm512_i64gather_pd(l.idx, zig::kZigguratW, 8);
  }
  ATTN_TARGET_V4 static unsigned surely_accepted(const Layer& l, V rabs) {
    const KTable& k = l.k;
    const V idx = l.idx;
    const __m512i p0 = _mm512_permutex2var_epi16(k.t[0], idx, k.t[1]);
    const __m512i p1 = _mm512_permutex2var_epi16(k.t[2], idx, k.t[3]);
    const __m512i p2 = _mm512_permutex2var_epi16(k.t[4], idx, k.t[5]);
    const __m512i p3 = _mm512_permutex2var_epi16(k.t[6], idx, k.t[7]);
    const __mmask8 b6 = _mm512_test_epi64_mask(idx, set1(64));
    const __mmask8 b7 = _mm512_test_epi64_mask(idx, set1(128));
    const V t = _mm512_mask_blend_epi64(b7, _mm512_mask_blend_epi64(b6, p0, p1),
                                        _mm512_mask_blend_epi64(b6, p2, p3));
    return _mm512_cmplt_epu64_mask(srl<36>(rabs), and_(t, set1(0xffff)));
  }
  ATTN_TARGET_V4 static D to_double(V a) { return _mm512_cvtepu64_pd(a); }
  ATTN_TARGET_V4 static D mul(D a, D b) { return _mm512_mul_pd(a, b); }
};

struct IsaV3 {  // two AVX2 registers: lanes 0-3 in a, 4-7 in b
  struct V {
    __m256i a, b;
  };
  struct D {
    __m256d a, b;
  };
  ATTN_TARGET_V3 static V set1(std::uint64_t x) {
    const __m256i v = _mm256_set1_epi64x(static_cast<long long>(x));
    return {v, v};
  }
  ATTN_TARGET_V3 static V load(const std::uint64_t* p) {
    return {_mm256_load_si256(reinterpret_cast<const __m256i*>(p)),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 4))};
  }
  ATTN_TARGET_V3 static void store(std::uint64_t* p, V v) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(p), v.a);
    _mm256_store_si256(reinterpret_cast<__m256i*>(p + 4), v.b);
  }
  ATTN_TARGET_V3 static void storeu(double* p, D v) {
    _mm256_storeu_pd(p, v.a);
    _mm256_storeu_pd(p + 4, v.b);
  }
  ATTN_TARGET_V3 static V add(V x, V y) {
    return {_mm256_add_epi64(x.a, y.a), _mm256_add_epi64(x.b, y.b)};
  }
  ATTN_TARGET_V3 static V sub(V x, V y) {
    return {_mm256_sub_epi64(x.a, y.a), _mm256_sub_epi64(x.b, y.b)};
  }
  ATTN_TARGET_V3 static V and_(V x, V y) {
    return {_mm256_and_si256(x.a, y.a), _mm256_and_si256(x.b, y.b)};
  }
  ATTN_TARGET_V3 static V or_(V x, V y) {
    return {_mm256_or_si256(x.a, y.a), _mm256_or_si256(x.b, y.b)};
  }
  ATTN_TARGET_V3 static V xor_(V x, V y) {
    return {_mm256_xor_si256(x.a, y.a), _mm256_xor_si256(x.b, y.b)};
  }
  ATTN_TARGET_V3 static D xor_(D x, V y) {
    return {_mm256_xor_pd(x.a, _mm256_castsi256_pd(y.a)),
            _mm256_xor_pd(x.b, _mm256_castsi256_pd(y.b))};
  }
  template <int N>
  ATTN_TARGET_V3 static V srl(V x) {
    return {_mm256_srli_epi64(x.a, N), _mm256_srli_epi64(x.b, N)};
  }
  template <int N>
  ATTN_TARGET_V3 static V sll(V x) {
    return {_mm256_slli_epi64(x.a, N), _mm256_slli_epi64(x.b, N)};
  }
  ATTN_TARGET_V3 static V mul_u32(V x, V y) {
    return {_mm256_mul_epu32(x.a, y.a), _mm256_mul_epu32(x.b, y.b)};
  }
  // The low 64 bits of x * y from 32-bit halves: x0 y0 + ((x1 y0 + x0 y1) << 32).
  ATTN_TARGET_V3 static V mul_lo(V x, V y) {
    const V cross = add(mul_u32(srl<32>(x), y), mul_u32(x, srl<32>(y)));
    return add(mul_u32(x, y), sll<32>(cross));
  }
  // AVX2's variable shifts give 0 for a count of 64, so r = 0 leaves x.
  ATTN_TARGET_V3 static V rotr(V x, V r) {
    const V left = sub(set1(64), r);
    return {_mm256_or_si256(_mm256_srlv_epi64(x.a, r.a), _mm256_sllv_epi64(x.a, left.a)),
            _mm256_or_si256(_mm256_srlv_epi64(x.b, r.b), _mm256_sllv_epi64(x.b, left.b))};
  }
  // All-ones lanes where x < y, unsigned (a signed compare after flipping the sign bits).
  ATTN_TARGET_V3 static V lt_lanes(V x, V y) {
    const V s = set1(0x8000000000000000ull);
    const V xf = xor_(x, s), yf = xor_(y, s);
    return {_mm256_cmpgt_epi64(yf.a, xf.a), _mm256_cmpgt_epi64(yf.b, xf.b)};
  }
  ATTN_TARGET_V3 static V add_carry(V hi, V sum, V addend) {
    return sub(hi, lt_lanes(sum, addend));
  }
  // A vector's layers' k and w, read from kLayers (k and w side by side, 16 bytes a layer): a
  // 16-byte load per lane, two lanes' pairs to a register, and unpacks sort the k's from the
  // w's (lane order: unpacklo of (0, 2) and (1, 3) is (k0, k1 | k2, k3)). Loads, not four
  // four-lane gathers a vector: on AVX2 a gather can cost more than four scalar loads and their
  // inserts (`bench_kernels DkStdNumpyStream/512/1` times the stream).
  struct KTable {};
  struct Layer {
    V k;
    D w;
  };
  // Layers j0's and j1's (k, w) pairs in one register, from their byte offsets into kLayers.
  ATTN_TARGET_V3 static __m256i two_layers(const char* base, std::uint64_t off0,
                                           std::uint64_t off1) {
    return _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(base + off0))),
        _mm_load_si128(reinterpret_cast<const __m128i*>(base + off1)), 1);
  }
  ATTN_TARGET_V3 static Layer layer(const KTable&, V idx) {
    // The lanes' byte offsets into kLayers (16 bytes a layer), scaled here, eight lanes in two
    // instructions, rather than by a scalar shift per lane.
    alignas(32) std::uint64_t off[8];
    store(off, sll<4>(idx));
    const char* base = reinterpret_cast<const char*>(kLayers.data());
    const __m256i e0 = two_layers(base, off[0], off[2]), o0 = two_layers(base, off[1], off[3]);
    const __m256i e1 = two_layers(base, off[4], off[6]), o1 = two_layers(base, off[5], off[7]);
    return {{_mm256_unpacklo_epi64(e0, o0), _mm256_unpacklo_epi64(e1, o1)},
            {_mm256_castsi256_pd(_mm256_unpackhi_epi64(e0, o0)),
             _mm256_castsi256_pd(_mm256_unpackhi_epi64(e1, o1))}};
  }
  ATTN_TARGET_V3 static D width(const Layer& l) { return l.w; }
  // The lanes accepted: rabs < k[idx], a signed compare (both are below 2^52).
  ATTN_TARGET_V3 static unsigned surely_accepted(const Layer& l, V rabs) {
    return static_cast<unsigned>(
               _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(l.k.a, rabs.a)))) |
           static_cast<unsigned>(
               _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(l.k.b, rabs.b))))
               << 4;
  }
  // Exact below 2^52: the bits of 2^52 + x as a double, less 2^52.
  ATTN_TARGET_V3 static D to_double(V x) {
    const V m = or_(x, set1(0x4330000000000000ull));
    const __m256d two52 = _mm256_set1_pd(4503599627370496.0);
    return {_mm256_sub_pd(_mm256_castsi256_pd(m.a), two52),
            _mm256_sub_pd(_mm256_castsi256_pd(m.b), two52)};
  }
  ATTN_TARGET_V3 static D mul(D x, D y) {
    return {_mm256_mul_pd(x.a, y.a), _mm256_mul_pd(x.b, y.b)};
  }
};
#pragma GCC diagnostic pop

}  // namespace attn::dk_std::stream
#endif
