// saturation.hpp: how softmax saturates without the 1/sqrt(d_k) scaling (beyond the lesson).
//
// Lesson section 5 says that without the scaling the scores grow like sqrt(d_k), softmax puts
// nearly all weight on one key and the gradients vanish. Measured here: for each row, a query
// q and n keys k_j, all entries i.i.d. N(0, 1); scores s_j = q . k_j (batched score kernel);
// weights softmax(s) and softmax(s / sqrt(d_k)) (row-softmax kernel); per row the largest
// weight, the entropy and the Frobenius norm of the softmax Jacobian (softmax.hpp row_stats).
//
// Normals: Philox4x32-10 keyed by the seed, stream kStreamTag | d_k, item = row; the row's
// (1 + n) d_k normals (q first, then the keys row-major) are taken four per block in order.
#pragma once

#include <cstdint>

#include "hd.hpp"
#include "philox.hpp"

namespace attn::saturation {

inline constexpr std::uint32_t kStreamTag = 0x80000000u;  // apart from dk-std's streams (d_k)
inline constexpr int kStats = 6;  // unscaled max, entropy, jacobian; then the same scaled

struct Params {
  std::uint64_t seed = 0;
  std::uint32_t d_k = 1;
  int keys = 3;

  ATTN_HD std::uint64_t normals_per_row() const {
    return static_cast<std::uint64_t>(1 + keys) * d_k;
  }
};

// Block b (4 normals) of row `row` into q (d_k) / k (keys x d_k) of that row.
ATTN_HD inline void fill_block(const Params& p, std::uint64_t row, std::uint32_t b, double* q,
                               double* k) {
  float n[4];
  philox::normals4(philox::key_from_seed(p.seed), kStreamTag | p.d_k, row, b, n);
  for (int s = 0; s < 4; ++s) {
    const std::uint64_t e = 4ull * b + s;
    if (e < p.d_k)
      q[e] = n[s];
    else if (e < p.normals_per_row())
      k[e - p.d_k] = n[s];
  }
}

// Rows [first, first + rows): out[r * kStats + i] is statistic i of row first + r.
void row_stats_cpu(const Params& p, std::uint64_t first, std::int64_t rows, double* out);
#if defined(ATTNLAB_WITH_CUDA)
// Device scratch for `rows` rows of the GPU pipeline (all device memory): q (rows x d_k),
// k (rows x keys x d_k), scores and weights (rows x keys).
struct DeviceScratch {
  double *q, *k, *scores, *weights;
};
// GPU, device-resident: fill (Philox), batched score GEMM (one query per problem, `rows`
// problems), row softmax unscaled and scaled, row statistics into d_out (rows x kStats, device
// memory). No allocation, no copy; returns when queued.
void row_stats_cuda_device(const Params& p, std::uint64_t first, std::int64_t rows,
                           const DeviceScratch& scratch, double* d_out);
// Host wrapper: out in host memory. Keeps the scratch and d_out from call to call (per host
// thread, grown when a call needs more) and copies back through page-locked memory; returns
// when out is written.
void row_stats_cuda(const Params& p, std::uint64_t first, std::int64_t rows, double* out);
#endif

}  // namespace attn::saturation
