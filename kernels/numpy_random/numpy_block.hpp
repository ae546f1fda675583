// numpy_block.hpp: the end of a block of the vector decoder (numpy_simd.hpp): its vectors with a
// lane not surely accepted, listed with their states, resolved in word order into the block's
// normals. Host only, in builds with CPU levels (cpu_clones.hpp).
#pragma once

#include <cstdint>

#include "kernels/numpy_random/numpy_random.hpp"

namespace attn::dk_std::stream {

using numpy_rng::Pcg64;
using numpy_rng::u128;

constexpr unsigned kBlockVectors = 128;  // vectors a block: its lists take 17 KiB of stack

// A block's listed vectors: for entry e, vector vix[e] of the block, accepted[e] its lanes
// surely accepted (Isa::surely_accepted), los[e]/his[e] its lanes' states.
struct Listed {
  alignas(64) std::uint64_t los[kBlockVectors][8], his[kBlockVectors][8];
  unsigned accepted[kBlockVectors], vix[kBlockVectors];
  u128 state(unsigned e, unsigned j) const {
    return (static_cast<u128>(his[e][j]) << 64) | los[e][j];
  }
};

// Where a block's walk ended: n normals; the next starts at word next, which is past the
// block's end only when a rare path drew past it (the generator then stands at `state`).
struct BlockEnd {
  std::uint64_t n, next;
  u128 state;
};

// The normals of the block of words [base, base + words), a true normal start at base: the
// first m entries of `listed` are its vectors with a lane not surely accepted. slot: the
// candidate values by word (null when locating); the normals' values are left at slot[0 .. n).
BlockEnd resolve_block(const Pcg64& proto, std::uint64_t base, std::uint64_t words, unsigned m,
                       const Listed& listed, double* slot);

}  // namespace attn::dk_std::stream
