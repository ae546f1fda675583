// philox.hpp: the counter-based generator for bulk sampling, and its normals.
//
// Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
// SC'11): a keyed bijection of a 128-bit counter, 10 rounds of two 32x32->64 multiplies. The
// same (key, counter) gives the same four words everywhere; tests check it against Random123's
// philox4x32 (Debian's librandom123-dev) and the paper's known-answer vectors.
//
// Normals come in pairs by the Box-Muller transform (Box and Muller 1958) in float32:
//   r = sqrt(-2 ln u1),  (r cos theta, r sin theta),  u1 in (0, 1], theta uniform on the circle
// with u1 from all 32 bits of one word (so the radius reaches 6.66 and the tail cut off has
// probability 2^-32) and theta from 30 bits of the other: the top two bits pick the quadrant
// and the rest an angle in [-pi/4, pi/4) within it. fast_math.hpp supplies log, sin and cos,
// so host and device give identical bits.
#pragma once

#include <cmath>
#include <cstdint>

#include "fast_math.hpp"
#include "hd.hpp"

namespace attn::philox {

struct Counter {
  std::uint32_t v[4];
};
struct Key {
  std::uint32_t v[2];
};

inline constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;    // round multipliers
inline constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // key schedule

// One Philox4x32 round (SC'11, the Philox S-box): two 32x32->64 multiplies;
// the high halves are XORed with the other two words and the round key, the low halves kept.
ATTN_HD ATTN_INLINE Counter philox_round(Counter c, Key k) {
  const std::uint64_t p0 = static_cast<std::uint64_t>(kMul0) * c.v[0];
  const std::uint64_t p1 = static_cast<std::uint64_t>(kMul1) * c.v[2];
  return Counter{
      {static_cast<std::uint32_t>(p1 >> 32) ^ c.v[1] ^ k.v[0], static_cast<std::uint32_t>(p1),
       static_cast<std::uint32_t>(p0 >> 32) ^ c.v[3] ^ k.v[1], static_cast<std::uint32_t>(p0)}};
}

// Philox4x32-10: returns the four 32-bit words for counter c under key k.
ATTN_HD ATTN_INLINE Counter philox4x32_10(Counter c, Key k) {
  c = philox_round(c, k);
  ATTN_UNROLL
  for (int round = 1; round < 10; ++round) {
    k.v[0] += kWeyl0;
    k.v[1] += kWeyl1;
    c = philox_round(c, k);
  }
  return c;
}

// Two independent standard normals from two 32-bit words (see the file comment).
ATTN_HD ATTN_INLINE void box_muller(std::uint32_t a, std::uint32_t b, float& n0, float& n1) {
  // u1 = (floor(a/2) + 1/2) 2^-31, in [2^-32, 1]; the signed conversion is exact to 24 bits
  // and vectorizes on CPUs without an unsigned one.
  const float u1 =
      fm::fma(static_cast<float>(static_cast<std::int32_t>(a >> 1)), 0x1p-31f, 0x1p-32f);
  const float r = sqrtf(-2.0f * fm::log_positive(u1));
  const float t = static_cast<float>(static_cast<std::int32_t>(b & 0x3fffffffu) - (1 << 29)) *
                  0x1p-30f;  // in [-1/2, 1/2)
  float s, c;
  fm::sincos_halfpi(t, s, c);
  // Rotate (c, s) by quadrant * pi/2: theta = quadrant * pi/2 + t * pi/2 is uniform on the
  // circle. Quadrant bit 0 swaps the pair and negates the new x, bit 1 negates both:
  //   x = (q & 1) ? -s : c,  y = (q & 1) ? c : s,  then (x, y) -> -(x, y) when (q & 2).
  // Written with masks on the float bits (negation flips the sign bit, exactly as IEEE
  // negation does), not with ?: on floats: GCC if-converts those only where the ISA has mask
  // registers (AVX-512), and on AVX2 the whole lane loop would stay scalar.
  const std::uint32_t swap = 0u - ((b >> 30) & 1u);  // all ones for odd quadrants
  const std::uint32_t negate = b & 0x80000000u;      // the sign bit for quadrants 2, 3
  const auto sb = static_cast<std::uint32_t>(fm::float_bits(s));
  const auto cb = static_cast<std::uint32_t>(fm::float_bits(c));
  const std::uint32_t xb = ((cb & ~swap) | ((sb ^ 0x80000000u) & swap)) ^ negate;
  const std::uint32_t yb = ((sb & ~swap) | (cb & swap)) ^ negate;
  n0 = r * fm::bits_float(static_cast<std::int32_t>(xb));
  n1 = r * fm::bits_float(static_cast<std::int32_t>(yb));
}

// The key of a stream: a 64-bit seed.
ATTN_HD ATTN_INLINE Key key_from_seed(std::uint64_t seed) {
  return Key{{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
}

// Four normals: block `block` of stream `stream` for item `item` (a sample, a row): the
// counter is (block, stream, item low word, item high word).
ATTN_HD ATTN_INLINE void normals4(Key key, std::uint32_t stream, std::uint64_t item,
                                  std::uint32_t block, float out[4]) {
  const Counter w = philox4x32_10(Counter{{block, stream, static_cast<std::uint32_t>(item),
                                           static_cast<std::uint32_t>(item >> 32)}},
                                  key);
  box_muller(w.v[0], w.v[1], out[0], out[1]);
  box_muller(w.v[2], w.v[3], out[2], out[3]);
}

}  // namespace attn::philox
