// sweep_summary.hpp: the training sweep's summary of one config as a mergeable state, so that
// chunks, threads or shards can each keep one and merge them (in a fixed order) at the end.
//
// push(weight, loss) adds one run; merge(other) adds another state's runs; finish() gives the
// row. A run diverged when its weight on apple or its loss is not finite: it is counted
// (`diverged`) and left out of every statistic; the statistics are over the other runs (`used` of
// them), and absent (nullopt) when none is left. converged is a fraction of all runs.
//
// Quantiles (numpy's default, type 7, kernels/quantiles.hpp) in bounded memory:
// - exact while at most `exact_budget` weights have been kept (8 bytes each);
// - beyond it, a fixed-bin histogram of kQuantileBins = 2^20 bins on [0, 1] (8 MiB, mergeable by
//   adding counts). The weight on apple is a softmax weight, in [0, 1]. Each order statistic x_(k)
//   is located exactly by rank (cumulative counts) in its bin [j/B, (j+1)/B) and estimated by the
//   bin's centre, clamped to the exact [min, max]: off by at most half a bin, 1/(2B) = 2^-21
//   ≈ 4.8e-7. Type 7 interpolates two order statistics with weights 1 - f and f, so the quantile is
//   off by at most the same bound (kQuantileErrorBound), below the table's 4 printed decimals.
// A fixed-bin histogram rather than a KLL or t-digest sketch: the domain is known and bounded,
// its error bound is absolute and proved in three lines, and merging is exact (Debian 12 ships
// quantile sketches for Java, Rust and PostgreSQL, none for C++: `apt-cache search digest`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host/backend.hpp"
#include "host/exact_state.hpp"
#include "host/json.hpp"
#include "moments.hpp"

namespace attn {

class SweepSummary {
 public:
  static constexpr int kFigureBins = 20;                  // the figure's histogram on [0, 1]
  static constexpr std::int64_t kQuantileBins = 1 << 20;  // the binned quantiles' histogram
  static constexpr double kQuantileErrorBound = 0.5 / kQuantileBins;
  // The domain of what a run pushes (host/exact_state.hpp): the weight on apple, a softmax
  // weight in [0, 1] (its float32 twin rounds within 1e-6 of either end), and the loss >= 0; a
  // diverged run's may be non-finite.
  static inline const Domain kWeight = {"a weight on apple", 0, 1, 1e-6, true};
  static inline const Domain kLoss = {"a loss", 0, INFINITY, 0, true};

  struct Row {
    std::int64_t runs = 0, diverged = 0, used = 0;  // used = runs - diverged
    // Over the used runs; nullopt when used == 0.
    std::optional<double> mean, std, min, max;
    std::vector<std::optional<double>> quantiles;  // one per probability given to finish()
    double converged =
        0;              // fraction of all runs that did not diverge and ended with loss < threshold
    bool exact = true;  // quantiles exact, or binned (within bound)
    std::vector<std::int64_t> histogram;  // kFigureBins counts of the used weights
  };

  // exact_budget: weights kept for exact quantiles (0: binned from the start);
  // converged_below: a run converged if its final loss is below this.
  SweepSummary(std::uint64_t exact_budget, double converged_below);

  void push(double weight, double loss);
  void merge(const SweepSummary& other);
  // Room for the weights of `runs` more runs, up to the budget (one allocation, no doubling).
  void reserve(std::uint64_t runs);
  // The row, quantiles at `probs` (each in [0, 1]); exact ones are sorted on the backend. The
  // kept weights move to the sort: finish() is the state's last use.
  Row finish(const std::vector<double>& probs, const Backend& backend);

  std::int64_t runs() const { return runs_; }

  // The state as JSON, exact (doubles as hex floats, host/chunks.hpp; the quantile bins sparse),
  // and the merge of such a state: the partial states of the chunk driver (shards, MPI ranks,
  // checkpoints). merge_state(s.to_state(), s.runs()) is merge(s) bit for bit.
  // A state is checked first, as the state of `runs` runs (it may come from a file): counts are
  // whole numbers with diverged <= runs and converged <= runs - diverged; the moments, the
  // figure's histogram and the kept weights or quantile bins each count the runs - diverged
  // used runs; extremes and weights are finite and in kWeight's domain, min <= every kept
  // weight <= max, min and max kept (or in the first and last quantile bins); moments that
  // weights in [min, max] can have; the figure's bins those of the kept weights (or of the
  // quantile bins); a state that keeps weights keeps at most the budget. Throws
  // std::invalid_argument saying what is wrong, before anything is merged. check_state checks
  // alone.
  nlohmann::json to_state() const;
  void merge_state(const nlohmann::json& state, std::int64_t runs);
  void check_state(const nlohmann::json& state, std::int64_t runs) const;
  bool exact() const { return !binned_; }

 private:
  SweepSummary from_state(const nlohmann::json& state, std::int64_t runs) const;
  void add_to_bins(double w);
  void spill();                             // exact -> binned
  static std::size_t figure_bin(double w);  // the figure's bin of a finite weight

  std::uint64_t budget_;
  double converged_below_;
  std::int64_t runs_ = 0, diverged_ = 0, converged_ = 0;
  Moments moments_;
  double min_ = 0, max_ = 0;
  std::vector<std::int64_t> figure_bins_ = std::vector<std::int64_t>(kFigureBins, 0);
  bool binned_ = false;
  std::vector<double> values_;      // exact mode: the used weights
  std::vector<std::int64_t> bins_;  // binned mode: kQuantileBins counts
};

}  // namespace attn
