// map_measures.hpp: the measures of attention-sweep (attention_sweep.cpp) on a range of seeds,
// as mergeable states for the chunk driver (host/chunks.hpp). Spec: docs/spec/VARIABILITY.md.
//
// A seed's results (SeedResults below) are its training's losses and its maps and outputs on the
// measured inputs (the held-out inputs, or the training inputs when there are none), measured
// from its final weights (kernels/head.hpp's evaluate_inputs). Every map measure is taken over
// the measured inputs: a map's JSD to another is the mean over the inputs and their loss rows.
// A seed is finite when its losses and every entry of its maps are; diverged when not finite or
// its loss ended far above where it started; converged (generalized) when finite, not diverged
// and its loss (test loss) is below a threshold. The map measures cover the converged seeds or
// every finite one (Cover), a summary for each; the diverged ones are counted.
//
// The sweep measures in two passes, because one measure needs the mean map of all seeds first:
// - MapSummary, the first pass: the losses, each map entry's moments and extremes (the mean map
//   of every measured input) and quantiles, the argmax counts per row, the known map's measures,
//   and the pairs (seeds 1st and 2nd, 3rd and 4th, ... in the order given: JSD between their
//   maps, trained and at the start, RMS distance between their outputs); with --nudge the JSD
//   between each seed's two runs. A chunk of seeds gives one, chunks merge in order.
// - SeedMeasures, the second pass: each seed's JSD to the mean map, given the mean map.
// Quantiles are exact up to a budget of kept values per quantity, binned beyond
// (experiments/quantile_sketch.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "experiments/quantile_sketch.hpp"
#include "host/json.hpp"

