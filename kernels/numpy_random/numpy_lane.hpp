// numpy_lane.hpp: one piece of numpy's stream being decoded (a lane), and its scalar decoders:
// a normal at a time (numpy_pieces.hpp's piece_step), or four lanes in one loop. Host only.
#pragma once

#include <cstdint>

#include "hd.hpp"
#include "kernels/numpy_random/numpy_pieces.hpp"
#include "kernels/numpy_random/numpy_random.hpp"

namespace attn::dk_std::stream {

using numpy_rng::Pcg64;

// One piece's decode in progress: its generator at word pos, normals so far.
struct Lane {
  Pcg64 g;
  std::uint64_t pos, end, n;
  Piece* piece;
  int head;
  double* out;  // values, or null
};

// One normal of lane l (numpy_pieces.hpp).
ATTN_INLINE void step(Lane& l) { piece_step(l.g, l.pos, l.n, *l.piece, l.head, l.out); }

inline Lane lane_at(const Pcg64& g0, std::uint64_t pos, Piece& piece, int head, double* out) {
  Lane l{g0, pos, piece.end, 0, &piece, head, out};
  l.g.advance(pos);
  return l;
}

inline void finish(const Lane& l) {
  l.piece->n = l.n;
  l.piece->next = l.pos;
}

// Decodes lane l until a normal starts at or after its end.
inline void decode_lane(Lane l) {
  while (l.pos < l.end) step(l);
  finish(l);
}

// Four lanes in one loop: each PCG64 step waits on a 128-bit multiply, and four independent
// streams fill those waits.
inline void decode_lanes4(Lane a, Lane b, Lane c, Lane d) {
  while (a.pos < a.end && b.pos < b.end && c.pos < c.end && d.pos < d.end) {
    step(a);
    step(b);
    step(c);
    step(d);
  }
  decode_lane(a);
  decode_lane(b);
  decode_lane(c);
  decode_lane(d);
}

}  // namespace attn::dk_std::stream
