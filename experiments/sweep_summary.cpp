// sweep_summary.cpp: see sweep_summary.hpp.
#include "experiments/sweep_summary.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "host/chunks.hpp"
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
  const double fb = std::floor(weight * kFigureBins);
  figure_bins_[static_cast<std::size_t>(std::clamp(fb, 0.0, double(kFigureBins - 1)))]++;
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

void SweepSummary::merge_state(const nlohmann::json& j) {
  SweepSummary o(budget_, converged_below_);
  o.runs_ = j.at("runs").get<std::int64_t>();
  o.diverged_ = j.at("diverged").get<std::int64_t>();
  o.converged_ = j.at("converged").get<std::int64_t>();
  o.moments_ = exact_moments(j.at("moments"));
  o.min_ = exact_double(j.at("min"));
  o.max_ = exact_double(j.at("max"));
  o.figure_bins_ = j.at("figure_bins").get<std::vector<std::int64_t>>();
  if (o.figure_bins_.size() != static_cast<std::size_t>(kFigureBins))
    throw std::invalid_argument("a sweep state with the wrong number of bins");
  if (j.at("binned").get<bool>()) {
    if (!o.binned_) o.spill();
    for (const auto& pair : j.at("bins"))
      o.bins_.at(pair.at(0).get<std::size_t>()) += pair.at(1).get<std::int64_t>();
  } else {
    o.binned_ = false;
    o.bins_.clear();
    append_exact_vector(j.at("values").get<std::string>(), o.values_);
  }
  merge(o);
}

}  // namespace attn