namespace attn {

struct PerSeedRecord;  // per_seed_maps.hpp

// JSD(p, q) = ½ KL(p‖m) + ½ KL(q‖m), m = (p + q)/2, natural logarithm, 0 ln 0 = 0, of two
// distributions of length len: between 0 and ln 2.
double jsd(const double* p, const double* q, int len);
// The mean over `rows` rows of length n (row-major) of the rows' JSD.
double map_jsd(const double* a, const double* b, int rows, int n);

// The output distance of a pair of runs: sqrt(sum_e (a[e] - b[e])^2 / rows) over e < count (the
// root mean square over the rows, each a measured input's loss row, of the rows' distance).
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

// A seed is rounding-sensitive (--nudge) when the JSD between the maps of its two runs (the
// second from W_Q[0][0] one ulp up) is above this, in nats.
inline constexpr double kRoundingSensitiveJsd = 1e-6;

// The shape of one seed's measured results: its training's final loss (on the training inputs)
// and starting loss, then evaluate_inputs' loss on the measured inputs (kernels/head.hpp; the
// test loss when they are held out), the maps P_bh on the loss rows of each measured input
// (inputs x H x |R| x n), the outputs on them (inputs x |R| x d_out). `inputs` is the number of
// measured inputs.
struct SeedResults {
  int rows = 1, n = 2, d_out = 2, heads = 1;  // |R|, words, output width, H
  int inputs = 1;                             // measured inputs
  int input_map() const { return rows * n; }  // one head's map of one input
  // The head-averaged maps of every measured input (inputs x |R| x n), the maps the measures
  // take: their rows are the inputs' loss rows in order.
  int map_size() const { return inputs * rows * n; }
  int map_rows() const { return inputs * rows; }
  int size() const { return 3 + inputs * rows * (heads * n + d_out); }
  double loss(const double* r) const { return r[0]; }
  double start_loss(const double* r) const { return r[1]; }
  double test_loss(const double* r) const { return r[2]; }
  const double* maps(const double* r) const { return r + 3; }  // (inputs, H, |R|, n)
  const double* outputs(const double* r) const { return r + 3 + heads * map_size(); }
  // The head-averaged maps P̄_b = (1/H) Σ_h P_bh (heads are interchangeable, spec "Measures with
  // heads"), (inputs, |R|, n): the maps themselves for one head (no arithmetic), else written to
  // `buffer`. Of a maps array in results' layout (maps(r), or a start's maps).
  const double* mean_over_heads(const double* maps, std::vector<double>& buffer) const;
  // Head h's maps of every input, (inputs, |R|, n), gathered into `buffer`.
  const double* head_maps(const double* maps, int h, std::vector<double>& buffer) const;
  bool finite(const double* r) const;  // the losses and every map finite
  // Diverged: not finite, or a final loss more than kDivergedFactor times the starting loss.
  bool diverged(const double* r) const;
  // The final loss more than kDivergedFactor times the starting loss (the finite half of it).
  bool blew_up(const double* r) const { return r[0] > kDivergedFactor * r[1]; }
  // Converged (generalized): not diverged and the loss (test loss) below the threshold.
  bool converged(const double* r, double below) const { return !diverged(r) && r[0] < below; }
  bool generalized(const double* r, double below) const { return !diverged(r) && r[2] < below; }
};
inline const Domain kSeedLoss = {"a loss", 0, INFINITY, 0, true};
inline const Domain kSeedWeight = {"a weight of the map", 0, 1, 1e-12, true};
inline constexpr double kRowSum = 1e-9;  // per key of the row: |sum - 1| <= n kRowSum
// A final weight of W_Q, W_K, W_V or W_O: any finite value (a seed whose final loss is not
// finite may hold non-finite ones; every weight enters the loss, so a finite loss has finite
// weights).
inline const Domain kFinalWeight = {"a final weight", -INFINITY, INFINITY, 0, false};

// Checks `count` maps of `rows` rows of n weights each (row-major): each weight in kSeedWeight's
// domain and each row whose weights are finite summing to 1 within n kRowSum (causal rows too:
// their masked weights are 0). Throws std::invalid_argument naming the value.
void check_map_rows(const double* maps, std::int64_t count, int rows, int n);

// A seed's training result as the first pass keeps it (head::result_size values: the final
// loss, the start loss, then `weights` final weights): losses in kSeedLoss's domain, the
// weights in kFinalWeight's unless the final loss is not finite. Throws std::invalid_argument.
void check_training_result(const double* t, std::int64_t weights);

// The known map of a task (spec "Tasks" and "Tasks over many inputs"), for the measures against
// it: for the token tasks a key for each loss row (the same on every input); for the teacher
// its head-averaged maps on the measured inputs (inputs x |R| x n) and the JSD below which a seed
// found it; neither for the random task.
struct KnownMap {
  std::vector<int> keys;
  std::vector<double> maps;
  double found_below = 1e-3;
  bool empty() const { return keys.empty() && maps.empty(); }
};

// What else the first pass measures per seed, beside its results: the maps (the results'
// layout) at the seed's starting weights on the measured inputs, for "pairwise JSD at the
// start"; with --nudge the JSD between the head-averaged maps of the seed's two runs.
struct SeedExtras {
  const double* start_maps = nullptr;  // count x inputs x H x |R| x n, or nullptr
  const double* nudge_jsd = nullptr;   // count values (NaN: either run not finite), or nullptr
  // count x kInterventionFields values (measure_interventions), or nullptr
  const double* interventions = nullptr;
};

// Which seeds the map measures cover (spec "Which seeds the measures cover"): the converged
// ones (finite, not diverged, final loss below --converged-below), or every finite one.
enum class Cover { converged, finite };
const char* cover_name(Cover c);

// The minimal total cost of an assignment of H rows to H columns (cost row-major, H x H), and
// the assignment (column of each row) when `columns` is given: the Hungarian method
// (shortest augmenting paths), exact, O(H^3).
double min_assignment(const std::vector<double>& cost, int h, std::vector<int>* columns = nullptr);

// The head-matched JSD of two seeds' maps (results' layout): the mean over heads of the JSD
// between head h of a and head π(h) of b (each the mean over the measured inputs and loss rows),
// π the permutation that minimises the sum (min_assignment).
double matched_head_jsd(const SeedResults& shape, const double* a_maps, const double* b_maps);

// A seed's head-averaged maps' mean JSD (over the measured inputs and loss rows) to a known map.
double known_map_jsd(const SeedResults& shape, const KnownMap& known, const double* mean_map);
// Whether a seed found the known map: the token tasks' every loss row of every measured input
// has its argmax (lowest index on a tie) at the known key; the teacher's JSD is below
// found_below.
bool found_known_map(const SeedResults& shape, const KnownMap& known, const double* mean_map,
                     double jsd_to_known);

// The 95% Wilson score interval of a fraction k / n (Wilson 1927; Brown, Cai and DasGupta
// 2001 recommend it over the Wald interval for every n): {lo, hi}, {NaN, NaN} when n is 0.
std::pair<double, double> wilson_interval(std::int64_t k, std::int64_t n);

// The distribution-free 95% interval of a median of n values (order statistics of the
// binomial: Conover, Practical Nonparametric Statistics, 3rd ed., 3.2): the largest rank l
// such that P(B <= l - 1) <= 0.025 for B ~ Binomial(n, 1/2), so that [x_(l), x_(n-l+1)] (the
// sorted values, 1-based) covers the median with probability 1 - 2 P(B <= l - 1) >= 0.95; 0 when
// no rank does (n <= 5). Exact summation of the binomial's terms (from far below the mean,
// where they are below 1e-300).
std::int64_t median_interval_rank(std::int64_t n);

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
// A seed's intervention measures, in this order (kInterventionFields values; NaN where a
// measure does not apply: a seed that is not finite, a patched map without a finite partner, a
// known map where the task has none, a τ_b where no row defines one).
enum InterventionField : int {
  kUniformLoss,     // ΔL under the uniform map
  kUniformOut,      // output distance under it
  kPermutedLoss,    // ... the permuted map
  kPermutedOut,     //
  kPatchedLoss,     // ... the pair partner's maps, heads matched
  kPatchedOut,      //
  kKnownLoss,       // ... the known map
  kKnownOut,        //
  kAdversarialJsd,  // mean over rows of the adversarial map's JSD
  kNotUnique,       // fraction of rows whose adversarial JSD is above kNotUniqueJsd
  kTauB,            // mean over rows of Kendall's τ_b between weights and importance
  kInterventionFields
};
// The interventions' names (the per-seed files' column stems: uniform, permuted, patched, known).
inline constexpr const char* kInterventionNames[4] = {"uniform", "permuted", "patched", "known"};
// The per-seed columns' names, in InterventionField's order.
inline constexpr const char* kInterventionColumns[kInterventionFields] = {
    "dl_uniform", "out_uniform", "dl_permuted", "out_permuted",   "dl_patched", "out_patched",
    "dl_known",   "out_known",   "adv_jsd",     "adv_not_unique", "tau_b"};

// A map is "not unique" in a row where a map this far away (JSD, nats) keeps the output within ε.
inline constexpr double kNotUniqueJsd = 0.1;
// --epsilon's default: the output change the adversary may make (‖(p′ − p) V_h‖₂).
inline constexpr double kDefaultEpsilon = 0.01;

// The intervention measures' quantities (interventions.hpp), in InterventionField's order: a
// change of the loss (any finite value), an output distance, a JSD, a fraction, a τ_b.
inline const QuantileSketch::Quantity kLossChangeQuantity = {kLossScale, {"a change of the loss"}};
inline const QuantileSketch::Quantity kFractionQuantity = {QuantileSketch::linear(0, 1, 14),
                                                           {"a fraction of rows", 0, 1}};
inline const QuantileSketch::Quantity kTauQuantity = {QuantileSketch::linear(-1, 1, 14),
                                                      {"a Kendall's tau", -1, 1, 1e-12}};
const QuantileSketch::Quantity& intervention_quantity(int field);

// Maps with more entries than this keep each entry's moments and extremes only (no quantiles):
// a sketch per entry would cost up to 128 KiB each.
inline constexpr int kMaxEntrySketches = 64;

class MapSummary {
 public:
  // budget: values kept per quantity for exact quantiles. converged_below: a finite seed that
  // did not diverge converged (generalized) when its loss (test loss) is below it. cover: the
  // seeds the measures take. known: the task's known map (spec "Tasks"), or empty.
  MapSummary(SeedResults shape, std::uint64_t budget, double converged_below, Cover cover,
             KnownMap known);

