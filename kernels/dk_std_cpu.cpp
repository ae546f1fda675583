// dk_std_cpu.cpp: CPU twin of the dk-std sampling kernel (dk_std.hpp, dk_std_cuda.cu).
//
// In a chunk, lanes l .. l+W-1 at step s take W consecutive samples, so the CPU runs W lanes
// in lockstep: the loop over lanes is the innermost one, straight-line code that the compiler
// turns into SIMD (16 floats per AVX-512 register). Each lane's arithmetic is exactly
// sample_dot's and Moments::push's, so the bits equal the GPU's. The chunk's loop is compiled
// for each x86-64 level (cpu_clones.hpp); on AVX2 (x86-64-v3) it runs 8 lanes per register and
// takes the Philox words from hand-written AVX2 (dots_consecutive_avx2).
#include <omp.h>

#include <cstdint>

#include "cpu_clones.hpp"
#include "cpu_threads.hpp"
#include "dk_std.hpp"

#if ATTN_HAVE_CPU_LEVELS
#include <immintrin.h>
#endif

namespace attn::dk_std {
namespace {

constexpr unsigned kW = 16;  // lanes in lockstep
static_assert(kLanes % kW == 0);

// dots[l] = sample_dot(key, d_k, first_sample + l) for l < kW.
ATTN_INLINE void dots_consecutive(philox::Key key, std::uint32_t d_k, std::uint64_t first_sample,
                                  float* dots) {
  float dot[kW] = {};
  for (std::uint32_t j = 0; j < d_k / 2; ++j) {
    for (unsigned l = 0; l < kW; ++l) {
      float n[4];
      philox::normals4(key, d_k, first_sample + l, j, n);
      dot[l] = fm::fma(n[0], n[2], dot[l]);
      dot[l] = fm::fma(n[1], n[3], dot[l]);
    }
  }
  if (d_k % 2 != 0) {
    for (unsigned l = 0; l < kW; ++l) {
      float n[4];
      philox::normals4(key, d_k, first_sample + l, d_k / 2, n);
      dot[l] = fm::fma(n[0], n[2], dot[l]);
    }
  }
  for (unsigned l = 0; l < kW; ++l) dots[l] = dot[l];
}

#if ATTN_HAVE_CPU_LEVELS
// dots_consecutive for the x86-64-v3 copy, the same bits: the Philox words by hand in AVX2 (8
// lanes a register; each 32x32->64 multiply as two vpmuludq on the even and odd lanes and a
// blend for the high halves, vpmulld for the low), then Box-Muller and the dot products as the
// generic lane loop. GCC 12 vectorized philox_round's 64-bit products for AVX2 with widening and
// narrowing permutes (vpshufd, vperm2i128: about half the loop's instructions).
ATTN_TARGET_V3 ATTN_INLINE void mulhilo_avx2(__m256i x, __m256i m, __m256i& hi, __m256i& lo) {
  const __m256i even = _mm256_mul_epu32(x, m);                        // lanes 0, 2, 4, 6
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), m);  // lanes 1, 3, 5, 7
  hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xaa);
  lo = _mm256_mullo_epi32(x, m);
}

// w[i][l] = word i of philox4x32_10((block, stream, item lo, item hi), key) for item first + l,
// l < 8 (philox.hpp's rounds and key schedule).
ATTN_TARGET_V3 ATTN_INLINE void philox8_avx2(philox::Key key, std::uint32_t block,
                                             std::uint32_t stream, std::uint64_t first,
                                             std::uint32_t* w0, std::uint32_t* w1,
                                             std::uint32_t* w2, std::uint32_t* w3) {
  alignas(32) std::uint32_t lo[8], hi[8];
  for (unsigned l = 0; l < 8; ++l) {
    lo[l] = static_cast<std::uint32_t>(first + l);
    hi[l] = static_cast<std::uint32_t>((first + l) >> 32);
  }
  __m256i c0 = _mm256_set1_epi32(static_cast<int>(block));
  __m256i c1 = _mm256_set1_epi32(static_cast<int>(stream));
  __m256i c2 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
  __m256i c3 = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(philox::kMul0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(philox::kMul1));
  std::uint32_t k0 = key.v[0], k1 = key.v[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += philox::kWeyl0;
      k1 += philox::kWeyl1;
    }
    __m256i hi0, lo0, hi1, lo1;
    mulhilo_avx2(c0, m0, hi0, lo0);
    mulhilo_avx2(c2, m1, hi1, lo1);
    c0 = _mm256_xor_si256(hi1, _mm256_xor_si256(c1, _mm256_set1_epi32(static_cast<int>(k0))));
    c1 = lo1;
    c2 = _mm256_xor_si256(hi0, _mm256_xor_si256(c3, _mm256_set1_epi32(static_cast<int>(k1))));
    c3 = lo0;
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(w0), c0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(w1), c1);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(w2), c2);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(w3), c3);
}

