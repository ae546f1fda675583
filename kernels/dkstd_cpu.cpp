// dkstd_cpu.cpp: CPU twin of the dk-std sampling kernel (dkstd.hpp, dkstd_cuda.cu).
//
// In a chunk, lanes l .. l+W-1 at step s take W consecutive samples, so the CPU runs W lanes
// in lockstep: the loop over lanes is the innermost one, straight-line code that the compiler
// turns into SIMD (16 floats per AVX-512 register). Each lane's arithmetic is exactly
// sample_dot's and Moments::push's, so the bits equal the GPU's. The chunk's loop is compiled
// for each x86-64 level (cpu_clones.hpp); on AVX2 (x86-64-v3) it runs 8 lanes per register.
#include <omp.h>

#include <cstdint>

#include "cpu_clones.hpp"
#include "cpu_threads.hpp"
#include "dkstd.hpp"

namespace attn::dkstd {
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

// Moments of kLanes lanes as arrays, so that pushing one value per lane vectorizes.
struct LaneArrays {
  double n[kLanes] = {}, mean[kLanes] = {}, m2[kLanes] = {}, m3[kLanes] = {}, m4[kLanes] = {};
};

ATTN_INLINE void push_lanes(LaneArrays& a, unsigned lane0, const float* dots) {
  for (unsigned l = 0; l < kW; ++l) {
    const unsigned i = lane0 + l;
    Moments::push_into(a.n[i], a.mean[i], a.m2[i], a.m3[i], a.m4[i], static_cast<double>(dots[l]));
  }
}

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
        dots_consecutive(key, p.d_k, i0, dots);
        push_lanes(a, lane0, dots);
      } else {  // the run's last, partial group
        for (unsigned l = 0; i0 + l < end; ++l)
          Moments::push_into(a.n[lane0 + l], a.mean[lane0 + l], a.m2[lane0 + l], a.m3[lane0 + l],
                             a.m4[lane0 + l], static_cast<double>(sample_dot(key, p.d_k, i0 + l)));
      }
    }
  }
  Moments lanes[kLanes];
  for (unsigned l = 0; l < kLanes; ++l)
    lanes[l] = Moments{a.n[l], a.mean[l], a.m2[l], a.m3[l], a.m4[l]};
  return merge_lanes(lanes);
}

ATTN_CPU_LEVELS(Moments, chunk_moments, (const Plan& p, std::uint64_t chunk), (p, chunk))

}  // namespace

void chunk_moments_cpu(const Plan& p, std::uint64_t first, std::uint64_t count, Moments* out) {
  (void)cpu_level();  // may throw (a bad ATTNLAB_CPU_LEVEL): here, not in the parallel region
#pragma omp parallel for schedule(dynamic, 1) if (count > 1)
  for (std::int64_t c = 0; c < static_cast<std::int64_t>(count); ++c) {
    bind_this_thread();
    out[c] = chunk_moments(p, first + static_cast<std::uint64_t>(c));
  }
}

}  // namespace attn::dkstd