  // Adds `count` consecutive seeds' results (shape.size() values each), in the order given;
  // pairs are (0, 1), (2, 3), ... of them, so a caller adds whole pairs (an odd count only at the
  // end of the seeds). A pair is measured when both its seeds are covered. extras: the seeds'
  // start maps and nudge JSDs, where measured.
  void add(const double* results, std::int64_t count, const SeedExtras& extras = {});
  void merge(const MapSummary& o);
  bool covers(const double* r) const;

  // The state, and back: a state read back is checked as the summary of `seeds` seeds (counts
  // that add up: converged and generalized among the seeds that did not diverge, nudged and
  // rounding-sensitive among the covered ones; every sketch's checks against its quantity's
  // domain, the later inputs' entries' too; the mean map's rows summing to 1 on every measured
  // input; an argmax only where a weight reached 1/n; at most one pair per two covered seeds,
  // as many at the start as trained; seeds that found the known map with its key as argmax, or
  // with JSDs to it below found_below; converged and generalized counts that the covered
  // seeds' kept losses and test losses below the threshold allow; sensitive counts that the
  // nudge JSDs give) and throws std::invalid_argument saying what is wrong. A field added to
  // the summary takes its domain from its QuantileSketch::Quantity (above).
  nlohmann::json to_state() const;
  MapSummary from_state(const nlohmann::json& state, std::int64_t seeds) const;

