// quantiles_cuda.cu: quantiles by sorting on the device with Thrust (see quantiles.hpp).
#include <thrust/device_vector.h>
#include <thrust/sort.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "quantiles.hpp"

namespace attn {

std::vector<double> quantiles_cuda(const std::vector<double>& values,
                                   const std::vector<double>& probs) {
  if (values.empty()) throw std::invalid_argument("quantiles of an empty sample");
  thrust::device_vector<double> d(values.begin(), values.end());
  thrust::sort(d.begin(), d.end());
  std::vector<double> out;
  for (double p : probs) {
    const double h = (static_cast<double>(values.size()) - 1) * p;
    const std::size_t lo = static_cast<std::size_t>(std::floor(h));
    const std::size_t hi = std::min(lo + 1, values.size() - 1);
    out.push_back(linear_quantile(d[lo], d[hi], h - std::floor(h)));
  }
  return out;
}

}  // namespace attn
