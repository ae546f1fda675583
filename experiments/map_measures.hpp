// map_measures.hpp: the measures of attention-sweep (attention_sweep.cpp) on a range of seeds,
// as mergeable states for the chunk driver (host/chunks.hpp). Spec: docs/spec/VARIABILITY.md.
//
// A seed's results are head::result_size(m) values (kernels/head.hpp): the final loss, its map P
// on the loss rows R (|R| x n, row-major), its outputs O on R (|R| x d_v). A seed is finite when
// its loss and every entry of its map are; the others (diverged runs) are counted and left out
// of the map measures.
//
// The sweep measures in two passes, because one measure needs the mean map of all seeds first:
// - MapSummary, the first pass: the loss, each map entry's moments and extremes (the mean map)
//   and quantiles, the argmax counts per row, and the pairs (seeds 1st and 2nd, 3rd and 4th, ...
//   in the order given: JSD between their maps, RMS distance between their outputs). A chunk
//   of seeds gives one, chunks merge in order.
// - SeedMeasures, the second pass: each seed's JSD to the mean map, given the mean map.
// Quantiles are exact up to a budget of kept values per quantity, binned beyond
// (experiments/quantile_sketch.hpp).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/quantile_sketch.hpp"

namespace attn {

// JSD(p, q) = ½ KL(p‖m) + ½ KL(q‖m), m = (p + q)/2, natural logarithm, 0 ln 0 = 0, of two
// distributions of length len: between 0 and ln 2.
double jsd(const double* p, const double* q, int len);
// The mean over `rows` rows of length n (row-major) of the rows' JSD.
double map_jsd(const double* a, const double* b, int rows, int n);

// The output distance of a pair of runs: sqrt(sum_e (a[e] - b[e])^2 / rows) over e < count.
// The plain sum of squares when it is in range (bit for bit). A run's loss is finite while its
// outputs stay below about 1.3e154, so two runs far out on opposite sides can have finite
// differences whose squares sum beyond the largest double; then the sum is taken over the
// differences divided by a power of two above the largest of them, and the root multiplied back.
// Non-finite inputs give the plain sum's inf or NaN.
double rms_distance(const double* a, const double* b, int count, int rows);

// The shape of one seed's results.
struct SeedResults {
  int rows = 1, n = 2, d_v = 2;  // |R|, words, d_v
  int map_size() const { return rows * n; }
  int size() const { return 1 + rows * (n + d_v); }  // head::result_size
  bool finite(const double* r) const;                // loss and map finite
};

// The scales of the binned quantiles (quantile_sketch.hpp), named in the table's notes.
inline const QuantileSketch::Scale kLossScale = QuantileSketch::relative(14);
inline const QuantileSketch::Scale kEntryScale = QuantileSketch::linear(0, 1, 14);
inline const QuantileSketch::Scale kJsdScale = QuantileSketch::linear(0, 0.6931471805599453, 16);
inline const QuantileSketch::Scale kDistanceScale = QuantileSketch::relative(14);
// Maps with more entries than this keep each entry's moments and extremes only (no quantiles):
// a sketch per entry would cost up to 128 KiB each.
inline constexpr int kMaxEntrySketches = 64;

class MapSummary {
 public:
  // budget: values kept per quantity for exact quantiles. converged_below: a finite seed
  // converged when its loss is below it.
  MapSummary(SeedResults shape, std::uint64_t budget, double converged_below);

  // Adds `count` consecutive seeds' results (shape.size() values each), in the order given;
  // pairs are (0, 1), (2, 3), ... of them, so a caller adds whole pairs (an odd count only at the
  // end of the seeds).
  void add(const double* results, std::int64_t count);
  void merge(const MapSummary& o);

  // The state, and back: a state read back is checked as the summary of `seeds` seeds (counts
  // that add up, every sketch's checks) and throws std::invalid_argument saying what is wrong.
  nlohmann::json to_state() const;
  MapSummary from_state(const nlohmann::json& state, std::int64_t seeds) const;

  std::vector<double> mean_map() const;
  bool entry_quantiles() const { return shape.map_size() <= kMaxEntrySketches; }

  SeedResults shape;
  double converged_below;
  std::int64_t seeds = 0, not_finite = 0, converged = 0;
  QuantileSketch loss;                  // finite losses (of every seed)
  std::vector<QuantileSketch> entries;  // P's entries, over the finite seeds
  std::vector<std::int64_t> argmax;     // rows x n: seeds whose row argmax is that key
  QuantileSketch pair_jsd, pair_out;    // pairs of finite seeds
};

// The second pass over a range of seeds: each seed's loss and JSD to the mean map (NaN for a
// seed that is not finite), and with per-seed output their whole results.
struct SeedMeasures {
  std::vector<double> loss, jsd, results;
  // From `count` seeds' results.
  static SeedMeasures of(const SeedResults& shape, const std::vector<double>& mean_map,
                         const double* results, std::int64_t count, bool keep_results);
  nlohmann::json to_state() const;
  // Checked: `count` seeds, results of shape.size() values each when keep_results.
  static SeedMeasures from_state(const nlohmann::json& state, const SeedResults& shape,
                                 std::int64_t count, bool keep_results);
};

}  // namespace attn
