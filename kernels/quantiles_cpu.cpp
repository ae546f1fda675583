// quantiles_cpu.cpp: see quantiles.hpp.
#include <algorithm>
#include <stdexcept>

#include "quantiles.hpp"

namespace attn {

std::vector<double> quantiles_cpu(std::vector<double> values, const std::vector<double>& probs) {
  if (values.empty()) throw std::invalid_argument("quantiles of an empty sample");
  std::sort(values.begin(), values.end());
  return quantiles_of_sorted(values.size(), probs, [&](std::size_t i) { return values[i]; });
}

}  // namespace attn
