// dkstd_numpy.cpp: see dkstd_numpy.hpp.
#include "dkstd_numpy.hpp"

#include <algorithm>

namespace attn::dkstd {
namespace {

using numpy_rng::Pcg64;

// Walks count normals of g, recording g before every `every` normals into starts.
void walk(Pcg64& g, std::uint64_t count, std::uint64_t every, std::vector<Pcg64>& starts,
          Monitor& monitor) {
  for (std::uint64_t done = 0; done < count; done += every) {
    monitor.checkpoint();
    starts.push_back(g);
    const std::uint64_t n = std::min(every, count - done);
    for (std::uint64_t i = 0; i < n; ++i) (void)numpy_rng::standard_normal(g);
    monitor.advance(static_cast<double>(n));
  }
}

}  // namespace

Moments NumpyStream::next_block(std::uint64_t samples, std::uint32_t d_k, Monitor& monitor) {
  const std::uint64_t rows_per_chunk = std::max<std::uint64_t>(1, 65536 / d_k);
  const std::uint64_t normals = samples * d_k;
  std::vector<Pcg64> q_starts, k_starts;
  walk(gen_, normals, rows_per_chunk * d_k, q_starts, monitor);
  walk(gen_, normals, rows_per_chunk * d_k, k_starts, monitor);

  const std::int64_t chunks = static_cast<std::int64_t>(q_starts.size());
  std::vector<Moments> parts(q_starts.size());
  constexpr std::int64_t kWave = 64;  // chunks between progress reports
  for (std::int64_t w0 = 0; w0 < chunks; w0 += kWave) {
    monitor.checkpoint();
    const std::int64_t w1 = std::min(chunks, w0 + kWave);
#pragma omp parallel
    {
      std::vector<double> q(d_k);
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t c = w0; c < w1; ++c) {
        Pcg64 gq = q_starts[c], gk = k_starts[c];
        const std::uint64_t first = static_cast<std::uint64_t>(c) * rows_per_chunk;
        const std::uint64_t rows = std::min(rows_per_chunk, samples - first);
        Moments m;
        for (std::uint64_t r = 0; r < rows; ++r) {
          for (std::uint32_t j = 0; j < d_k; ++j) q[j] = numpy_rng::standard_normal(gq);
          double dot = 0;
          for (std::uint32_t j = 0; j < d_k; ++j) dot += q[j] * numpy_rng::standard_normal(gk);
          m.push(dot);
        }
        parts[c] = m;
      }
    }
    const std::uint64_t rows_done =
        std::min(samples, static_cast<std::uint64_t>(w1) * rows_per_chunk) -
        static_cast<std::uint64_t>(w0) * rows_per_chunk;
    monitor.advance(2.0 * static_cast<double>(rows_done) * d_k);
  }
  Moments total;
  for (const Moments& m : parts) total = merge(total, m);
  return total;
}

}  // namespace attn::dkstd
