// cpu_clones.hpp: build a hot CPU loop for several x86-64 levels and pick one at load time.
//
// The shared math uses fused multiply-adds (fast_math.hpp). CPUs with FMA run them as one
// instruction; the "default" clone still computes the same bits through libm's fma, slowly.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(ATTNLAB_NO_CLONES)
#define ATTN_CPU_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATTN_CPU_CLONES
#endif
