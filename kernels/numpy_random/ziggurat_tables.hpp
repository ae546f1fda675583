// ziggurat_tables.hpp: numpy's 256-layer ziggurat tables for the standard normal.
//
// k (uint64 thresholds), w (layer widths, scaled by 2^-52) and f (the density at layer edges),
// bit for bit as numpy 1.24 carries them (see ziggurat_tables.inc for the provenance and
// tools/extract_numpy_ziggurat.py for how they were taken). Host code reads the constexpr
// arrays; device code reads its own copy in global memory (one per CUDA translation unit).
#pragma once

#include <cstdint>

#include "hd.hpp"

namespace attn::zig {

#define ATTN_ZIGGURAT_TABLE(T, name) inline constexpr T name[256]
#include "kernels/numpy_random/ziggurat_tables.inc"
#undef ATTN_ZIGGURAT_TABLE

#if defined(__CUDACC__)
namespace device {
#define ATTN_ZIGGURAT_TABLE(T, name) static __device__ const T name[256]
#include "kernels/numpy_random/ziggurat_tables.inc"
#undef ATTN_ZIGGURAT_TABLE
}  // namespace device
#endif

// The tail starts at R (numpy's ziggurat_nor_r, spec/NUMPY_RANDOM.md). 1/R rounds to the same
// double as numpy's ziggurat_nor_inv_r.
inline constexpr double kR = 3.6541528853610087963519472518;
inline constexpr double kInvR = 1.0 / kR;

ATTN_HD ATTN_INLINE std::uint64_t k(int i) {
#if ATTN_DEVICE_CODE
  return device::kZigguratK[i];
#else
  return kZigguratK[i];
#endif
}
ATTN_HD ATTN_INLINE double w(int i) {
#if ATTN_DEVICE_CODE
  return device::kZigguratW[i];
#else
  return kZigguratW[i];
#endif
}
ATTN_HD ATTN_INLINE double f(int i) {
#if ATTN_DEVICE_CODE
  return device::kZigguratF[i];
#else
  return kZigguratF[i];
#endif
}

}  // namespace attn::zig
