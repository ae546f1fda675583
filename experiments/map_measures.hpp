// map_measures.hpp: the measures of attention-sweep (attention_sweep.cpp) on a range of seeds,
// as mergeable states for the chunk driver (host/chunks.hpp). Spec: docs/spec/VARIABILITY.md.
//
// A seed's results are head::result_size(m) values (kernels/head.hpp, SeedResults below). A
// seed is finite when its loss and every entry of its maps are; diverged when not finite or its
// loss ended far above where it started; converged when finite, not diverged and its loss is
// below a threshold. The map measures cover the converged seeds or every finite one (Cover), a
// summary for each; the diverged ones are counted.
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

// A run diverged when its final loss ends more than this many times above its starting loss:
// gradient descent that works lowers the loss, so a run that ends an order of magnitude above
// where it began has blown up (its steps overshot), whatever its map.
inline constexpr double kDivergedFactor = 10;

// The shape of one seed's results (head::result_size's layout, kernels/head.hpp): the final
// loss, the loss at the start, the H maps P_h on the loss rows (H x |R| x n), the outputs on the
// loss rows (|R| x d_out).
struct SeedResults {
  int rows = 1, n = 2, d_out = 2, heads = 1;  // |R|, words, output width, H
  int map_size() const { return rows * n; }   // one map (the head-averaged one)
  int size() const { return 2 + rows * (heads * n + d_out); }
  const double* head_map(const double* r, int h) const { return r + 2 + h * map_size(); }
  const double* outputs(const double* r) const { return r + 2 + heads * map_size(); }
  // The head-averaged map P̄ = (1/H) Σ_h P_h (heads are interchangeable, spec "Measures with
  // heads"): the map itself for one head (no arithmetic), else written to `buffer`.
  const double* mean_over_heads(const double* r, std::vector<double>& buffer) const;
  bool finite(const double* r) const;  // loss and every map finite
  // Diverged: not finite, or a final loss more than kDivergedFactor times the starting loss.
  bool diverged(const double* r) const;
  // The final loss more than kDivergedFactor times the starting loss (the finite half of it).
  bool blew_up(const double* r) const { return r[0] > kDivergedFactor * r[1]; }
  // What a seed's results can be (they may come from a file): losses >= 0 (kSeedLoss), each
  // map weight in [0, 1] (kSeedWeight) and each row of a map whose weights are finite summing to
  // 1 within kRowSum (causal rows too: their masked weights are 0), the outputs any value; a
  // diverged seed's may be non-finite. Throws std::invalid_argument naming the value.
  void check(const double* r) const;
};
inline const Domain kSeedLoss = {"a loss", 0, INFINITY, 0, true};
inline const Domain kSeedWeight = {"a weight of the map", 0, 1, 1e-12, true};
inline constexpr double kRowSum = 1e-9;  // per key of the row: |sum - 1| <= n kRowSum

// Which seeds the map measures cover (spec "Which seeds the measures cover"): the converged
// ones (finite, not diverged, final loss below --converged-below), or every finite one.
enum class Cover { converged, finite };
const char* cover_name(Cover c);

// The minimal total cost of an assignment of H rows to H columns (cost row-major, H x H), and
// the assignment (column of each row) when `columns` is given: the Hungarian method
// (shortest augmenting paths), exact, O(H^3).
double min_assignment(const std::vector<double>& cost, int h, std::vector<int>* columns = nullptr);

// The head-matched JSD of two seeds' maps: the mean over heads of the JSD between head h of a
// and head π(h) of b, π the permutation that minimises the sum (min_assignment).
double matched_head_jsd(const SeedResults& shape, const double* a, const double* b);

// The scales of the binned quantiles (quantile_sketch.hpp), named in the table's notes.
inline const QuantileSketch::Scale kLossScale = QuantileSketch::relative(14);
inline const QuantileSketch::Scale kEntryScale = QuantileSketch::linear(0, 1, 14);
inline const QuantileSketch::Scale kJsdScale = QuantileSketch::linear(0, 0.6931471805599453, 16);
inline const QuantileSketch::Scale kDistanceScale = QuantileSketch::relative(14);
// The quantities the summaries keep, each with its scale and its domain (the values it can
// take; a state read back holding another is refused). A JSD lies in [0, ln 2]; its sum of
// logarithms may round 1e-17 beyond either end, hence the slack.
inline const QuantileSketch::Quantity kLossQuantity = {kLossScale, {"a loss", 0, INFINITY}};
inline const QuantileSketch::Quantity kEntryQuantity = {kEntryScale,
                                                        {"a weight of the map", 0, 1, 1e-12}};
