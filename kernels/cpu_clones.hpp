// cpu_clones.hpp: build a hot CPU loop for several x86-64 levels and pick one at run time.
//
// The one way the CPU code chooses an instruction set. A hot loop is written once as an
// always-inline body; ATTN_CPU_LEVELS compiles it three times, for x86-64-v4 (AVX-512),
// x86-64-v3 (AVX2 + FMA: most laptops, desktops and CI runners) and the baseline, and the
// function it defines calls the copy for cpu_level(). Every level computes the same bits: the
// shared math fuses only where it says so (fast_math.hpp), and the baseline computes those
// fused multiply-adds through libm's fma (slowly).
//
// Where one level takes a hand-written path, the body is a template on the level it is compiled
// for and ATTN_CPU_LEVELS_BY_LEVEL builds it: `if constexpr (L == CpuLevel::v3)` picks the path.
// Hand-written code is intrinsics in functions that carry the level's target (ATTN_TARGET_V4,
// ATTN_TARGET_V3), either whole functions or the members of an ISA shim (a struct of the
// operations a loop needs, one per level) under a loop written once as a template on the shim.
// GCC does not inline a function with a target into one without it (and refuses to compile an
// always-inline one called there), so such functions are not always-inline, and the level's
// copies are compiled with `flatten`: the body and what it calls are inlined into the copy and
// compiled for its level, the shim's operations included. A function marked noinline stays a
// call.
//
// ATTNLAB_CPU_LEVEL=x86-64|x86-64-v3|x86-64-v4 in the environment lowers the level (never
// above what the CPU has), so that one machine can test and time the AVX2 path of an AVX-512
// machine: `ATTNLAB_CPU_LEVEL=x86-64-v3 demo ...`.
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(ATTNLAB_NO_CLONES)
#define ATTN_HAVE_CPU_LEVELS 1
#define ATTN_TARGET_V4 __attribute__((target("arch=x86-64-v4")))
#define ATTN_TARGET_V3 __attribute__((target("arch=x86-64-v3")))
#else
#define ATTN_HAVE_CPU_LEVELS 0
#define ATTN_TARGET_V4
#define ATTN_TARGET_V3
#endif

namespace attn {

enum class CpuLevel { baseline, v3, v4 };

// The level's name as GCC's -march spells it.
inline const char* cpu_level_name(CpuLevel l) {
  return l == CpuLevel::v4 ? "x86-64-v4" : l == CpuLevel::v3 ? "x86-64-v3" : "x86-64";
}

// The level the hot loops run at: the best this CPU has, lowered by ATTNLAB_CPU_LEVEL. Throws
// std::invalid_argument for another value of ATTNLAB_CPU_LEVEL (call it once before a parallel
// region). Builds without levels (not GCC on x86-64, or ATTNLAB_NO_CLONES) report baseline:
// their loops are compiled for the compiler's own -march.
inline CpuLevel cpu_level() {
  static const CpuLevel level = [] {
    CpuLevel best = CpuLevel::baseline;
#if ATTN_HAVE_CPU_LEVELS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4"))
      best = CpuLevel::v4;
    else if (__builtin_cpu_supports("x86-64-v3"))
      best = CpuLevel::v3;
#endif
    const char* env = std::getenv("ATTNLAB_CPU_LEVEL");
    if (env == nullptr || *env == '\0') return best;
    const std::string want = env;
    CpuLevel asked;
    if (want == "x86-64-v4")
      asked = CpuLevel::v4;
    else if (want == "x86-64-v3")
      asked = CpuLevel::v3;
    else if (want == "x86-64")
      asked = CpuLevel::baseline;
    else
      throw std::invalid_argument(
          "ATTNLAB_CPU_LEVEL must be x86-64, x86-64-v3 or x86-64-v4, not '" + want + "'");
    return asked < best ? asked : best;
  }();
  return level;
}

}  // namespace attn

// Returns NAME##_v4 ARGS, NAME##_v3 ARGS or NAME##_baseline ARGS for the level LEVEL (a
// CpuLevel known at run time): the statement that picks a level's copy.
#define ATTN_CPU_LEVEL_CALL(LEVEL, NAME, ARGS) \
  switch (LEVEL) {                             \
    case ::attn::CpuLevel::v4:                 \
      return NAME##_v4 ARGS;                   \
    case ::attn::CpuLevel::v3:                 \
      return NAME##_v3 ARGS;                   \
    default:                                   \
      return NAME##_baseline ARGS;             \
  }

