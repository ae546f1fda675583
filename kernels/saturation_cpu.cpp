// saturation_cpu.cpp: CPU twin of the softmax-saturation pipeline (saturation.hpp): fill q and
// keys, batched scores, row softmax twice, row statistics; the GPU path runs the same steps.
#include <cmath>
#include <vector>

#include "attention.hpp"
#include "cpu_threads.hpp"
#include "saturation.hpp"
#include "softmax.hpp"

namespace attn::saturation {

void row_stats_cpu(const Params& p, std::uint64_t first, std::int64_t rows, double* out) {
  const int n = p.keys, d = static_cast<int>(p.d_k);
  std::vector<double> q(static_cast<std::size_t>(rows) * d), k(std::size_t(rows) * n * d);
  std::vector<double> scores(std::size_t(rows) * n), weights(scores.size());
  const std::uint32_t blocks = static_cast<std::uint32_t>((p.normals_per_row() + 3) / 4);
#pragma omp parallel for schedule(static) if (rows * blocks > 16384)
  for (std::int64_t r = 0; r < rows; ++r) {
    bind_this_thread();
    for (std::uint32_t b = 0; b < blocks; ++b)
      fill_block(p, first + r, b, &q[r * d], &k[std::size_t(r) * n * d]);
  }
  batched_scores_cpu<double>(q.data(), k.data(), scores.data(), static_cast<int>(rows), 1, n, d,
                             1.0);
  const double scales[2] = {1.0, 1.0 / std::sqrt(static_cast<double>(d))};
  for (int which = 0; which < 2; ++which) {
    softmax_rows_cpu<double>(scores.data(), weights.data(), rows, n, scales[which], false);
    for (std::int64_t r = 0; r < rows; ++r) {
      const RowStats s = row_stats(&weights[r * n], n);
      double* o = out + r * kStats + 3 * which;
      o[0] = s.max_weight;
      o[1] = s.entropy;
      o[2] = s.jacobian_norm;
    }
  }
}

}  // namespace attn::saturation