// w[i][l] for the kW lanes, eight at a time.
ATTN_TARGET_V3 ATTN_INLINE void philox_lanes_avx2(philox::Key key, std::uint32_t block,
                                                  std::uint32_t stream, std::uint64_t first,
                                                  std::uint32_t (&w)[4][kW]) {
  for (unsigned l0 = 0; l0 < kW; l0 += 8)
    philox8_avx2(key, block, stream, first + l0, w[0] + l0, w[1] + l0, w[2] + l0, w[3] + l0);
}

// Block j's normals from its words w (box_muller, as normals4 does) into each lane's dot: both
// pairs, or for Pair false only q[2j] k[2j] (an odd d_k's last element).
template <bool Pair>
ATTN_INLINE void add_block(const std::uint32_t (&w)[4][kW], float (&dot)[kW]) {
  for (unsigned l = 0; l < kW; ++l) {
    float n[4];
    philox::box_muller(w[0][l], w[1][l], n[0], n[1]);
    philox::box_muller(w[2][l], w[3][l], n[2], n[3]);
    dot[l] = fm::fma(n[0], n[2], dot[l]);
    if constexpr (Pair) dot[l] = fm::fma(n[1], n[3], dot[l]);
  }
}

ATTN_TARGET_V3 void dots_consecutive_avx2(philox::Key key, std::uint32_t d_k,
                                          std::uint64_t first_sample, float* dots) {
  float dot[kW] = {};
  alignas(32) std::uint32_t w[4][kW];
  for (std::uint32_t j = 0; j < d_k / 2; ++j) {
    philox_lanes_avx2(key, j, d_k, first_sample, w);
    add_block<true>(w, dot);
  }
  if (d_k % 2 != 0) {
    philox_lanes_avx2(key, d_k / 2, d_k, first_sample, w);
    add_block<false>(w, dot);
  }
  for (unsigned l = 0; l < kW; ++l) dots[l] = dot[l];
}
#endif

// Moments of kLanes lanes as arrays, so that pushing one value per lane vectorizes.
struct LaneArrays {
  double n[kLanes] = {}, mean[kLanes] = {}, m2[kLanes] = {}, m3[kLanes] = {}, m4[kLanes] = {};
};

ATTN_INLINE void push_lanes(LaneArrays& a, unsigned lane0, const float* dots) {
  for (unsigned l = 0; l < kW; ++l) {
    const unsigned i = lane0 + l;
    Moments::push_into(a.n[i], a.mean[i], a.m2[i], a.m3[i], a.m4[i], dots[l]);
  }
}

// The chunk's Moments, compiled for level L: x86-64-v3 takes dots_consecutive_avx2.
template <CpuLevel L>
ATTN_INLINE Moments chunk_moments_body(const Plan& p, std::uint64_t chunk) {
  const philox::Key key = philox::key_from_seed(p.seed);
  const std::uint64_t first = p.chunk_first(chunk), end = p.chunk_end(chunk);
  LaneArrays a;
  for (std::uint32_t s = 0; s < p.samples_per_lane; ++s) {
    for (unsigned lane0 = 0; lane0 < kLanes; lane0 += kW) {
      const std::uint64_t i0 = first + lane0 + static_cast<std::uint64_t>(kLanes) * s;
      if (i0 >= end) break;
      if (i0 + kW <= end) {  // the whole group holds samples: the SIMD path
        float dots[kW];
#if ATTN_HAVE_CPU_LEVELS
        if constexpr (L == CpuLevel::v3)
          dots_consecutive_avx2(key, p.d_k, i0, dots);
        else
#endif
          dots_consecutive(key, p.d_k, i0, dots);
        push_lanes(a, lane0, dots);
      } else {  // the run's last, partial group
        for (unsigned l = 0; i0 + l < end; ++l)
          Moments::push_into(a.n[lane0 + l], a.mean[lane0 + l], a.m2[lane0 + l], a.m3[lane0 + l],
                             a.m4[lane0 + l], sample_dot(key, p.d_k, i0 + l));
      }
    }
  }
  Moments lanes[kLanes];  // fed floats: scale 1 (moments.hpp)
  for (unsigned l = 0; l < kLanes; ++l)
    lanes[l] = Moments{a.n[l], a.mean[l], a.m2[l], a.m3[l], a.m4[l], 1.0};
  return merge_lanes(lanes);
}

ATTN_CPU_LEVELS_BY_LEVEL(Moments, chunk_moments, (const Plan& p, std::uint64_t chunk), (p, chunk))

}  // namespace

void chunk_moments_cpu(const Plan& p, std::uint64_t first, std::uint64_t count, Moments* out) {
  (void)cpu_level();  // may throw (a bad ATTNLAB_CPU_LEVEL): here, not in the parallel region
#pragma omp parallel for schedule(dynamic, 1) if (count > 1)
  for (std::int64_t c = 0; c < static_cast<std::int64_t>(count); ++c) {
    bind_this_thread();
    out[c] = chunk_moments(p, first + static_cast<std::uint64_t>(c));
  }
}

}  // namespace attn::dk_std
