// quantiles_cuda.cu: quantiles by sorting on the device with Thrust (see quantiles.hpp).
#include <thrust/device_vector.h>
#include <thrust/remove.h>
#include <thrust/sort.h>

#include <stdexcept>

#include "quantiles.hpp"

namespace attn {
namespace {
struct IsNan {
  __host__ __device__ bool operator()(double v) const { return v != v; }
};
}  // namespace

std::vector<double> quantiles_cuda(const std::vector<double>& values,
                                   const std::vector<double>& probs) {
  thrust::device_vector<double> d(values.begin(), values.end());
  d.erase(thrust::remove_if(d.begin(), d.end(), IsNan()), d.end());
  if (d.empty()) throw std::invalid_argument("quantiles of an empty sample (or all NaN)");
  thrust::sort(d.begin(), d.end());
  // Only the order statistics the quantiles need come back to the host.
  return quantiles_of_sorted(d.size(), probs, [&](std::size_t i) { return double(d[i]); });
}

}  // namespace attn
