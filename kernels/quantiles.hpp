// quantiles.hpp: exact quantiles of a sample by sorting, numpy's default ("linear", Hyndman
// and Fan type 7): with h = (N - 1) p, q(p) = x[floor h] + (h - floor h)(x[floor h + 1] -
// x[floor h]) on the sorted values.
#pragma once

#include <cstddef>
#include <vector>

namespace attn {

// Quantiles of `values` at each probability in probs (each in [0, 1]); values must be
// non-empty. The CPU sorts with std::sort; the CUDA build sorts on the device with Thrust.
std::vector<double> quantiles_cpu(std::vector<double> values, const std::vector<double>& probs);
#if defined(ATTNLAB_WITH_CUDA)
std::vector<double> quantiles_cuda(const std::vector<double>& values,
                                   const std::vector<double>& probs);
#endif

// Type-7 interpolation between the two order statistics that bracket (n - 1) p.
inline double linear_quantile(double lower, double upper, double frac) {
  return lower + frac * (upper - lower);
}

}  // namespace attn
