// sweep_summary.cpp: see sweep_summary.hpp.
#include "experiments/sweep_summary.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "host/exact_state.hpp"
#include "quantiles.hpp"

namespace attn {

SweepSummary::SweepSummary(std::uint64_t exact_budget, double converged_below)
    : budget_(exact_budget), converged_below_(converged_below) {
  if (budget_ == 0) spill();
}

void SweepSummary::add_to_bins(double w) {
  const double b = std::floor(w * static_cast<double>(kQuantileBins));
  bins_[static_cast<std::size_t>(std::clamp(b, 0.0, static_cast<double>(kQuantileBins - 1)))]++;
}

std::size_t SweepSummary::figure_bin(double w) {
  return static_cast<std::size_t>(
      std::clamp(std::floor(w * kFigureBins), 0.0, double(kFigureBins - 1)));
}

void SweepSummary::spill() {
  binned_ = true;
  bins_.assign(static_cast<std::size_t>(kQuantileBins), 0);
  for (double w : values_) add_to_bins(w);
  std::vector<double>().swap(values_);
}

void SweepSummary::push(double weight, double loss) {
  ++runs_;
  if (!std::isfinite(weight) || !std::isfinite(loss)) {
    ++diverged_;
    return;
  }
  if (loss < converged_below_) ++converged_;
  min_ = moments_.n == 0 ? weight : std::min(min_, weight);
  max_ = moments_.n == 0 ? weight : std::max(max_, weight);
  moments_.push(weight);
  figure_bins_[figure_bin(weight)]++;
  if (binned_) {
    add_to_bins(weight);
  } else {
    values_.push_back(weight);
    if (values_.size() > budget_) spill();
  }
}

void SweepSummary::merge(const SweepSummary& o) {
  if (o.moments_.n > 0) {
    min_ = moments_.n == 0 ? o.min_ : std::min(min_, o.min_);
    max_ = moments_.n == 0 ? o.max_ : std::max(max_, o.max_);
  }
  runs_ += o.runs_;
  diverged_ += o.diverged_;
  converged_ += o.converged_;
  moments_ = attn::merge(moments_, o.moments_);
  for (int b = 0; b < kFigureBins; ++b) figure_bins_[b] += o.figure_bins_[b];
  if (!binned_ && !o.binned_ && values_.size() + o.values_.size() <= budget_) {
    values_.insert(values_.end(), o.values_.begin(), o.values_.end());
    return;
  }
  if (!binned_) spill();
  if (o.binned_)
    for (std::size_t b = 0; b < bins_.size(); ++b) bins_[b] += o.bins_[b];
  else
    for (double w : o.values_) add_to_bins(w);
}

void SweepSummary::reserve(std::uint64_t runs) {
  if (!binned_) values_.reserve(static_cast<std::size_t>(std::min(values_.size() + runs, budget_)));
}

SweepSummary::Row SweepSummary::finish(const std::vector<double>& probs, const Backend& backend) {
  Row r;
  r.runs = runs_;
  r.diverged = diverged_;
  r.used = runs_ - diverged_;
  r.converged = runs_ > 0 ? static_cast<double>(converged_) / static_cast<double>(runs_) : 0.0;
  r.exact = !binned_;
  r.histogram = figure_bins_;
  r.quantiles.assign(probs.size(), std::nullopt);
  if (r.used == 0) return r;
  r.mean = moments_.mean;
  r.std = moments_.stddev();
  r.min = min_;
  r.max = max_;
  std::vector<double> q;
  if (!binned_) {
    q = backend.quantiles(std::move(values_), probs);
    values_.clear();
  } else {
    // The k-th order statistic (0-based): the centre of the bin that holds it, within [min, max].
    const double width = 1.0 / static_cast<double>(kQuantileBins);
    auto sorted_at = [&](std::size_t k) {
      std::int64_t below = 0;
      std::size_t j = 0;
      while (below + bins_[j] <= static_cast<std::int64_t>(k)) below += bins_[j++];
      return std::clamp((static_cast<double>(j) + 0.5) * width, min_, max_);
    };
    q = quantiles_of_sorted(static_cast<std::size_t>(r.used), probs, sorted_at);
  }
  for (std::size_t i = 0; i < probs.size(); ++i) r.quantiles[i] = q[i];
  return r;
}

nlohmann::json SweepSummary::to_state() const {
  nlohmann::json bins = nlohmann::json::array();  // [index, count] of the non-empty bins
  for (std::size_t b = 0; b < bins_.size(); ++b)
    if (bins_[b] != 0) bins.push_back({b, bins_[b]});
  return {{"runs", runs_},
          {"diverged", diverged_},
          {"converged", converged_},
          {"moments", attn::exact(moments_)},
          {"min", attn::exact(min_)},
          {"max", attn::exact(max_)},
          {"figure_bins", figure_bins_},
          {"binned", binned_},
          {"values", exact_vector(values_)},
          {"bins", bins}};
}

SweepSummary SweepSummary::from_state(const nlohmann::json& j, std::int64_t runs) const {
  using std::to_string;
  const auto fail = [](const std::string& why) { throw std::invalid_argument(why); };
  if (!j.is_object()) fail("not a sweep state");
  for (const char* key :
       {"runs", "diverged", "converged", "moments", "min", "max", "figure_bins", "binned"})
    if (!j.contains(key)) fail(std::string("a sweep state without ") + key);
  SweepSummary o(budget_, converged_below_);
  o.runs_ = exact_count(j.at("runs"), "runs");
  o.diverged_ = exact_count(j.at("diverged"), "diverged");
  o.converged_ = exact_count(j.at("converged"), "converged");
  if (o.runs_ != runs) fail("runs " + to_string(o.runs_) + ", where there are " + to_string(runs));
  if (o.diverged_ > o.runs_)
    fail("diverged " + to_string(o.diverged_) + " > runs " + to_string(o.runs_));
  const std::int64_t used = o.runs_ - o.diverged_;
  if (o.converged_ > used)
    fail("converged " + to_string(o.converged_) + " > the " + to_string(used) +
         " runs that did not diverge");
  o.moments_ = exact_moments(j.at("moments"));
  if (o.moments_.n != static_cast<double>(used))
    fail("moments of " + to_string(static_cast<std::int64_t>(o.moments_.n)) + " weights, where " +
         to_string(used) + " runs did not diverge");
  o.min_ = exact_double(j.at("min"));
  o.max_ = exact_double(j.at("max"));
  if (used == 0 ? o.min_ != 0 || o.max_ != 0
                : !std::isfinite(o.min_) || !std::isfinite(o.max_) || !(o.min_ <= o.max_))
    fail("min " + attn::exact(o.min_).get<std::string>() + " and max " +
         attn::exact(o.max_).get<std::string>() + " are not the extremes of " + to_string(used) +
         " finite weights");
  try {
    if (used > 0) {
      kWeight.check(o.min_);
      kWeight.check(o.max_);
    }
    check_moments_within(o.moments_, o.min_, o.max_, true);
  } catch (const std::invalid_argument& e) {
    fail(e.what());
  }
  // Counts that must add up to `used`: each added only while the sum stays within it (so
  // never overflows).
  const auto add_up = [&](std::int64_t& sum, std::int64_t c, const char* what) {
    if (c > used - sum) fail(std::string(what) + " count more than the used runs");
    sum += c;
  };
  const nlohmann::json& fb = j.at("figure_bins");
  if (!fb.is_array() || fb.size() != static_cast<std::size_t>(kFigureBins))
    fail("a figure histogram that is not " + to_string(kFigureBins) + " counts");
  std::int64_t in_figure = 0;
  for (int b = 0; b < kFigureBins; ++b) {
    o.figure_bins_[b] = exact_count(fb.at(b), "a figure bin");
    add_up(in_figure, o.figure_bins_[b], "the figure's bins");
  }
  if (in_figure != used)
    fail("the figure's bins count " + to_string(in_figure) + " weights, where " + to_string(used) +
         " runs did not diverge");
  if (!j.at("binned").is_boolean()) fail("binned is not true or false");
  const std::string values = j.contains("values") && j.at("values").is_string()
                                 ? j.at("values").get<std::string>()
                                 : std::string("?");
  const nlohmann::json empty = nlohmann::json::array();
  const nlohmann::json& bins = j.contains("bins") ? j.at("bins") : empty;
  if (!bins.is_array()) fail("its quantile bins are not a list");
  if (j.at("binned").get<bool>()) {
    if (!values.empty()) fail("a binned state that keeps weights too");
    if (!o.binned_) o.spill();
    std::int64_t in_bins = 0;
    std::int64_t after = 0;  // bins are listed in increasing order, each once, none empty
    for (const auto& pair : bins) {
      if (!pair.is_array() || pair.size() != 2) fail("a quantile bin is not [index, count]");
      const std::int64_t b = exact_count(pair.at(0), "a quantile bin's index");
      const std::int64_t c = exact_count(pair.at(1), "a quantile bin's count");
      if (b < after || b >= kQuantileBins || c == 0)
        fail("quantile bin " + to_string(b) + " is out of order, out of range or empty");
      add_up(in_bins, c, "the quantile bins");
      o.bins_[static_cast<std::size_t>(b)] = c;
      after = b + 1;
    }
    if (in_bins != used)
      fail("the quantile bins count " + to_string(in_bins) + " weights, where " + to_string(used) +
           " runs did not diverge");
    // min and max in the first and last bins; each figure bin's count between the quantile bins
    // wholly inside it and those that reach into it (2^20 is no multiple of 20).
    const auto bin_of = [](double w) {
      return static_cast<std::int64_t>(
          std::clamp(std::floor(w * static_cast<double>(kQuantileBins)), 0.0,
                     static_cast<double>(kQuantileBins - 1)));
    };
    if (used > 0 && (bin_of(o.min_) != bins.front().at(0).get<std::int64_t>() ||
                     bin_of(o.max_) != bins.back().at(0).get<std::int64_t>()))
      fail("min and max that are not in its first and last quantile bins");
    std::vector<std::int64_t> inside(kFigureBins, 0), reach(kFigureBins, 0);
    for (std::int64_t b = 0; b < kQuantileBins; ++b) {
      const std::int64_t c = o.bins_[static_cast<std::size_t>(b)];
      if (c == 0) continue;
      const auto first = figure_bin(static_cast<double>(b) / kQuantileBins);
      const auto last = figure_bin(std::nextafter(static_cast<double>(b + 1) / kQuantileBins, 0.0));
      if (first == last) inside[first] += c;
      for (std::size_t f = first; f <= last; ++f) reach[f] += c;
    }
    for (int f = 0; f < kFigureBins; ++f)
      if (o.figure_bins_[f] < inside[f] || o.figure_bins_[f] > reach[f])
        fail("the figure's bin " + to_string(f) + " counts " + to_string(o.figure_bins_[f]) +
             " weights, which its quantile bins do not hold");
  } else {
    if (!bins.empty()) fail("an exact state with quantile bins");
    if (values.size() % 16 != 0 || values.size() / 16 != static_cast<std::uint64_t>(used))
      fail("keeps " +
           (values == "?" ? std::string("no") : to_string(values.size()) + " hex digits of") +
           " weights, where " + to_string(used) + " runs did not diverge (16 digits a weight)");
    if (static_cast<std::uint64_t>(used) > budget_)
      fail("keeps " + to_string(used) + " weights, more than the budget " + to_string(budget_));
    o.binned_ = false;
    o.bins_.clear();
    append_exact_vector(values, o.values_);
    for (const double w : o.values_)
      if (!(w >= o.min_ && w <= o.max_))
        fail("keeps a weight " + attn::exact(w).get<std::string>() + " outside [min, max]");
    if (used > 0 && (*std::min_element(o.values_.begin(), o.values_.end()) != o.min_ ||
                     *std::max_element(o.values_.begin(), o.values_.end()) != o.max_))
      fail("min and max that are not those of its kept weights");
    std::vector<std::int64_t> made(kFigureBins, 0);
    for (const double w : o.values_) made[figure_bin(w)]++;
    if (made != o.figure_bins_) fail("a figure histogram that is not that of its kept weights");
  }
  return o;
}

void SweepSummary::check_state(const nlohmann::json& state, std::int64_t runs) const {
  from_state(state, runs);
}

void SweepSummary::merge_state(const nlohmann::json& state, std::int64_t runs) {
  merge(from_state(state, runs));
}

}  // namespace attn
