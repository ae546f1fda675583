// lanes.hpp: packs of lanes for the CPU twins (host only).
//
// A pack holds one value per lane, for several independent problems (seeds) that run the same
// code in lockstep; arithmetic, comparisons and ?: act lane by lane (the GCC/Clang vector
// extension), so the compiler emits SIMD instructions for whatever the CPU has (AVX-512, AVX2,
// SSE2). The templates in tiny_model.hpp take a pack where they take a scalar; each lane then
// computes exactly what the scalar code computes: +, -, *, / are IEEE operations in either
// form, nothing is fused, and exp runs lane by lane through the C library's exp, as numpy's
// does, so the bits are the scalar (and GPU) bits.
#pragma once

#include <cmath>

#include "hd.hpp"

#if !defined(__CUDACC__)

namespace attn {

template <class T>
struct PackOf;  // the pack type with kLanes lanes of T

inline constexpr int kPackLanes = 8;
using PackD = double __attribute__((vector_size(sizeof(double) * kPackLanes)));
using PackF = float __attribute__((vector_size(sizeof(float) * kPackLanes)));
template <>
struct PackOf<double> {
  using type = PackD;
};
template <>
struct PackOf<float> {
  using type = PackF;
};

// Always inlined into the cloned loops, so no pack ever crosses a call (no ABI question).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
ATTN_INLINE PackD exp_t(PackD x) {
  PackD r;
  for (int l = 0; l < kPackLanes; ++l) r[l] = std::exp(x[l]);
  return r;
}
ATTN_INLINE PackF exp_t(PackF x) {
  PackF r;
  for (int l = 0; l < kPackLanes; ++l) r[l] = std::exp(x[l]);
  return r;
}

#pragma GCC diagnostic pop

}  // namespace attn

#endif
