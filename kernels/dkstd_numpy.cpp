// dkstd_numpy.cpp: see dkstd_numpy.hpp.
#include "dkstd_numpy.hpp"

#include <algorithm>

namespace attn::dkstd {

Moments NumpyStream::next_block(std::uint64_t samples, std::uint32_t d_k, Monitor& monitor) {
  const std::uint64_t rows_per_chunk = std::max<std::uint64_t>(1, 65536 / d_k);
  const std::uint64_t chunks = (samples + rows_per_chunk - 1) / rows_per_chunk;
  auto rows_in = [&](std::uint64_t c) {
    return std::min(rows_per_chunk, samples - c * rows_per_chunk);
  };

  numpy_rng::Pcg64 g = gen_;  // a local copy stays in registers in the hot loops
  // Pass 1: walk q's N d_k normals, recording the generator at every chunk start.
  std::vector<numpy_rng::Pcg64> q_starts;
  q_starts.reserve(chunks);
  for (std::uint64_t c = 0; c < chunks; ++c) {
    monitor.checkpoint();
    q_starts.push_back(g);
    for (std::uint64_t i = 0; i < rows_in(c) * d_k; ++i) (void)numpy_rng::standard_normal(g);
    monitor.advance(0.5 * static_cast<double>(rows_in(c) * d_k));
  }

  // Pass 2: k from the live stream, q regenerated chunk by chunk; rows in order.
  std::vector<double> q(rows_per_chunk * d_k);
  Moments total;
  for (std::uint64_t c = 0; c < chunks; ++c) {
    monitor.checkpoint();
    numpy_rng::Pcg64 gq = q_starts[c];
    const std::uint64_t rows = rows_in(c);
    for (std::uint64_t i = 0; i < rows * d_k; ++i) q[i] = numpy_rng::standard_normal(gq);
    Moments m;
    for (std::uint64_t r = 0; r < rows; ++r) {
      double dot = 0;
      for (std::uint32_t j = 0; j < d_k; ++j) dot += q[r * d_k + j] * numpy_rng::standard_normal(g);
      m.push(dot);
    }
    total = merge(total, m);
    monitor.advance(1.5 * static_cast<double>(rows * d_k));
  }
  gen_ = g;
  return total;
}

}  // namespace attn::dkstd
