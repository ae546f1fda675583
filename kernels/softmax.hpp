// softmax.hpp: numerically stable row softmax and the statistics of one row of weights.
//
//   weights_j = exp(scale * (s_j - m)) / sum_i exp(scale * (s_i - m)),  m = max_i s_i
//
// Subtracting the row max (the standard trick; e.g. Goodfellow, Bengio, Courville, Deep
// Learning, 4.1) keeps every exp in (0, 1], so finite scores of any size give no overflow and
// no NaN. Shared by the CPU twin and the CUDA kernels.
//
// The rule for masked keys and non-finite scores, the same on CPU and GPU, float
// and double. In a row of n scores whose first `valid` keys are visible:
//   1. Masked keys (columns >= valid) get weight exactly 0 and are never read; callers that
//      form the weighted sum skip them too, so whatever their key or value holds (NaN, +-inf)
//      never reaches a visible output. A row with no visible key (valid = 0) is all zeros.
//   2. NaN among the visible scores: every visible weight of the row is NaN (each depends on
//      the NaN through the normalisation); masked weights stay 0.
//   3. Infinite largest score: the keys whose score equals the maximum m = +inf share the
//      weight equally, 1 / (number of such keys), and all others get 0: the limit of softmax
//      as the tied largest scores grow without bound. Likewise when every visible score is
//      -inf (m = -inf): the limit of a tie, equal weight 1 / valid. Never NaN.
//   4. Otherwise (m finite) a visible score of -inf gets weight 0 and finite scores follow the
//      formula above; a difference s_j - m that overflows to -inf just gives weight 0.
// Exact limits are tested in tests/test_softmax.cpp. How scores avoid overflow in the first
// place (scale folded in before the dot product overflows) is attention.hpp's rule.
#pragma once

#include <cmath>

#include "hd.hpp"

namespace attn {

template <class T>
ATTN_HD T neg_infinity() {
  return -static_cast<T>(INFINITY);
}

// The row maximum of the visible scores and whether one of them is NaN: everything the rule
// above needs before the weights. A mergeable value, so a warp can build it from its lanes.
template <class T>
struct RowMax {
  T m = neg_infinity<T>();
  bool nan = false;
  // m is never NaN: a NaN s fails the comparison (what fmax does, without a libm call, so
  // that the CPU twin's loop vectorizes).
  ATTN_HD ATTN_INLINE void add(T s) {
    nan = nan || s != s;
    m = s > m ? s : m;
  }
  ATTN_HD ATTN_INLINE void merge(const RowMax& o) {
    nan = nan || o.nan;
    m = o.m > m ? o.m : m;
  }
  // The unnormalised weight of a visible key with score s; the weights are these divided by
  // their sum over the visible keys (rule 2: NaN; rule 3: 1 for the tied infinite maximum).
  ATTN_HD ATTN_INLINE T numerator(T s, T scale) const {
    if (nan) return static_cast<T>(NAN);
    if (m - m != T(0)) return s == m ? T(1) : T(0);  // m = +inf or -inf: the tie rule
    return exp_t(scale * (s - m));
  }
};

// weights[0..n) = softmax(scale * scores[0..valid)), columns >= valid masked (weight 0), by the
// rule above. scale > 0 and finite. Sequential (the CPU twin, and any caller with one row per
// thread).
template <class T>
ATTN_HD ATTN_INLINE void softmax_row(const T* scores, T* weights, int n, T scale, int valid) {
  RowMax<T> r;
  for (int j = 0; j < valid; ++j) r.add(scores[j]);
  T sum = 0;
  for (int j = 0; j < valid; ++j) {
    weights[j] = r.numerator(scores[j], scale);
    sum += weights[j];
  }
  for (int j = 0; j < valid; ++j) weights[j] /= sum;
  for (int j = valid < 0 ? 0 : valid; j < n; ++j) weights[j] = T(0);
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
