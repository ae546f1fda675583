// lanes.hpp: packs of lanes for the CPU twins (host only).
//
// A pack holds one value per lane, for several independent problems (seeds) that run the same
// code in lockstep; arithmetic, comparisons and ?: act lane by lane (the GCC/Clang vector
// extension), so the compiler emits SIMD instructions for whatever the CPU has (AVX-512, AVX2,
// SSE2). The templates in tiny_model.hpp take a pack where they take a scalar; each lane then
// computes exactly what the scalar code computes: +, -, *, / are IEEE operations in either
// form, nothing is fused but where fma_t says so (rounded once in either form), and exp gives the C
// library's exp bits in every lane, as numpy's does, so the bits are the scalar (and GPU) bits.
//
// exp of a double pack: at cpu_level() v3 and v4 (cpu_clones.hpp) the CPU has FMA and AVX2,
// so glibc's exp is __exp_fma (its ifunc wants both), and exp_t calls exp_fma.cpp's vector copy
// of it: the instruction sequence of Debian 12's libm (glibc 2.36), fused multiply-add for
// fused multiply-add, with its table and constants (exp_fma_table.inc, generated and checked
// equal to libm's __exp_data by tools/make_exp_table.py). Every step is an IEEE operation that
// rounds as glibc's does, so every lane gets glibc's bits; the rare inputs (|x| >= 512, inf,
// nan) call std::exp. Guarded twice: tests/test_lanes.cpp (ExpFma.*) compares it with std::exp
// bit for bit on 1.2e7 inputs (random on [-50, 50] and [-745, 710], random bit patterns, table
// boundaries, specials, the overflow and subnormal edges) at every level the CPU has (one
// multiply-add left unfused there changes 4 of those 1.2e7 results: it fails), and exp_t
// compares 4096 inputs once per process and falls back to std::exp lane by lane on any
// difference, against a libm whose exp is another algorithm or table (that sample is too small
// to see a single differently fused step; the test is what sees that). At the baseline level,
// and for float packs, exp runs lane by lane through the C library (glibc may then pick its
// non-FMA exp).
#pragma once

#include <cmath>
#include <cstdint>

#include "hd.hpp"

#if !defined(__CUDACC__)

#include "cpu_clones.hpp"

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

// Always inlined into the cloned loops, so no pack ever crosses a call (no ABI question); the
// one exception, exp_fma's functions, take and return packs through pointers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace exp_fma_detail {
// *y = exp(*x) for cpu_level() (cpu_clones.hpp's ATTN_CPU_LEVELS_BY_LEVEL, exp_fma.cpp): glibc
// 2.36's __exp_fma on every lane at x86-64-v4 and x86-64-v3, std::exp lane by lane at the
// baseline. Out of line: GCC vectorizes the per-lane fused multiply-adds reliably only in a
// small function (and a body inlined into the baseline copy could not use FMA).
void exp_pack(const PackD* x, PackD* y);
// Its copies for each level, which tests call directly.
void exp_pack_v4(const PackD* x, PackD* y);
void exp_pack_v3(const PackD* x, PackD* y);
void exp_pack_baseline(const PackD* x, PackD* y);
using ExpPack = void (*)(const PackD*, PackD*);
// A softmax row's exponentials: x[i] ← exp_pack's exp(x[i] − *shift) for i < count, and *sum ←
// Σ x[i] (from 0, in the order of i). One call for a row, so that the loop keeps its values in
// registers, which a call per pack would make it spill.
void exp_shifted(PackD* x, int count, const PackD* shift, PackD* sum);
void exp_shifted_v4(PackD* x, int count, const PackD* shift, PackD* sum);
void exp_shifted_v3(PackD* x, int count, const PackD* shift, PackD* sum);
void exp_shifted_baseline(PackD* x, int count, const PackD* shift, PackD* sum);
// Whether exp_pack gives this process's std::exp bits on a fixed sample of inputs (true at the
// baseline; false under a libm whose exp is another algorithm or table).
bool exp_pack_agrees();
}  // namespace exp_fma_detail

// Whether exp_t(PackD) calls exp_pack (else std::exp lane by lane); decided once.
inline bool exp_t_takes_exp_pack() {
  static const bool ok = [] {
    try {
      return exp_fma_detail::exp_pack_agrees();
    } catch (...) {  // a bad ATTNLAB_CPU_LEVEL: cpu_level()'s other callers report it
      return false;
    }
  }();
  return ok;
}

ATTN_INLINE PackD exp_t(PackD x) {
  PackD r;
  if (exp_t_takes_exp_pack()) {
    exp_fma_detail::exp_pack(&x, &r);
    return r;
  }
  for (int l = 0; l < kPackLanes; ++l) r[l] = std::exp(x[l]);
  return r;
}
// a >= b ? x : y and a > b ? x : y lane by lane, on the packs' two 4-lane halves. GCC 12 turns
// a comparison of 8-lane packs into scalar code where the target has no 512-bit vectors (AVX2),
// and compares halves with vcmppd, which the training sweep at x86-64-v3 gains from. At
// AVX-512 the halves cost shuffles, a smaller loss than that gain; a run-time choice between the
// two costs more than either, as the branch stays in the loop.
using HalfD = double __attribute__((vector_size(sizeof(double) * kPackLanes / 2)));
ATTN_INLINE HalfD low_half(PackD a) { return __builtin_shufflevector(a, a, 0, 1, 2, 3); }
ATTN_INLINE HalfD high_half(PackD a) { return __builtin_shufflevector(a, a, 4, 5, 6, 7); }
ATTN_INLINE PackD join_halves(HalfD a, HalfD b) {
  return __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7);
}
ATTN_INLINE PackD pick_ge(PackD a, PackD b, PackD x, PackD y) {
  return join_halves(low_half(a) >= low_half(b) ? low_half(x) : low_half(y),
                     high_half(a) >= high_half(b) ? high_half(x) : high_half(y));
}
ATTN_INLINE PackD pick_gt(PackD a, PackD b, PackD x, PackD y) {
  return join_halves(low_half(a) > low_half(b) ? low_half(x) : low_half(y),
                     high_half(a) > high_half(b) ? high_half(x) : high_half(y));
}
static_assert(kPackLanes == 8, "low_half/high_half take lanes 0-3 and 4-7");

// a * b + c rounded once, lane by lane: each lane is fma_t of its doubles (hd.hpp). Inlined into
// a copy compiled for x86-64-v3 or v4 (cpu_clones.hpp) GCC emits FMA instructions; at the
// baseline each lane is the C library's fma.
ATTN_INLINE PackD fma_t(PackD a, PackD b, PackD c) {
  PackD r;
  for (int l = 0; l < kPackLanes; ++l) r[l] = __builtin_fma(a[l], b[l], c[l]);
  return r;
}

// sqrt lane by lane: correctly rounded, so each lane is the GPU's sqrt of that value.
ATTN_INLINE PackD sqrt_t(PackD x) {
  PackD r;
  for (int l = 0; l < kPackLanes; ++l) r[l] = std::sqrt(x[l]);
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
