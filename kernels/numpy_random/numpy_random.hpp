// numpy_random.hpp: numpy's default_rng, reproduced draw for draw, on host and device.
//
//   default_rng(seed) = Generator(PCG64(SeedSequence(seed)))
//
// SeedSequence (pool of 4 x uint32, hashmix/mix), PCG64 (128-bit LCG, XSL-RR output) and the
// 256-layer ziggurat standard normal, as spec/NUMPY_RANDOM.md states them (checked there
// against numpy 1.24, and in tests/test_numpy_random.cpp against numpy's own draws).
// All arithmetic on uint32 is modulo 2^32, on unsigned __int128 modulo 2^128 (nvcc supports
// 128-bit integers in device code since CUDA 11.5).
#pragma once

#include <cmath>
#include <cstdint>

#include "hd.hpp"
#include "kernels/numpy_random/ziggurat_tables.hpp"

namespace attn::numpy_rng {

using u128 = unsigned __int128;

// SeedSequence(seed) for a non-negative integer seed below 2^64: its entropy is the seed's
// 32-bit limbs, least significant first (seed 0 -> one word, 0). generate_state(4, uint64)
// is what PCG64 asks of it.
class SeedSequence {
 public:
  ATTN_HD explicit SeedSequence(std::uint64_t seed) {
    const std::uint32_t entropy[2] = {static_cast<std::uint32_t>(seed),
                                      static_cast<std::uint32_t>(seed >> 32)};
    const int n_entropy = (seed >> 32) != 0 ? 2 : 1;
    std::uint32_t hash = kInitA;
    for (int i = 0; i < 4; ++i) pool_[i] = hashmix(i < n_entropy ? entropy[i] : 0u, hash);
    for (int src = 0; src < 4; ++src)
      for (int dst = 0; dst < 4; ++dst)
        if (src != dst) pool_[dst] = mix(pool_[dst], hashmix(pool_[src], hash));
    // Entropy words past the fourth would be mixed in here; a 64-bit seed has at most two.
  }

  // Fills out[0..n) with generate_state(n, uint64): word j = w32[2j] | w32[2j+1] << 32.
  ATTN_HD void generate_state(std::uint64_t* out, int n) const {
    std::uint32_t hash = kInitB;
    for (int i = 0; i < 2 * n; ++i) {
      std::uint32_t v = pool_[i % 4];
      v ^= hash;
      hash *= kMultB;
      v *= hash;
      v ^= v >> kXShift;
      if (i % 2 == 0)
        out[i / 2] = v;
      else
        out[i / 2] |= static_cast<std::uint64_t>(v) << 32;
    }
  }

  ATTN_HD std::uint32_t pool(int i) const { return pool_[i]; }

 private:
  static constexpr std::uint32_t kInitA = 0x43b0d7e5u, kMultA = 0x931e8875u;
  static constexpr std::uint32_t kInitB = 0x8b51f9ddu, kMultB = 0x58f38dedu;
  static constexpr std::uint32_t kMixMultL = 0xca01f9ddu, kMixMultR = 0x4973f715u;
  static constexpr int kXShift = 16;

  ATTN_HD static std::uint32_t hashmix(std::uint32_t v, std::uint32_t& hash) {
    v ^= hash;
    hash *= kMultA;
    v *= hash;
    v ^= v >> kXShift;
    return v;
  }
  ATTN_HD static std::uint32_t mix(std::uint32_t x, std::uint32_t y) {
    std::uint32_t r = kMixMultL * x - kMixMultR * y;
    return r ^ (r >> kXShift);
  }

  std::uint32_t pool_[4];
};

// PCG64: state <- state * mult + inc (mod 2^128); output XSL-RR of the new state. next_uint32
// halves a 64-bit output as numpy's pcg64_next32 does: the low half first, the high half kept
// for the next call (the generator's has_uint32/uinteger, which 64-bit draws leave alone).
class Pcg64 {
 public:
  ATTN_HD explicit Pcg64(std::uint64_t seed) {
    std::uint64_t s[4];
    SeedSequence(seed).generate_state(s, 4);
    const u128 initstate = (static_cast<u128>(s[0]) << 64) | s[1];
    const u128 initseq = (static_cast<u128>(s[2]) << 64) | s[3];
    inc_ = (initseq << 1) | 1u;
    state_ = 0;
    step();
    state_ += initstate;
    step();
  }