// As ATTN_CPU_LEVEL_CALL for a level L known at compile time (the level of the copy that calls).
#define ATTN_CPU_LEVEL_PICK(L, NAME, ARGS)        \
  if constexpr ((L) == ::attn::CpuLevel::v4)      \
    return NAME##_v4 ARGS;                        \
  else if constexpr ((L) == ::attn::CpuLevel::v3) \
    return NAME##_v3 ARGS;                        \
  else                                            \
    return NAME##_baseline ARGS;

// RET NAME PARAMS: calls NAME##_v4, NAME##_v3 or NAME##_baseline ARGS at cpu_level().
#define ATTN_CPU_LEVELS_DISPATCH(RET, NAME, PARAMS, ARGS) \
  RET NAME PARAMS { ATTN_CPU_LEVEL_CALL(::attn::cpu_level(), NAME, ARGS) }

// Defines RET NAME PARAMS, which runs `NAME##_body ARGS` (an always-inline function) compiled
// for cpu_level(). PARAMS and ARGS are parenthesized lists: (int n, float* x) and (n, x).
#define ATTN_CPU_LEVELS(RET, NAME, PARAMS, ARGS)                   \
  ATTN_TARGET_V4 RET NAME##_v4 PARAMS { return NAME##_body ARGS; } \
  ATTN_TARGET_V3 RET NAME##_v3 PARAMS { return NAME##_body ARGS; } \
  RET NAME##_baseline PARAMS { return NAME##_body ARGS; }          \
  ATTN_CPU_LEVELS_DISPATCH(RET, NAME, PARAMS, ARGS)

// As ATTN_CPU_LEVELS, for a body that is a template on the level it is compiled for
// (`template <CpuLevel L> NAME##_body`), each copy flattened (see above). Builds without levels
// compile every copy as baseline.
#if ATTN_HAVE_CPU_LEVELS
#define ATTN_CPU_LEVEL_V4 ::attn::CpuLevel::v4
#define ATTN_CPU_LEVEL_V3 ::attn::CpuLevel::v3
#else
#define ATTN_CPU_LEVEL_V4 ::attn::CpuLevel::baseline
#define ATTN_CPU_LEVEL_V3 ::attn::CpuLevel::baseline
#endif
#define ATTN_CPU_LEVELS_BY_LEVEL(RET, NAME, PARAMS, ARGS) \
  ATTN_CPU_LEVEL_COPIES(RET, NAME, PARAMS, ARGS)          \
  ATTN_CPU_LEVELS_DISPATCH(RET, NAME, PARAMS, ARGS)
// Its three copies alone (NAME##_v4, NAME##_v3, NAME##_baseline), for a caller that picks one
// by a level of its own.
#define ATTN_CPU_LEVEL_COPIES(RET, NAME, PARAMS, ARGS)           \
  ATTN_TARGET_V4 __attribute__((flatten)) RET NAME##_v4 PARAMS { \
    return NAME##_body<ATTN_CPU_LEVEL_V4> ARGS;                  \
  }                                                              \
  ATTN_TARGET_V3 __attribute__((flatten)) RET NAME##_v3 PARAMS { \
    return NAME##_body<ATTN_CPU_LEVEL_V3> ARGS;                  \
  }                                                              \
  __attribute__((flatten)) RET NAME##_baseline PARAMS {          \
    return NAME##_body<::attn::CpuLevel::baseline> ARGS;         \
  }

// Its three copies as out-of-line functions of a header (inline, noinline, not flattened), for a
// body that code compiled per level calls through ATTN_CPU_LEVEL_PICK: one copy of a large body
// per level, not one at each call site.
#define ATTN_CPU_LEVEL_OUT_OF_LINE_COPIES(RET, NAME, PARAMS, ARGS)       \
  ATTN_TARGET_V4 __attribute__((noinline)) inline RET NAME##_v4 PARAMS { \
    return NAME##_body<ATTN_CPU_LEVEL_V4> ARGS;                          \
  }                                                                      \
  ATTN_TARGET_V3 __attribute__((noinline)) inline RET NAME##_v3 PARAMS { \
    return NAME##_body<ATTN_CPU_LEVEL_V3> ARGS;                          \
  }                                                                      \
  __attribute__((noinline)) inline RET NAME##_baseline PARAMS {          \
    return NAME##_body<::attn::CpuLevel::baseline> ARGS;                 \
  }
