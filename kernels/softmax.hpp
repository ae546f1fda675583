// softmax.hpp: numerically stable row softmax and the statistics of one row of weights.
//
//   weights_j = exp(scale * s_j - m) / sum_i exp(scale * s_i - m),  m = max_i scale * s_i
//
// Subtracting the row max (the standard trick; e.g. Goodfellow, Bengio, Courville, Deep
// Learning, 4.1) keeps every exp in (0, 1], so finite scores of any size give no overflow and
// no NaN. Entries of -inf are masked keys: they get weight 0. A row with every entry -inf (all
// keys masked) gives all zeros, never NaN. Shared by the CPU twin and the CUDA kernels.
#pragma once

#include <cmath>

#include "hd.hpp"

namespace attn {

template <class T>
ATTN_HD T neg_infinity() {
  return -static_cast<T>(INFINITY);
}

// weights[0..n) = softmax(scale * scores[0..n)); columns >= valid are masked (weight 0).
// Sequential (the CPU twin, and any caller with one row per thread).
template <class T>
ATTN_HD void softmax_row(const T* scores, T* weights, int n, T scale, int valid) {
  T m = neg_infinity<T>();
  for (int j = 0; j < valid; ++j) m = max_t(m, scale * scores[j]);
  if (!(m > neg_infinity<T>())) {  // every key masked (or an empty row): zeros
    for (int j = 0; j < n; ++j) weights[j] = T(0);
    return;
  }
  T sum = 0;
  for (int j = 0; j < valid; ++j) {
    weights[j] = exp_t(scale * scores[j] - m);
    sum += weights[j];
  }
  for (int j = 0; j < valid; ++j) weights[j] /= sum;
  for (int j = valid; j < n; ++j) weights[j] = T(0);
}

// Statistics of one row of weights p (sum 1): the largest weight, the entropy in nats
// (-sum p ln p, with 0 ln 0 = 0), and the Frobenius norm of the softmax Jacobian
// J = diag(p) - p p^T, from ||J||_F^2 = sum p_i^2 - 2 sum p_i^3 + (sum p_i^2)^2.
struct RowStats {
  double max_weight, entropy, jacobian_norm;
};

ATTN_HD inline RowStats row_stats(const double* p, int n) {
  double mx = 0, entropy = 0, s2 = 0, s3 = 0;
  for (int j = 0; j < n; ++j) {
    const double pj = p[j];
    mx = fmax(mx, pj);
    if (pj > 0) entropy -= pj * log(pj);
    s2 += pj * pj;
    s3 += pj * pj * pj;
  }
  const double jf2 = s2 - 2.0 * s3 + s2 * s2;
  return RowStats{mx, entropy, sqrt(fmax(jf2, 0.0))};
}

}  // namespace attn
