// quantiles_cuda.cu: quantiles by sorting on the device with Thrust (see quantiles.hpp).
#include <thrust/device_vector.h>
#include <thrust/sort.h>

#include <stdexcept>

#include "quantiles.hpp"

namespace attn {

std::vector<double> quantiles_cuda(const std::vector<double>& values,
                                   const std::vector<double>& probs) {
  if (values.empty()) throw std::invalid_argument("quantiles of an empty sample");
  thrust::device_vector<double> d(values.begin(), values.end());
  thrust::sort(d.begin(), d.end());
  // Only the order statistics the quantiles need come back to the host.
  return quantiles_of_sorted(values.size(), probs, [&](std::size_t i) { return double(d[i]); });
}

}  // namespace attn
