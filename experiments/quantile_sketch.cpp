// quantile_sketch.cpp: see quantile_sketch.hpp.
#include "experiments/quantile_sketch.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "host/exact_state.hpp"
#include "quantiles.hpp"

namespace attn {
namespace {

constexpr std::uint64_t kSign = std::uint64_t{1} << 63;

// A double's bits turned into an unsigned integer of the same order: x < y iff ordered(x) <
// ordered(y) for finite x, y (and -0 just below +0).
std::uint64_t ordered(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return (b & kSign) ? ~b : (b | kSign);
}

double from_ordered(std::uint64_t o) {
  const std::uint64_t b = (o & kSign) ? (o & ~kSign) : ~o;
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

[[noreturn]] void fail(const std::string& what, const std::string& why) {
  throw std::invalid_argument(what + ": " + why);
}

}  // namespace

double QuantileSketch::error_bound(const Scale& s) {
  switch (s.kind) {
    case Scale::Kind::linear:
      return (s.hi - s.lo) / std::ldexp(2.0, s.bins_log2);
    case Scale::Kind::relative:
      return std::ldexp(1.0, -(s.bins_log2 + 1));
    case Scale::Kind::none:
      break;
  }
  return 0;
}

QuantileSketch::QuantileSketch(const Quantity& quantity, std::uint64_t budget)
    : scale_(quantity.scale), domain_(quantity.domain), budget_(budget) {
  if (scale_.kind == Scale::Kind::relative && (scale_.bins_log2 < 0 || scale_.bins_log2 > 40))
    throw std::logic_error("QuantileSketch: relative scale of 0..40 mantissa bits");
  if (scale_.kind == Scale::Kind::linear &&
      (scale_.bins_log2 < 0 || scale_.bins_log2 > 40 || !(scale_.lo < scale_.hi)))
    throw std::logic_error("QuantileSketch: linear scale needs lo < hi and 0..40 bin bits");
  if (budget_ == 0) spill();
}

std::uint64_t QuantileSketch::keys() const {
  if (scale_.kind == Scale::Kind::linear) return std::uint64_t{1} << scale_.bins_log2;
  return std::uint64_t{1} << (12 + scale_.bins_log2);
}

std::uint64_t QuantileSketch::key_of(double v) const {
  if (scale_.kind == Scale::Kind::linear) {
    const double b =
        std::floor((v - scale_.lo) / (scale_.hi - scale_.lo) * std::ldexp(1.0, scale_.bins_log2));
    return static_cast<std::uint64_t>(std::clamp(b, 0.0, static_cast<double>(keys() - 1)));
  }
  return ordered(v) >> (52 - scale_.bins_log2);
}

double QuantileSketch::centre_of(std::uint64_t key) const {
  if (scale_.kind == Scale::Kind::linear)
    return scale_.lo + (static_cast<double>(key) + 0.5) * (scale_.hi - scale_.lo) /
                           std::ldexp(1.0, scale_.bins_log2);
  const int shift = 52 - scale_.bins_log2;
  if (key == ordered(0.0) >> shift) return 0.0;
  const std::uint64_t first = key << shift;
  return from_ordered(first + (shift > 0 ? std::uint64_t{1} << (shift - 1) : 0));
}

void QuantileSketch::add_key(std::uint64_t key, std::int64_t times) {
  std::vector<std::int64_t>& page = pages_[key >> kPageLog2];
  if (page.empty()) page.assign(std::size_t{1} << kPageLog2, 0);
  page[key & ((std::uint64_t{1} << kPageLog2) - 1)] += times;
}

void QuantileSketch::add_to_bins(double v, std::int64_t times) { add_key(key_of(v), times); }

void QuantileSketch::spill() {
  mode_ = scale_.kind == Scale::Kind::none ? Mode::none : Mode::binned;
  if (mode_ == Mode::binned)
    for (double v : values_) add_to_bins(v);
  std::vector<double>().swap(values_);
}

void QuantileSketch::push(double v) {
  min_ = count_ == 0 ? v : std::min(min_, v);
  max_ = count_ == 0 ? v : std::max(max_, v);
  ++count_;
  moments_.push(v);
  if (mode_ == Mode::binned) {
    add_to_bins(v);
  } else if (mode_ == Mode::exact) {
    values_.push_back(v);
    if (values_.size() > budget_) spill();
  }
}

void QuantileSketch::merge(const QuantileSketch& o) {
  if (o.count_ > 0) {
    min_ = count_ == 0 ? o.min_ : std::min(min_, o.min_);
    max_ = count_ == 0 ? o.max_ : std::max(max_, o.max_);
  }
  count_ += o.count_;
  moments_ = attn::merge(moments_, o.moments_);
  if (mode_ == Mode::exact && o.mode_ == Mode::exact &&
      values_.size() + o.values_.size() <= budget_) {
    values_.insert(values_.end(), o.values_.begin(), o.values_.end());
    return;
  }
  if (mode_ == Mode::exact) spill();
  if (mode_ == Mode::none) return;
  if (o.mode_ == Mode::none) {  // o's values are gone: so are the quantiles
    mode_ = Mode::none;
    pages_.clear();
    return;
  }
  if (o.mode_ == Mode::binned) {
    for (const auto& [p, page] : o.pages_)
      for (std::size_t s = 0; s < page.size(); ++s)
        if (page[s] != 0) add_key((p << kPageLog2) | s, page[s]);
  } else {
    for (double v : o.values_) add_to_bins(v);
  }
}

std::optional<std::vector<double>> QuantileSketch::quantiles(const std::vector<double>& probs,
                                                             const Backend& backend) {
  if (count_ == 0 || mode_ == Mode::none) return std::nullopt;
  if (mode_ == Mode::exact) {
    std::vector<double> q = backend.quantiles(std::move(values_), probs);
    values_.clear();
    return q;
  }
  // The k-th order statistic (0-based): the centre of the bin that holds it, within [min, max].
  auto sorted_at = [&](std::size_t k) {
    std::int64_t below = 0;
    for (const auto& [p, page] : pages_)
      for (std::size_t s = 0; s < page.size(); ++s) {
        below += page[s];
        if (below > static_cast<std::int64_t>(k))
          return std::clamp(centre_of((p << kPageLog2) | s), min_, max_);
      }
    return max_;
  };
  return quantiles_of_sorted(static_cast<std::size_t>(count_), probs, sorted_at);
}

nlohmann::json QuantileSketch::to_state() const {
  nlohmann::json bins = nlohmann::json::array();
  for (const auto& [p, page] : pages_)
    for (std::size_t s = 0; s < page.size(); ++s)
      if (page[s] != 0) bins.push_back({(p << kPageLog2) | s, page[s]});
  const char* mode = mode_ == Mode::exact ? "exact" : mode_ == Mode::binned ? "binned" : "none";
  return {{"count", count_},    {"moments", exact(moments_)},
          {"min", exact(min_)}, {"max", exact(max_)},
          {"mode", mode},       {"values", exact_vector(values_)},
          {"bins", bins}};
}

QuantileSketch QuantileSketch::from_state(const nlohmann::json& j, std::int64_t max_count,
                                          const std::string& what) const {
  using std::to_string;
  if (!j.is_object()) fail(what, "not a sketch state");
  for (const char* key : {"count", "moments", "min", "max", "mode", "values", "bins"})
    if (!j.contains(key)) fail(what, std::string("a sketch state without ") + key);
  QuantileSketch o({scale_, domain_}, budget_);
  o.count_ = exact_count(j.at("count"), what + " count");
  if (o.count_ > max_count)
    fail(what, "a count of " + to_string(o.count_) + ", more than the " + to_string(max_count) +
                   " runs it can hold");
  try {
    o.moments_ = exact_moments(j.at("moments"));
  } catch (const std::invalid_argument& e) {
    fail(what, e.what());
  }
  if (o.moments_.n != static_cast<double>(o.count_))
    fail(what, "moments of " + to_string(static_cast<std::int64_t>(o.moments_.n)) +
                   " values, where the count is " + to_string(o.count_));
  o.min_ = exact_double(j.at("min"));
  o.max_ = exact_double(j.at("max"));
  if (o.count_ == 0 ? o.min_ != 0 || o.max_ != 0
                    : !std::isfinite(o.min_) || !std::isfinite(o.max_) || !(o.min_ <= o.max_))
    fail(what,
         "min and max that are not the extremes of " + to_string(o.count_) + " finite values");
  // The extremes in the domain, and moments that values between them can have (their mean
  // among them, up to the rounding of its updates).
  try {
    if (o.count_ > 0) {
      domain_.check(o.min_);
      domain_.check(o.max_);
    }
    check_moments_within(o.moments_, o.min_, o.max_, true);
  } catch (const std::invalid_argument& e) {
    fail(what, e.what());
  }
  const nlohmann::json& mode = j.at("mode");
  if (!mode.is_string()) fail(what, "a mode that is not text");
  const std::string m = mode.get<std::string>();
  if (!j.at("values").is_string()) fail(what, "kept values that are not one hex string");
  const std::string& values = j.at("values").get_ref<const std::string&>();
  const nlohmann::json& bins = j.at("bins");
  if (!bins.is_array()) fail(what, "bins that are not a list");
  o.values_.clear();
  o.pages_.clear();
  if (m == "exact") {
    o.mode_ = Mode::exact;
    if (!bins.empty()) fail(what, "an exact state with bins");
    if (values.size() % 16 != 0 || values.size() / 16 != static_cast<std::uint64_t>(o.count_))
      fail(what, "keeps " + to_string(values.size() / 16) + " values, where the count is " +
                     to_string(o.count_));
    append_exact_vector(values, o.values_);
    for (const double v : o.values_)
      if (!(v >= o.min_ && v <= o.max_)) fail(what, "keeps a value outside [min, max]");
    if (o.count_ > 0 && (*std::min_element(o.values_.begin(), o.values_.end()) != o.min_ ||
                         *std::max_element(o.values_.begin(), o.values_.end()) != o.max_))
      fail(what, "min and max that are not those of its kept values");
  } else if (m == "binned" || m == "none") {
    o.mode_ = m == "binned" ? Mode::binned : Mode::none;
    if (m == "binned" && scale_.kind == Scale::Kind::none) fail(what, "binned without a scale");
    if (!values.empty()) fail(what, "a binned state that keeps values too");
    if (o.mode_ == Mode::none && !bins.empty()) fail(what, "bins where quantiles were given up");
    std::int64_t in_bins = 0;
    std::uint64_t after = 0;  // keys in increasing order, each once, none empty
    for (const auto& pair : bins) {
      if (!pair.is_array() || pair.size() != 2) fail(what, "a bin that is not [key, count]");
      const auto key = static_cast<std::uint64_t>(exact_count(pair.at(0), what + " bin key"));
      const std::int64_t c = exact_count(pair.at(1), what + " bin count");
      if (key < after || key >= o.keys() || c == 0)
        fail(what, "a bin out of order, out of range or empty");
      if (c > o.count_ - in_bins) fail(what, "bins that count more than the values");
      in_bins += c;
      o.add_key(key, c);
      after = key + 1;
    }
    if (o.mode_ == Mode::binned && in_bins != o.count_)
      fail(what, "bins that count " + to_string(in_bins) + " values, where the count is " +
                     to_string(o.count_));
    if (o.mode_ == Mode::binned && in_bins > 0 &&
        (o.key_of(o.min_) != bins.front().at(0).get<std::uint64_t>() ||
         o.key_of(o.max_) != bins.back().at(0).get<std::uint64_t>()))
      fail(what, "min and max that are not in its first and last bins");
  } else {
    fail(what, "a mode that is not exact, binned or none");
  }
  return o;
}

}  // namespace attn