  ATTN_HD std::uint64_t next_uint64() {
    step();
    return output(state_);
  }

  ATTN_HD std::uint32_t next_uint32() {
    if (has_uint32_) {
      has_uint32_ = false;
      return uinteger_;
    }
    const std::uint64_t next = next_uint64();
    has_uint32_ = true;
    uinteger_ = static_cast<std::uint32_t>(next >> 32);
    return static_cast<std::uint32_t>(next);
  }

  // XSL-RR: the word drawn by the step that leaves the generator at state s.
  ATTN_HD static std::uint64_t output(u128 s) {
    const unsigned rot = static_cast<unsigned>(s >> 122);
    const std::uint64_t x = static_cast<std::uint64_t>(s >> 64) ^ static_cast<std::uint64_t>(s);
    return (x >> rot) | (x << ((64u - rot) & 63u));
  }

  // numpy's next_double: the top 53 bits, times 2^-53, in [0, 1).
  ATTN_HD double next_double() { return double_from(next_uint64()); }
  ATTN_HD static double double_from(std::uint64_t r) {
    return static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);
  }

  // Jumps ahead `delta` words (delta calls of next_uint64) in O(log delta) steps, as numpy's
  // PCG64.advance does: n steps of s -> a s + c are s -> A s + C with A = a^n and
  // C = c (a^(n-1) + ... + a + 1), both built by squaring (Brown, "Random number generation
  // with arbitrary strides", 1994; O'Neill's pcg_advance_lcg_128).
  ATTN_HD void advance(u128 delta) {
    u128 acc_mult = 1, acc_plus = 0, cur_mult = kMultiplier, cur_plus = inc_;
    while (delta > 0) {
      if (delta & 1u) {
        acc_mult *= cur_mult;
        acc_plus = acc_plus * cur_mult + cur_plus;
      }
      cur_plus = (cur_mult + 1) * cur_plus;
      cur_mult *= cur_mult;
      delta >>= 1;
    }
    state_ = acc_mult * state_ + acc_plus;
  }

  // The raw 128-bit state and increment, for decoders that step several words at once
  // (kernels/numpy_random/numpy_simd.cpp): state <- state * kMultiplier + increment per word.
  static constexpr u128 kMultiplier =
      (static_cast<u128>(0x2360ED051FC65DA4ull) << 64) | 0x4385DF649FCCF645ull;
  ATTN_HD u128 state() const { return state_; }
  ATTN_HD u128 increment() const { return inc_; }
  ATTN_HD void set_state(u128 s) { state_ = s; }

  friend ATTN_HD bool operator==(const Pcg64& a, const Pcg64& b) {
    return a.state_ == b.state_ && a.inc_ == b.inc_ && a.has_uint32_ == b.has_uint32_ &&
           (!a.has_uint32_ || a.uinteger_ == b.uinteger_);
  }

 private:
  ATTN_HD void step() { state_ = state_ * kMultiplier + inc_; }
  u128 state_;
  u128 inc_;
  bool has_uint32_ = false;
  std::uint32_t uinteger_ = 0;
};

// The ziggurat's first step on the 64-bit word r: sets x, and returns true when x is the
// normal (about 99% of words); else standard_normal_rare(g, idx, rabs, x) goes on.
ATTN_HD ATTN_INLINE bool ziggurat_first(std::uint64_t r, int& idx, std::uint64_t& rabs, double& x) {
  idx = static_cast<int>(r & 0xff);
  r >>= 8;
  // The sign bit as a factor of +-1 (exact, and -0 for 0 like numpy's -x): a random branch
  // here would be mispredicted on every other draw.
  const double sign = 1.0 - 2.0 * static_cast<double>(static_cast<int>(r & 1u));
  rabs = (r >> 1) & 0x000fffffffffffffull;
  // rabs < 2^52: converting through int64 is exact and one instruction on any x86-64.
  x = static_cast<double>(static_cast<std::int64_t>(rabs)) * zig::w(idx) * sign;
  return rabs < zig::k(idx);
}

// The ziggurat's wedge test for layer idx (1 .. 255): the candidate x is the normal when a
// uniform height in the layer, from u in [0, 1) (next_double), lies under the density.
ATTN_HD ATTN_INLINE bool wedge_accepts(int idx, double x, double u) {
  const double fx = (zig::f(idx - 1) - zig::f(idx)) * u + zig::f(idx);
  return fx < exp_t(-0.5 * x * x);
}

