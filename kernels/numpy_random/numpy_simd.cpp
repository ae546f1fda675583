// numpy_simd.cpp: see numpy_simd.hpp. The loop is written once over an ISA shim (numpy_isa.hpp)
// and compiled for each level by ATTN_CPU_LEVELS_BY_LEVEL (cpu_clones.hpp).
#include "kernels/numpy_random/numpy_simd.hpp"

#include <algorithm>
#include <cstdint>

#include "cpu_clones.hpp"
#include "kernels/numpy_random/numpy_block.hpp"
#include "kernels/numpy_random/numpy_isa.hpp"

namespace attn::dk_std::stream {
namespace {

#if ATTN_HAVE_CPU_LEVELS
// High 64 bits of a * b, lane by lane, for b = b1 * 2^32 + b0 (b0, b1 in the lanes' low halves).
template <class Isa>
typename Isa::V mul_hi(typename Isa::V a, typename Isa::V b0, typename Isa::V b1) {
  using V = typename Isa::V;
  const V lo32 = Isa::set1(0xffffffffu);
  const V a1 = Isa::template srl<32>(a);
  const V p00 = Isa::mul_u32(a, b0), p01 = Isa::mul_u32(a, b1);
  const V p10 = Isa::mul_u32(a1, b0), p11 = Isa::mul_u32(a1, b1);
  const V mid =
      Isa::add(Isa::add(Isa::template srl<32>(p00), Isa::and_(p01, lo32)), Isa::and_(p10, lo32));
  return Isa::add(Isa::add(p11, Isa::template srl<32>(p01)),
                  Isa::add(Isa::template srl<32>(p10), Isa::template srl<32>(mid)));
}

// The states after words 1 .. 8 of a generator standing at state s, as lanes 0 .. 7.
template <class Isa>
void lanes_from(u128 s, u128 inc, typename Isa::V& lo, typename Isa::V& hi) {
  alignas(64) std::uint64_t l[8], h[8];
  for (int j = 0; j < 8; ++j) {
    s = s * Pcg64::kMultiplier + inc;
    l[j] = static_cast<std::uint64_t>(s);
    h[j] = static_cast<std::uint64_t>(s >> 64);
  }
  lo = Isa::load(l);
  hi = Isa::load(h);
}

// Decodes lane l's normals while eight whole words remain before its end (its head already
// recorded), a block of up to kBlockVectors vectors at a time; values stored when Keep (else
// only counted: locating needs no values).
template <class Isa, bool Keep>
void run(Lane& l) {
  using V = typename Isa::V;
  if (l.pos + 8 > l.end) return;
  const u128 inc = l.g.increment();
  u128 a8 = 1, c8 = 0;
  for (int j = 0; j < 8; ++j) {
    a8 *= Pcg64::kMultiplier;
    c8 = c8 * Pcg64::kMultiplier + inc;
  }
  const V alo = Isa::set1(static_cast<std::uint64_t>(a8));
  const V alo_hi32 = Isa::template srl<32>(alo);
  const V ahi = Isa::set1(static_cast<std::uint64_t>(a8 >> 64));
  const V clo = Isa::set1(static_cast<std::uint64_t>(c8));
  const V chi = Isa::set1(static_cast<std::uint64_t>(c8 >> 64));
  const V byte = Isa::set1(0xff), mant = Isa::set1(0x000fffffffffffffull);
  const V sign = Isa::set1(0x8000000000000000ull);
  const typename Isa::KTable ktable;
  Listed listed;

  u128 at = l.g.state();  // the generator standing at pos
  std::uint64_t pos = l.pos, n = l.n;
  V lo, hi, last_lo, last_hi;
  lanes_from<Isa>(at, inc, lo, hi);
  while (pos + 8 <= l.end) {
    const unsigned vectors =
        static_cast<unsigned>(std::min<std::uint64_t>(kBlockVectors, (l.end - pos) / 8));
    double* slot = Keep ? l.out + n : nullptr;
    unsigned m = 0;
    for (unsigned v = 0; v < vectors; ++v) {
      const V r = Isa::rotr(Isa::xor_(hi, lo), Isa::template srl<58>(hi));  // XSL-RR
      const V idx = Isa::and_(r, byte);
      const V rabs = Isa::and_(Isa::template srl<9>(r), mant);
      const auto layer = Isa::layer(ktable, idx);  // the lanes' layers' k and w
      const unsigned accepted = Isa::surely_accepted(layer, rabs);
      if constexpr (Keep)  // rabs * w[idx], the sign bit from bit 8 of r
        Isa::storeu(slot + 8 * v, Isa::xor_(Isa::mul(Isa::to_double(rabs), Isa::width(layer)),
                                            Isa::and_(Isa::template sll<55>(r), sign)));
      // Listed unconditionally; kept when a lane is not surely accepted.
      Isa::store(listed.los[m], lo);
      Isa::store(listed.his[m], hi);
      listed.accepted[m] = accepted;
      listed.vix[m] = v;
      m += accepted != 0xffu;
      // The next eight words' states: s -> A8 s + C8 (mod 2^128).
      const V mlo = Isa::mul_lo(lo, alo);
      const V mhi = Isa::add(mul_hi<Isa>(lo, alo, alo_hi32),
                             Isa::add(Isa::mul_lo(lo, ahi), Isa::mul_lo(hi, alo)));
      last_lo = lo;
      last_hi = hi;
      lo = Isa::add(mlo, clo);
      hi = Isa::add_carry(Isa::add(mhi, chi), lo, mlo);
    }
    const std::uint64_t words = 8 * std::uint64_t{vectors};
    const BlockEnd e = resolve_block(l.g, pos, words, m, listed, slot);
    n += e.n;
    if (e.next > pos + words) {  // a rare path drew past the block: the lanes start again there
      pos = e.next;
      at = e.state;
      lanes_from<Isa>(at, inc, lo, hi);
    } else {  // the state after the block's last word: lane 7 of its last vector
      pos += words;
      alignas(64) std::uint64_t los[8], his[8];
      Isa::store(los, last_lo);
      Isa::store(his, last_hi);
      at = (static_cast<u128>(his[7]) << 64) | los[7];
    }
  }
  l.g.set_state(at);
  l.pos = pos;
  l.n = n;
}

// Lane l decoded with the vector loop over Isa between its recorded head and its last eight
// words.
template <class Isa>
void decode_lane_vectors(Lane l) {
  while (l.n < static_cast<std::uint64_t>(l.head) && l.pos < l.end) step(l);
  if (l.out != nullptr)
    run<Isa, true>(l);
  else
    run<Isa, false>(l);
  while (l.pos < l.end) step(l);
  finish(l);
}

#endif

// decode_lane_simd at level L.
template <CpuLevel L>
ATTN_INLINE void decode_lane_simd_body(Lane l) {
#if ATTN_HAVE_CPU_LEVELS
  if constexpr (L == CpuLevel::v4)
    decode_lane_vectors<IsaV4>(l);
  else if constexpr (L == CpuLevel::v3)
    decode_lane_vectors<IsaV3>(l);
  else
#endif
    decode_lane(l);
}

}  // namespace

ATTN_CPU_LEVELS_BY_LEVEL(void, decode_lane_simd, (Lane l), (l))

}  // namespace attn::dk_std::stream
