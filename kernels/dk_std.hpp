// dk_std.hpp: the d_k spread experiment's sampler, shared by the CUDA kernel and its CPU twin.
//
// Sample i of a run draws q, k in R^{d_k} with i.i.d. N(0, 1) entries and returns q . k
// (lesson section 5: its std is sqrt(d_k)). Normals come from Philox4x32-10 keyed by the seed,
// counter (block j, stream d_k, sample i): block j gives q[2j], q[2j+1] (one Box-Muller pair)
// and k[2j], k[2j+1] (the other). No sample is ever stored.
//
// Work layout, fixed by (N, d_k) alone so that every device and thread count gives the same
// bits: samples are cut into chunks of kLanes * samples_per_lane; in chunk c, lane l takes
// samples c*chunk + l + kLanes*s for s = 0, 1, ... in order and pushes each dot into its own
// Moments; the chunk's 256 lane summaries merge in a fixed binary tree (stride 128, 64, .., 1);
// chunks merge left to right on the host.
#pragma once

#include <cstdint>

#include "hd.hpp"
#include "moments.hpp"
#include "philox.hpp"

namespace attn::dk_std {

inline constexpr unsigned kLanes = 256;  // lanes per chunk = CUDA threads per block

struct Plan {
  std::uint64_t samples = 0;  // N, >= 1
  std::uint32_t d_k = 0;      // >= 1
  std::uint64_t seed = 0;
  std::uint32_t samples_per_lane = 1;

  ATTN_HD std::uint64_t chunk_samples() const {
    return static_cast<std::uint64_t>(kLanes) * samples_per_lane;
  }
  ATTN_HD std::uint64_t chunks() const { return (samples + chunk_samples() - 1) / chunk_samples(); }
  // Chunk c covers samples [chunk_first(c), chunk_end(c)).
  ATTN_HD std::uint64_t chunk_first(std::uint64_t c) const { return c * chunk_samples(); }
  ATTN_HD std::uint64_t chunk_end(std::uint64_t c) const {
    return chunk_first(c) + chunk_samples() < samples ? chunk_first(c) + chunk_samples() : samples;
  }
};

// About 2^20 normals per chunk: enough work per GPU block, many chunks for a long run.
inline Plan make_plan(std::uint64_t samples, std::uint32_t d_k, std::uint64_t seed) {
  Plan p;
  p.samples = samples;
  p.d_k = d_k;
  p.seed = seed;
  p.samples_per_lane = d_k >= 2048 ? 1u : 2048u / d_k;
  return p;
}

// q . k for one sample, accumulated in float with fused multiply-adds, q[0]k[0] first.
ATTN_HD ATTN_INLINE float sample_dot(philox::Key key, std::uint32_t d_k, std::uint64_t sample) {
  float dot = 0.0f;
  float n[4];
  for (std::uint32_t j = 0; j < d_k / 2; ++j) {
    philox::normals4(key, d_k, sample, j, n);  // q[2j], q[2j+1], k[2j], k[2j+1]
    dot = fm::fma(n[0], n[2], dot);
    dot = fm::fma(n[1], n[3], dot);
  }
  if (d_k % 2 != 0) {  // odd d_k: the last block's first pair only
    philox::normals4(key, d_k, sample, d_k / 2, n);
    dot = fm::fma(n[0], n[2], dot);
  }
  return dot;
}

// Lane `lane` of chunk `chunk`: its samples, pushed in order.
ATTN_HD inline Moments lane_moments(const Plan& p, std::uint64_t chunk, unsigned lane) {
  const philox::Key key = philox::key_from_seed(p.seed);
  const std::uint64_t first = p.chunk_first(chunk), end = p.chunk_end(chunk);
  Moments m;
  for (std::uint32_t s = 0; s < p.samples_per_lane; ++s) {
    const std::uint64_t i = first + lane + static_cast<std::uint64_t>(kLanes) * s;
    if (i >= end) break;
    m.push(static_cast<double>(sample_dot(key, p.d_k, i)));
  }
  return m;
}

// The chunk's tree: lanes[0] <- merge of all kLanes summaries (lanes is overwritten).
ATTN_HD inline Moments merge_lanes(Moments* lanes) {
  for (unsigned stride = kLanes / 2; stride > 0; stride /= 2)
    for (unsigned l = 0; l < stride; ++l) lanes[l] = merge(lanes[l], lanes[l + stride]);
  return lanes[0];
}

// Summaries of chunks [first, first + count) of plan p into out[0..count) (host memory).
// CPU twin: OpenMP over chunks, each chunk's lanes vectorized W at a time, at the CPU's x86-64
// level (cpu_clones.hpp); same bits as the scalar lane_moments + merge_lanes at every level
// (tests/test_dk_std.cpp checks it, the AVX2 and baseline copies too).
void chunk_moments_cpu(const Plan& p, std::uint64_t first, std::uint64_t count, Moments* out);

#if defined(ATTNLAB_WITH_CUDA)
// GPU, device-resident: one block of kLanes threads per chunk, lane = thread, in launches of at
// most kChunksPerLaunch chunks; d_out is device memory for count summaries. No allocation, no
// copy; returns when the work is queued.
inline constexpr std::uint64_t kChunksPerLaunch = 1u << 16;
void chunk_moments_cuda_device(const Plan& p, std::uint64_t first, std::uint64_t count,
                               Moments* d_out);
// Host wrapper: out in host memory; a device buffer of at most kChunksPerLaunch summaries,
// filled by chunk_moments_cuda_device and copied back wave by wave.
void chunk_moments_cuda(const Plan& p, std::uint64_t first, std::uint64_t count, Moments* out);
#endif

}  // namespace attn::dk_std
