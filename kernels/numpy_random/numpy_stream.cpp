// numpy_stream.cpp: see numpy_stream.hpp. The rounds and joins in numpy_decode.cpp.
#include "kernels/numpy_random/numpy_stream.hpp"

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <utility>

#include "cpu_threads.hpp"
#include "kernels/numpy_random/numpy_decode.hpp"

namespace attn::dk_std {

using numpy_rng::Pcg64;
using stream::decode;
using stream::Job;
using stream::Normals;
using stream::Span;

StreamSplit device_split(PieceDecoder decoder, DecodeWait wait, HostMemory host) {
  StreamSplit s;
  s.piece_words = 128;
  s.head_starts = 16;
  s.wave_normals = s.k_wave_normals = std::uint64_t{1} << 25;
  s.decoder = std::move(decoder);
  s.wait = std::move(wait);
  s.host = host;
  return s;
}

void decode_pieces_cpu(const Pcg64& g0, Piece* pieces, std::size_t count, int head, double* values,
                       int threads) {
#pragma omp parallel for schedule(dynamic, 1) \
    num_threads(threads > 0 ? threads : omp_get_max_threads())
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i) {
    bind_this_thread();
    Piece& p = pieces[i];
    decode_piece(g0, p.begin, p, head, values != nullptr ? values + p.begin : nullptr);
  }
}

std::vector<double> parallel_normals(Pcg64& g, std::uint64_t count, const StreamSplit& split) {
  Normals v;
  decode({Job{&g, count, &v}}, split);
  std::vector<double> out(count);
  for (const Span& s : v.spans)
    std::copy(s.p, s.p + s.n, out.begin() + static_cast<std::ptrdiff_t>(s.first));
  return out;
}

}  // namespace attn::dk_std
