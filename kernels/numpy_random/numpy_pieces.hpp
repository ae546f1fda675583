// numpy_pieces.hpp: one piece of numpy's normal stream, decoded from a word offset, on the host
// or the device (kernels/numpy_random/numpy_stream.hpp says how pieces make the stream parallel).
//
// A piece covers the stream's words [begin, end). Decoding it from a word `from` treats `from` as
// a normal's start and takes normals (numpy_rng::standard_normal: one word each, more on the
// ziggurat's rare paths) until one starts at or after end; it records where its first normals
// start (head), how many it took (n) and where the next one starts (next). The CPU's threads
// (kernels/numpy_random/numpy_decode.cpp) and the CUDA kernel
// (kernels/numpy_random/numpy_pieces_cuda.cu) run this same code; the host then joins the pieces.
#pragma once

#include <cstdint>

#include "hd.hpp"
#include "kernels/numpy_random/numpy_random.hpp"

namespace attn::dk_std {

inline constexpr int kMaxHead = 64;  // normal starts a piece can record

struct Piece {
  std::uint64_t begin = 0,
                end = 0;   // words [begin, end) of the stream, relative to the run's start
  std::uint64_t n = 0;     // normals decoded that start before end
  std::uint64_t next = 0;  // where the first normal starting at or after end starts
  std::uint64_t head[kMaxHead];
};

// The generator with its position in words: what standard_normal draws, counted.
struct CountedPcg64 {
  numpy_rng::Pcg64 g;
  std::uint64_t pos;
  ATTN_HD std::uint64_t next_uint64() {
    ++pos;
    return g.next_uint64();
  }
  ATTN_HD double next_double() {
    ++pos;
    return g.next_double();
  }
};

// One normal, starting at word pos of g (g stands there): recorded in p.head while n < head,
// stored in out[n] when out is not null; pos, n and g move past it. The ziggurat's first step is
// inlined and the rare path gets a counted copy of the generator, so that the generator stays
// in registers (its address is never taken).
ATTN_HD ATTN_INLINE void piece_step(numpy_rng::Pcg64& g, std::uint64_t& pos, std::uint64_t& n,
                                    Piece& p, int head, double* out) {
  if (n < static_cast<std::uint64_t>(head)) p.head[n] = pos;
  int idx;
  std::uint64_t rabs;
  double x;
  ++pos;
  if (!numpy_rng::ziggurat_first(g.next_uint64(), idx, rabs, x)) {
    CountedPcg64 c{g, pos};
    x = numpy_rng::standard_normal_rare(c, idx, rabs, x);
    g = c.g;
    pos = c.pos;
  }
  if (out != nullptr) out[n] = x;
  ++n;
}

// Decodes piece p from word `from` (p.begin, or a later true start) of the stream that g0
// stands at the start of; out: where its values go (out[0] the first), or null.
ATTN_HD inline void decode_piece(const numpy_rng::Pcg64& g0, std::uint64_t from, Piece& p, int head,
                                 double* out) {
  numpy_rng::Pcg64 g = g0;
  g.advance(from);
  std::uint64_t pos = from, n = 0;
  while (pos < p.end) piece_step(g, pos, n, p, head, out);
  p.n = n;
  p.next = pos;
}

}  // namespace attn::dk_std