// The ziggurat's rare paths, for standard_normal below: the wedge, the tail, and redraws after
// a rejection (about 1% of calls). They live in their own (not inlined) function, so that the
// hot loop stays small; the generator goes in and comes back by value, so that its address is
// never taken and its state stays in registers (on the device, a generator passed by reference
// to a call would live in local memory, a stack frame, for the whole kernel).
template <class BitGenerator>
struct RareDraw {
  double x;
  BitGenerator g;  // the generator after the draw
};
template <class BitGenerator>
ATTN_NOINLINE ATTN_HD RareDraw<BitGenerator> standard_normal_rare_from(BitGenerator g, int idx,
                                                                       std::uint64_t rabs,
                                                                       double x) {
  for (;;) {
    if (idx == 0) {
      for (;;) {  // the tail beyond R (Marsaglia 1964), with 1 - U to avoid log(0)
        const double xx = -zig::kInvR * log1p_t(-g.next_double());
        const double yy = -log1p_t(-g.next_double());
        if (yy + yy > xx * xx) return {((rabs >> 8) & 1u) ? -(zig::kR + xx) : zig::kR + xx, g};
      }
    }
    if (wedge_accepts(idx, x, g.next_double())) return {x, g};
    // Rejected: start again with a new draw (the fast path first).
    if (ziggurat_first(g.next_uint64(), idx, rabs, x)) return {x, g};
  }
}
template <class BitGenerator>
ATTN_HD ATTN_INLINE double standard_normal_rare(BitGenerator& g, int idx, std::uint64_t rabs,
                                                double x) {
  const RareDraw<BitGenerator> r = standard_normal_rare_from(g, idx, rabs, x);
  g = r.g;
  return r.x;
}

// numpy's random_standard_normal: the 256-layer ziggurat on 64-bit draws (spec section
// "standard_normal"). About 99% of draws return from the first comparison, having used one
// word; the rest take the wedge or the tail and may draw again. The wedge test and the tail
// loop use exp_t and log1p_t (hd.hpp): glibc's algorithms on the device too, so a device build
// draws the host's bits.
template <class BitGenerator>
ATTN_HD ATTN_INLINE double standard_normal(BitGenerator& g) {
  int idx;
  std::uint64_t rabs;
  double x;
  if (ziggurat_first(g.next_uint64(), idx, rabs, x)) return x;
  return standard_normal_rare(g, idx, rabs, x);
}

// Generator.integers(0, high) for 1 <= high <= 2^32, one value of integers(0, high, size=n)
// (numpy's default dtype int64, whose bounded draws for a range that fits 32 bits take 32-bit
// words: random_bounded_uint64_fill, numpy/random/src/distributions/distributions.c):
// high = 1 draws nothing and gives 0; high = 2^32 is one next_uint32; otherwise Lemire's
// method (buffered_bounded_lemire_uint32): m = u * high for u = next_uint32, rejected while
// its low 32 bits are below 2^32 mod high, and the value is m's high 32 bits. Checked against
// numpy's draws in tests/test_numpy_random.cpp (golden file and live numpy).
template <class BitGenerator>
ATTN_HD std::int64_t integer_below(BitGenerator& g, std::uint64_t high) {
  if (high <= 1) return 0;
  if (high == (std::uint64_t{1} << 32)) return g.next_uint32();
  const std::uint32_t rng = static_cast<std::uint32_t>(high - 1);
  const std::uint32_t excl = rng + 1;
  std::uint64_t m = static_cast<std::uint64_t>(g.next_uint32()) * excl;
  std::uint32_t leftover = static_cast<std::uint32_t>(m);
  if (leftover < excl) {
    const std::uint32_t threshold = (0xffffffffu - rng) % excl;
    while (leftover < threshold) {
      m = static_cast<std::uint64_t>(g.next_uint32()) * excl;
      leftover = static_cast<std::uint32_t>(m);
    }
  }
  return static_cast<std::int64_t>(m >> 32);
}

// Generator.normal(loc, scale): loc + scale * standard_normal, as numpy computes it.
template <class BitGenerator>
ATTN_HD double normal(BitGenerator& g, double loc = 0.0, double scale = 1.0) {
  return loc + scale * standard_normal(g);
}

}  // namespace attn::numpy_rng
