// quantiles_cuda.cu: quantiles by sorting on the device (see quantiles.hpp).
#include <thrust/execution_policy.h>
#include <thrust/remove.h>
#include <thrust/sort.h>

#include <stdexcept>

#include "cuda_check.hpp"
#include "device_buffer.hpp"
#include "quantiles.hpp"

namespace attn {
namespace {
struct IsNan {
  __host__ __device__ bool operator()(double v) const { return v != v; }
};
}  // namespace

void sort_cuda_device(double* d_values, std::size_t n) {
  // Thrust's radix sort takes its temporary storage itself (the one allocation not made
  // through DeviceBuffer); errors throw thrust::system_error, a std::runtime_error.
  cuda_detail::thrust_call([&] { thrust::sort(thrust::device, d_values, d_values + n); });
}

std::vector<double> quantiles_cuda(const std::vector<double>& values,
                                   const std::vector<double>& probs) {
  if (values.empty()) throw std::invalid_argument("quantiles of an empty sample");
  auto d = DeviceBuffer<double>::from_host(values.data(), values.size());
  // NaN has no place in an order: removed first (a sort with < on NaN is undefined behaviour).
  double* end = cuda_detail::thrust_call(
      [&] { return thrust::remove_if(thrust::device, d.data(), d.data() + d.size(), IsNan()); });
  const auto n = static_cast<std::size_t>(end - d.data());
  if (n == 0) throw std::invalid_argument("quantiles of an empty sample (or all NaN)");
  sort_cuda_device(d.data(), n);
  // Only the order statistics the quantiles need come back to the host.
  return quantiles_of_sorted(n, probs, [&](std::size_t i) {
    double x;
    ATTN_CUDA_CHECK(cudaMemcpy(&x, d.data() + i, sizeof(double), cudaMemcpyDeviceToHost));
    return x;
  });
}

}  // namespace attn
