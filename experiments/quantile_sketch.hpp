// quantile_sketch.hpp: the distribution of one quantity over many runs as a mergeable state:
// count, moments, extremes and the quantiles, in bounded memory, so that chunks, MPI ranks and
// shards can each keep one and merge them in a fixed order (host/chunks.hpp).
//
// Quantiles (numpy's default, type 7, kernels/quantiles.hpp):
// - exact while at most `budget` values have been kept (8 bytes each);
// - beyond it, from counts in fixed bins of the scale: each order statistic x_(k) is located
//   exactly by rank (cumulative counts) in its bin and estimated by the bin's centre, clamped to
//   the exact [min, max]. Type 7 interpolates two order statistics with weights 1 - f and f, so
//   the quantile is off by at most what one order statistic is (error_bound()).
// Two scales:
// - linear(lo, hi, bins): `bins` equal bins on [lo, hi] (values outside are counted in the end
//   bins): off by at most half a bin, (hi - lo) / (2 bins), absolute. For bounded quantities (a
//   softmax weight in [0, 1], a JSD in [0, ln 2]).
// - relative(bits): a bin per value of a double's sign, exponent and first `bits` mantissa bits:
//   off by at most 2^-(bits + 1) of the value (relative), for any finite value (a loss, a
//   distance). The bin holding +0 is centred on 0, so that zeros stay zero.
// Bins are counted in pages of 4096, each allocated when a value first falls into it: memory
// grows with the range the values span, never with their number.
// A fixed-bin histogram rather than a KLL or t-digest sketch: the merge is exact (counts add),
// the error bound is proved in a line, and the result does not depend on the merge order.
// A scale of `none` keeps no bins: past the budget the quantiles are given up (moments and
// extremes stay); for tables with too many quantities to bin each one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host/backend.hpp"
#include "host/exact_state.hpp"
#include "host/json.hpp"
#include "moments.hpp"

namespace attn {

class QuantileSketch {
 public:
  struct Scale {
    enum class Kind { none, linear, relative } kind = Kind::none;
    double lo = 0, hi = 1;  // linear
    int bins_log2 = 0;      // linear: 2^bins_log2 bins; relative: mantissa bits
  };
  static Scale linear(double lo, double hi, int bins_log2) {
    return {Scale::Kind::linear, lo, hi, bins_log2};
  }
  static Scale relative(int mantissa_bits) { return {Scale::Kind::relative, 0, 0, mantissa_bits}; }
  static Scale none() { return {}; }

  // What a sketch measures: the scale of its binned quantiles and its domain, the values it can
  // hold (host/exact_state.hpp): a state read back with a value, an extreme or moments outside
  // it is refused. One constant per quantity (map_measures.hpp), so that a quantity's domain is
  // declared where the quantity is.
  struct Quantity {
    Scale scale;
    Domain domain;
    // The same quantity counted only below x (a loss of a run that converged).
    Quantity below(double x) const { return {scale, domain.below(x)}; }
    // The same domain without quantiles (scale none).
    Quantity without_quantiles() const { return {none(), domain}; }
  };

  // The most a binned quantile is off: absolute for linear, relative for relative, 0 for none.
  static double error_bound(const Scale& s);

  QuantileSketch(const Quantity& quantity, std::uint64_t budget);

  // Adds one finite value (a caller leaves out the non-finite ones and counts them itself).
  void push(double v);
  // Adds another sketch's values (same scale; its budget is not looked at).
  void merge(const QuantileSketch& o);

  std::int64_t count() const { return count_; }
  const Moments& moments() const { return moments_; }
  double min() const { return min_; }
  double max() const { return max_; }
  // Quantiles exact (values kept), binned, or given up (scale none past the budget).
  enum class Mode { exact, binned, none };
  Mode mode() const { return mode_; }
  // The values kept (exact mode), in the order they were pushed and merged.
  const std::vector<double>& kept_values() const { return values_; }
  const Scale& scale() const { return scale_; }
  const Domain& domain() const { return domain_; }

  // The quantiles at probs (each in [0, 1]); nullopt when count() is 0 or the mode is none.
  // Exact ones are sorted on the backend; the kept values move to the sort, so this is the
  // sketch's last use.
  std::optional<std::vector<double>> quantiles(const std::vector<double>& probs,
                                               const Backend& backend);

  // The state as JSON, exact (host/exact_state.hpp: doubles as hex floats, the kept values one
  // hex string, the bins as [key, count] pairs of the non-empty ones in increasing order), and
  // back, with this sketch's scale, domain and budget. A state read back is checked first: a
  // count of at most max_count, count and moments agree, min <= max finite and in the domain,
  // moments that values in [min, max] can have (exact_state.hpp), the kept values (one per
  // count) lie in [min, max] and hold both, the bins are in order, in range, count the values,
  // and the first and last hold min and max. Throws std::invalid_argument saying what is wrong;
  // `what` names the quantity.
  nlohmann::json to_state() const;
  QuantileSketch from_state(const nlohmann::json& state, std::int64_t max_count,
                            const std::string& what) const;

 private:
  static constexpr int kPageLog2 = 12;
  std::uint64_t key_of(double v) const;
  double centre_of(std::uint64_t key) const;
  std::uint64_t keys() const;  // keys are 0 .. keys() - 1
  void add_to_bins(double v, std::int64_t times = 1);
  void add_key(std::uint64_t key, std::int64_t times);
  void spill();  // exact -> binned (or none)

  Scale scale_;
  Domain domain_;
  std::uint64_t budget_;
  Mode mode_ = Mode::exact;
  std::int64_t count_ = 0;
  Moments moments_;
  double min_ = 0, max_ = 0;
  std::vector<double> values_;                                // exact mode
  std::map<std::uint64_t, std::vector<std::int64_t>> pages_;  // binned: page -> 4096 counts
};

}  // namespace attn
