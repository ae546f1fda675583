// quantiles_cpu.cpp: see quantiles.hpp.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "quantiles.hpp"

namespace attn {

std::vector<double> quantiles_cpu(std::vector<double> values, const std::vector<double>& probs) {
  if (values.empty()) throw std::invalid_argument("quantiles of an empty sample");
  std::sort(values.begin(), values.end());
  std::vector<double> out;
  for (double p : probs) {
    const double h = (static_cast<double>(values.size()) - 1) * p;
    const std::size_t lo = static_cast<std::size_t>(std::floor(h));
    const std::size_t hi = std::min(lo + 1, values.size() - 1);
    out.push_back(linear_quantile(values[lo], values[hi], h - std::floor(h)));
  }
  return out;
}

}  // namespace attn
