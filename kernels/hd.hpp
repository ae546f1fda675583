// hd.hpp: one spelling for "this function runs on the host and on the device".
//
// Every formula in kernels/ is written once, in a header function marked ATTN_HD. nvcc
// compiles it for both sides; a plain C++ compiler sees an ordinary inline function. The CPU
// twins therefore run the very arithmetic the CUDA kernels run (see DESIGN.md, "One piece of
// math, two backends").
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define ATTN_HD __host__ __device__
#define ATTN_INLINE __forceinline__
#define ATTN_NOINLINE __noinline__
#else
#define ATTN_HD
#define ATTN_INLINE inline __attribute__((always_inline))
#define ATTN_NOINLINE __attribute__((noinline))
#endif

// True while compiling device code (the second pass of nvcc).
#if defined(__CUDA_ARCH__)
#define ATTN_DEVICE_CODE 1
#else
#define ATTN_DEVICE_CODE 0
#endif

// Fully unroll the next loop (a fixed, small trip count) on both compilers.
#if defined(__CUDACC__)
#define ATTN_UNROLL _Pragma("unroll")
#elif defined(__clang__)
#define ATTN_UNROLL _Pragma("clang loop unroll(full)")
#else
#define ATTN_UNROLL _Pragma("GCC unroll 16")
#endif

// glibc's exp and log1p for the device's double exp_t and log1p_t (need ATTN_HD above).
#include "exp_glibc.hpp"
#include "log1p_glibc.hpp"

namespace attn {
// exp in the argument's own precision, on host and device. In double the device computes the
// C library's algorithm (exp_glibc.hpp), so a kernel and its CPU twin (std::exp, or the lane
// packs' copy of it) get the same bits; float keeps CUDA's expf (its twins compare within
// allowances).
ATTN_HD inline float exp_t(float x) { return expf(x); }
ATTN_HD inline double exp_t(double x) {
#if defined(__CUDA_ARCH__)
  return exp_glibc(x);
#else
  return exp(x);
#endif
}
// log1p in double on host and device: the C library's on the host, its algorithm on the device
// (log1p_glibc.hpp), so that numpy's normals (the ziggurat's tail) are the same bits on both.
ATTN_HD inline double log1p_t(double x) {
#if defined(__CUDA_ARCH__)
  return log1p_glibc(x);
#else
  return log1p(x);
#endif
}
// a * b + c rounded once (a fused multiply-add), on host and device; lanes.hpp overloads it for
// lane packs. The builds never fuse on their own (-ffp-contract=off, nvcc -fmad=false), so a
// formula fuses exactly where it calls fma_t. On a host CPU without FMA the C library computes
// it (slowly, exactly).
ATTN_HD inline double fma_t(double a, double b, double c) { return fma(a, b, c); }
// a >= b ? x : y (and a > b ? x : y), for scalars; lanes.hpp overloads them for lane packs.
template <class T>
ATTN_HD ATTN_INLINE T pick_ge(T a, T b, T x, T y) {
  return a >= b ? x : y;
}
template <class T>
ATTN_HD ATTN_INLINE T pick_gt(T a, T b, T x, T y) {
  return a > b ? x : y;
}
}  // namespace attn