inline const QuantileSketch::Quantity kJsdQuantity = {kJsdScale,
                                                      {"a JSD", 0, 0.6931471805599453, 1e-12}};
inline const QuantileSketch::Quantity kDistanceQuantity = {kDistanceScale,
                                                           {"an output distance", 0, INFINITY}};
// Maps with more entries than this keep each entry's moments and extremes only (no quantiles):
// a sketch per entry would cost up to 128 KiB each.
inline constexpr int kMaxEntrySketches = 64;

class MapSummary {
 public:
  // budget: values kept per quantity for exact quantiles. converged_below: a finite seed that
  // did not diverge converged when its loss is below it. cover: the seeds the measures take.
  // known: the key of the known map M* for each loss row (spec "Tasks"), or empty (no M*).
  MapSummary(SeedResults shape, std::uint64_t budget, double converged_below, Cover cover,
             std::vector<int> known);

  // Adds `count` consecutive seeds' results (shape.size() values each), in the order given;
  // pairs are (0, 1), (2, 3), ... of them, so a caller adds whole pairs (an odd count only at the
  // end of the seeds). A pair is measured when both its seeds are covered.
  void add(const double* results, std::int64_t count);
  void merge(const MapSummary& o);
  bool covers(const double* r) const;

  // The state, and back: a state read back is checked as the summary of `seeds` seeds (counts
  // that add up, every sketch's checks against its quantity's domain, the mean map's rows
  // summing to 1, an argmax only where a weight reached 1/n, at most one pair per two covered
  // seeds) and throws std::invalid_argument saying what is wrong. A field added to the summary
  // takes its domain from its QuantileSketch::Quantity (above).
  nlohmann::json to_state() const;
  MapSummary from_state(const nlohmann::json& state, std::int64_t seeds) const;

  std::vector<double> mean_map() const;  // of the covered seeds' head-averaged maps
  bool entry_quantiles() const { return shape.map_size() <= kMaxEntrySketches; }
  bool known_map() const { return !known.empty(); }

  SeedResults shape;
  double converged_below;
  Cover cover;
  std::vector<int> known;
  // Over every seed: seeds, not finite, diverged (not finite included), converged; covered: the
  // seeds the measures below take; found: covered seeds whose every loss row has its argmax at
  // the known map's key.
  std::int64_t seeds = 0, not_finite = 0, diverged = 0, converged = 0, covered = 0, found = 0;
  QuantileSketch loss;  // covered seeds' final losses (converged: below the threshold)
  std::vector<QuantileSketch> entries;  // P̄'s entries, over the covered seeds
  std::vector<std::int64_t> argmax;     // rows x n: covered seeds whose row argmax is that key
  QuantileSketch pair_jsd, pair_out;    // pairs of covered seeds (P̄; outputs)
  QuantileSketch pair_heads;            // pairs of covered seeds, heads matched (H > 1)
  QuantileSketch known_jsd;             // covered seeds' JSD of P̄ to the known map
};

// The second pass over a range of seeds: each seed's loss, JSD of its head-averaged map to the
// finite seeds' mean map (NaN for a seed that is not finite) and to the converged seeds' (NaN
// for a seed that did not converge, or when none did), and with per-seed output their whole
// results. mean_maps: {converged, finite}.
struct SeedMeasures {
  std::vector<double> loss, jsd, jsd_converged, results;
  static SeedMeasures of(const MapSummary& converged, const std::vector<double>& converged_mean,
                         const std::vector<double>& finite_mean, const double* results,
                         std::int64_t count, bool keep_results);
  nlohmann::json to_state() const;
  // Checked: `count` seeds, results of shape.size() values each when keep_results (each seed's
  // SeedResults::check), a loss in kSeedLoss's domain, JSDs in [0, ln 2] or NaN, a JSD only for
  // a seed with a finite loss, and to the converged seeds' mean map only for a seed whose loss is
  // below converged_below.
  static SeedMeasures from_state(const nlohmann::json& state, const SeedResults& shape,
                                 std::int64_t count, bool keep_results, double converged_below);
};

}  // namespace attn
