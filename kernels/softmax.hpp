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
// scale > 0. Computed as exp(scale * (s_j - max s)), so no finite input overflows (a difference
// that overflows to -inf just gives weight 0). Sequential (the CPU twin, and any caller with
// one row per thread).
template <class T>
ATTN_HD void softmax_row(const T* scores, T* weights, int n, T scale, int valid) {
  T m = neg_infinity<T>();
  for (int j = 0; j < valid; ++j) m = max_t(m, scores[j]);
  if (!(m > neg_infinity<T>())) {  // every key masked (or an empty row): zeros
    for (int j = 0; j < n; ++j) weights[j] = T(0);
    return;
  }
  T sum = 0;
  for (int j = 0; j < valid; ++j) {
    weights[j] = exp_t(scale * (scores[j] - m));
    sum += weights[j];
  }
  for (int j = 0; j < valid; ++j) weights[j] /= sum;
  for (int j = valid; j < n; ++j) weights[j] = T(0);
}

// Statistics of one row of weights p (sum 1): the largest weight, the entropy in nats
// (-sum p ln p, with 0 ln 0 = 0), and the Frobenius norm of the softmax Jacobian
// J = diag(p) - p p^T: ||J||_F^2 = sum_i (p_i (1 - p_i))^2 + sum_{i != j} (p_i p_j)^2. The
// off-diagonal sum is taken around the largest weight p_k, as 2 p_k^2 r2 + (r2^2 - r4) with
// r2, r4 the sums of p_i^2, p_i^4 over i != k, so that a nearly one-hot row (the saturated
// case this measures) loses no digits to cancellation.
struct RowStats {
  double max_weight, entropy, jacobian_norm;
};

ATTN_HD inline RowStats row_stats(const double* p, int n) {
  int k = 0;
  double entropy = 0, diag = 0;
  for (int j = 0; j < n; ++j) {
    if (p[j] > p[k]) k = j;
    if (p[j] > 0) entropy -= p[j] * log(p[j]);
    const double d = p[j] * (1.0 - p[j]);
    diag += d * d;
  }
  double r2 = 0, r4 = 0;
  for (int j = 0; j < n; ++j) {
    if (j == k) continue;
    const double q2 = p[j] * p[j];
    r2 += q2;
    r4 += q2 * q2;
  }
  const double off = 2.0 * p[k] * p[k] * r2 + (r2 * r2 - r4);
  return RowStats{n > 0 ? p[k] : 0.0, entropy, sqrt(diag + fmax(off, 0.0))};
}

}  // namespace attn
