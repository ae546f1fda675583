// quantiles_cpu.cpp: see quantiles.hpp.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "quantiles.hpp"

namespace attn {

std::vector<double> quantiles_cpu(std::vector<double> values, const std::vector<double>& probs) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }),
               values.end());
  if (values.empty()) throw std::invalid_argument("quantiles of an empty sample (or all NaN)");
  std::sort(values.begin(), values.end());
  return quantiles_of_sorted(values.size(), probs, [&](std::size_t i) { return values[i]; });
}

}  // namespace attn
