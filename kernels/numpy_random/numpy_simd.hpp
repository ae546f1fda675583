// numpy_simd.hpp: numpy's stream decoded eight consecutive words at once (AVX-512, AVX2).
//
// Eight lanes hold the generator's states after words pos .. pos+7 (lane j's XSL-RR output is
// word pos+j); one step moves every lane 8 words on, s -> A8 s + C8 (the 8-step LCG, built by
// composing the one-step map), so the eight 128-bit multiplies are independent. Each lane takes
// the ziggurat's first step on its word, its layer's k and w read by table lookups (Isa::layer:
// permutes and a gather at AVX-512, paired scalar loads at AVX2), and stores its candidate
// value in the slot of its word: in a block of vectors, word w's value at slot[w - base].
// About 98.5% of words are accepted there; a vector with a lane that is not (about 11% of
// vectors) is listed with its lanes' states, with no branch in the loop (a branch there, taken
// at random, and the call behind it cost as much as the loop itself). resolve_block then walks
// the listed lanes in order: a normal is a function of the word it starts at, so every word up
// to the next listed one that is not drawn by an earlier normal starts an accepted normal, and
// a listed word that does start a normal runs the scalar rare path (the wedge, the tail,
// redraws) from its lane's state. The values are compacted over the words the rare paths drew,
// in the same walk. Bits: the same operations as ziggurat_first and standard_normal_rare
// (uint64 -> double is exact below 2^52, the sign is the sign bit), tested at every split and
// at each level. The loop is written once (run) over an ISA shim (IsaV4, IsaV3).
#pragma once

#include "kernels/numpy_random/numpy_lane.hpp"

namespace attn::dk_std::stream {

// Decodes lane l (its recorded head, the vector loop, its last words one at a time) and records
// its count and end in its piece, at cpu_level() v4 or v3; scalar at the baseline, where
// decode() groups lanes by four instead and does not call it.
void decode_lane_simd(Lane l);

}  // namespace attn::dk_std::stream
