// quantiles.hpp: exact quantiles of a sample by sorting, numpy's default ("linear", Hyndman
// and Fan type 7): with h = (N - 1) p, q(p) = x[floor h] + (h - floor h)(x[floor h + 1] -
// x[floor h]) on the sorted values.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace attn {

// Quantiles of the non-NaN `values` at each probability in probs (each in [0, 1]). NaN has no
// place in an order (and `<` over NaN is not a strict weak ordering, undefined behaviour for
// std::sort and Thrust's sort alike), so NaN values are removed before sorting; +-inf sort as
// numbers. Throws std::invalid_argument when no value is left. The CPU sorts with std::sort; the
// CUDA build sorts on the device with Thrust.
std::vector<double> quantiles_cpu(std::vector<double> values, const std::vector<double>& probs);
#if defined(ATTNLAB_WITH_CUDA)
// Device-resident: sorts d_values[0, n) (device memory) in place, ascending.
void sort_cuda_device(double* d_values, std::size_t n);
// Host wrapper: copies values to the device, sorts them there, reads back the order statistics.
std::vector<double> quantiles_cuda(const std::vector<double>& values,
                                   const std::vector<double>& probs);
#endif

// Quantiles of a sorted sample of n values, read through sorted_at(i) (host memory or the
// device): type 7, interpolating between the order statistics that bracket (n - 1) p.
template <class SortedAt>
std::vector<double> quantiles_of_sorted(std::size_t n, const std::vector<double>& probs,
                                        SortedAt sorted_at) {
  std::vector<double> out;
  for (double p : probs) {
    const double h = (static_cast<double>(n) - 1) * p;
    const double lo_h = std::floor(h);
    const std::size_t lo = static_cast<std::size_t>(lo_h);
    const std::size_t hi = lo + 1 < n ? lo + 1 : n - 1;
    const double lower = sorted_at(lo), upper = sorted_at(hi);
    // On an order statistic (or between equal ones) the value itself: also right for +-inf,
    // where the interpolation would give 0 * inf = NaN.
    if (h == lo_h || upper == lower) {
      out.push_back(lower);
      continue;
    }
    const double f = h - lo_h;
    double q = lower + f * (upper - lower);
    // Finite values of opposite signs beyond half the largest double: upper - lower overflows
    // although the quantile lies between them; the weighted sum of the two stays in range.
    if (!std::isfinite(q) && std::isfinite(lower) && std::isfinite(upper))
      q = (1 - f) * lower + f * upper;
    out.push_back(q);
  }
  return out;
}

}  // namespace attn