  // Of the covered seeds' head-averaged maps, every measured input's (shape.map_size()).
  std::vector<double> mean_map() const;
  // Quantiles for each entry of the first measured input's map (the table's P[i][j] rows).
  bool entry_quantiles() const { return shape.input_map() <= kMaxEntrySketches; }
  bool known_map() const { return !known.empty(); }

  SeedResults shape;
  double converged_below;
  Cover cover;
  KnownMap known;
  // Over every seed: seeds, not finite, diverged (not finite included), converged, generalized;
  // covered: the seeds the measures below take; found: covered seeds that found the known map;
  // nudged: covered seeds with a nudge JSD; sensitive: those rounding-sensitive (a nudge JSD
  // above kRoundingSensitiveJsd, or a second run that is not finite).
  std::int64_t seeds = 0, not_finite = 0, diverged = 0, converged = 0, generalized = 0, covered = 0,
               found = 0, nudged = 0, sensitive = 0;
  // Covered seeds' final losses (converged: below the threshold) and test losses.
  QuantileSketch loss, test_loss;
  // P̄'s entries over the covered seeds, every measured input's (inputs x |R| x n): those of
  // the first input keep quantiles when entry_quantiles(), the rest moments and extremes.
  std::vector<QuantileSketch> entries;
  std::vector<std::int64_t> argmax;   // inputs x |R| x n: covered seeds whose row argmax is there
  QuantileSketch pair_jsd, pair_out;  // pairs of covered seeds (P̄; outputs)
  QuantileSketch pair_heads;          // pairs of covered seeds, heads matched (H > 1)
  QuantileSketch pair_start;          // the same pairs' P̄ at their starting weights
  QuantileSketch known_jsd;           // covered seeds' JSD of P̄ to the known map
  QuantileSketch nudge_jsd;           // covered seeds' JSD between their two runs' P̄ (finite)
  // Covered seeds' intervention measures (InterventionField's order; finite values; patched
  // where the pair partner is covered too; known with a known map).
  std::vector<QuantileSketch> interventions;
};

// The second pass over a range of seeds: each seed's loss, JSD of its head-averaged maps to the
// finite seeds' mean maps (the mean over the measured inputs and loss rows; NaN for a seed that
// is not finite) and to the converged seeds' (NaN for a seed that did not converge, or when none
// did), and with per-seed output each seed's record (`records`: record_size values a seed, the
// first its loss; per_seed_maps.hpp). mean_maps: {converged, finite}.
struct SeedMeasures {
  std::vector<double> loss, jsd, jsd_converged, records;
  static SeedMeasures of(const MapSummary& converged, const std::vector<double>& converged_mean,
                         const std::vector<double>& finite_mean, const double* results,
                         std::int64_t count);
  nlohmann::json to_state() const;
  // Checked: `count` seeds, a loss in kSeedLoss's domain, JSDs in [0, ln 2] or NaN, a JSD only
  // for a seed with a finite loss, and to the converged seeds' mean map only for a seed whose
  // loss is below converged_below; with a record (not nullptr) a record of record->size() values
  // each, whose loss is the seed's and whose every value is in its domain
  // (PerSeedRecord::check); without, none.
  static SeedMeasures from_state(const nlohmann::json& state, std::int64_t count,
                                 const PerSeedRecord* record, double converged_below);
};

}  // namespace attn
