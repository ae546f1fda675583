// map_measures.cpp: see map_measures.hpp.
#include "experiments/map_measures.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "experiments/per_seed_maps.hpp"
#include "host/exact_state.hpp"
#include "host/format.hpp"

namespace attn {

// p / m as 2p / (p + q): the same rounding where m = (p + q) / 2 is exact, and no division by
// a half that underflowed to 0 where p + q is the smallest subnormal (a weight of a softmax whose
// scores ran far apart).
double jsd(const double* p, const double* q, int len) {
  double sum = 0;
  for (int j = 0; j < len; ++j) {
    const double s = p[j] + q[j];
    if (p[j] > 0) sum += 0.5 * p[j] * std::log(2 * p[j] / s);
    if (q[j] > 0) sum += 0.5 * q[j] * std::log(2 * q[j] / s);
  }
  return sum;
}

double map_jsd(const double* a, const double* b, int rows, int n) {
  double sum = 0;
  for (int r = 0; r < rows; ++r) sum += jsd(a + r * n, b + r * n, n);
  return sum / rows;
}

double rms_distance(const double* a, const double* b, int count, int rows) {
  double sq = 0;
  for (int e = 0; e < count; ++e) {
    const double d = a[e] - b[e];
    sq += d * d;
  }
  if (std::isfinite(sq)) return std::sqrt(sq / rows);
  double largest = 0;  // of (a - b) / 2, which cannot overflow
  for (int e = 0; e < count; ++e) {
    if (!std::isfinite(a[e]) || !std::isfinite(b[e])) return std::sqrt(sq / rows);
    largest = std::fmax(largest, std::fabs(0.5 * a[e] - 0.5 * b[e]));
  }
  const int k = std::ilogb(largest) + 2;  // |a - b| / 2^k < 1
  double scaled = 0;
  for (int e = 0; e < count; ++e) {
    const double d = std::ldexp(a[e], -k) - std::ldexp(b[e], -k);
    scaled += d * d;
  }
  return std::ldexp(std::sqrt(scaled / rows), k);
}

std::pair<double, double> wilson_interval(std::int64_t k, std::int64_t n) {
  if (n <= 0) return {NAN, NAN};
  const double z = 1.959963984540054;  // the standard normal's 97.5% quantile
  const double nn = static_cast<double>(n), p = static_cast<double>(k) / nn, z2 = z * z;
  const double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
  const double half = z / (1 + z2 / nn) * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  // At k = 0 (k = n) the bound is 0 (1) exactly; the formula leaves a rounding's worth.
  return {k == 0 ? 0.0 : std::max(0.0, centre - half), k == n ? 1.0 : std::min(1.0, centre + half)};
}

std::int64_t median_interval_rank(std::int64_t n) {
  if (n <= 0) return 0;
  const double nn = static_cast<double>(n);
  // The terms below k0 sum to less than 1e-300 (Hoeffding: P(B <= n/2 - t) <= exp(-2 t^2 / n)).
  const std::int64_t k0 =
      std::max<std::int64_t>(0, static_cast<std::int64_t>(nn / 2 - std::sqrt(nn * 350)));
  const auto log_term = [&](std::int64_t k) {
    const double kk = static_cast<double>(k);
    return std::lgamma(nn + 1) - std::lgamma(kk + 1) - std::lgamma(nn - kk + 1) -
           nn * std::log(2.0);
  };
  double cdf = 0;  // P(B <= k)
  std::int64_t rank = 0;
  for (std::int64_t k = k0; k <= n / 2; ++k) {
    cdf += std::exp(log_term(k));
    if (cdf > 0.025) break;
    rank = k + 1;  // P(B <= rank - 1) <= 0.025
  }
  return rank;
}

bool SeedResults::finite(const double* r) const {
  bool ok = std::isfinite(r[0]) && std::isfinite(r[2]);
  const double* p = maps(r);
  for (int e = 0; e < heads * map_size(); ++e) ok = ok && std::isfinite(p[e]);
  return ok;
}

bool SeedResults::diverged(const double* r) const { return !finite(r) || blew_up(r); }

void check_map_rows(const double* maps, std::int64_t count, int rows, int n) {
  for (std::int64_t row = 0; row < count * rows; ++row) {
    const double* p = maps + row * n;
    double sum = 0;
    for (int k = 0; k < n; ++k) sum += kSeedWeight.check(p[k]);
    if (std::isfinite(sum) && !(std::fabs(sum - 1) <= n * kRowSum))
      throw std::invalid_argument("a row of the map whose weights sum to " + human_number(sum) +
                                  ", not 1");
  }
}

void check_training_result(const double* t, std::int64_t weights) {
  kSeedLoss.check(t[0]);
  kSeedLoss.check(t[1]);
  if (!std::isfinite(t[0])) return;
  for (std::int64_t e = 0; e < weights; ++e) kFinalWeight.check(t[2 + e]);
}

const double* SeedResults::mean_over_heads(const double* p, std::vector<double>& buffer) const {
  if (heads == 1) return p;
  const int one = input_map();
  buffer.assign(static_cast<std::size_t>(map_size()), 0.0);
  for (int b = 0; b < inputs; ++b)
    for (int h = 0; h < heads; ++h) {
      const double* from = p + (static_cast<std::int64_t>(b) * heads + h) * one;
      double* to = buffer.data() + static_cast<std::int64_t>(b) * one;
      for (int e = 0; e < one; ++e) to[e] += from[e];
    }
  for (double& v : buffer) v /= heads;
  return buffer.data();
}

const double* SeedResults::head_maps(const double* p, int h, std::vector<double>& buffer) const {
  const int one = input_map();
  if (inputs == 1) return p + static_cast<std::int64_t>(h) * one;
  buffer.resize(static_cast<std::size_t>(map_size()));
  for (int b = 0; b < inputs; ++b)
    std::copy_n(p + (static_cast<std::int64_t>(b) * heads + h) * one, one,
                buffer.data() + static_cast<std::int64_t>(b) * one);
  return buffer.data();
}

const char* cover_name(Cover c) { return c == Cover::converged ? "converged" : "finite"; }

double min_assignment(const std::vector<double>& cost, int h, std::vector<int>* columns) {
  // Potentials u (rows), v (columns); p[j]: the row matched to column j (1-based, 0: none).
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> u(h + 1, 0.0), v(h + 1, 0.0);
  std::vector<int> p(h + 1, 0), way(h + 1, 0);
  for (int i = 1; i <= h; ++i) {
    p[0] = i;
    int j0 = 0;
    std::vector<double> least(h + 1, inf);
    std::vector<char> used(h + 1, 0);
    do {
      used[j0] = 1;
      const int i0 = p[j0];
      double delta = inf;
      int j1 = 0;
      for (int j = 1; j <= h; ++j) {
        if (used[j]) continue;
        const double reduced = cost[(i0 - 1) * h + (j - 1)] - u[i0] - v[j];
        if (reduced < least[j]) {
          least[j] = reduced;
          way[j] = j0;
        }
        if (least[j] < delta) {
          delta = least[j];
          j1 = j;
        }
      }
      for (int j = 0; j <= h; ++j) {
        if (used[j]) {
          u[p[j]] += delta;
          v[j] -= delta;
        } else {
          least[j] -= delta;
        }
      }
      j0 = j1;
    } while (p[j0] != 0);
    do {
      const int j1 = way[j0];
      p[j0] = p[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> column(h);
  for (int j = 1; j <= h; ++j) column[p[j] - 1] = j - 1;
  double total = 0;  // the costs themselves, row by row (not the potentials' rounding)
  for (int i = 0; i < h; ++i) total += cost[i * h + column[i]];
  if (columns) *columns = column;
  return total;
}

double matched_head_jsd(const SeedResults& shape, const double* a, const double* b) {
  const int h = shape.heads;
  std::vector<double> cost(static_cast<std::size_t>(h) * h), ba, bb;
  for (int i = 0; i < h; ++i) {
    const double* ai = shape.head_maps(a, i, ba);
    for (int j = 0; j < h; ++j)
      cost[i * h + j] = map_jsd(ai, shape.head_maps(b, j, bb), shape.map_rows(), shape.n);
  }
  return min_assignment(cost, h) / h;
}

double known_map_jsd(const SeedResults& shape, const KnownMap& known, const double* p) {
  const int n = shape.n;
  if (!known.maps.empty()) return map_jsd(p, known.maps.data(), shape.map_rows(), n);
  std::vector<double> one_hot(static_cast<std::size_t>(n));
  double sum = 0;
  for (int row = 0; row < shape.map_rows(); ++row) {
    std::fill(one_hot.begin(), one_hot.end(), 0.0);
    one_hot[known.keys[row % shape.rows]] = 1.0;
    sum += jsd(p + static_cast<std::int64_t>(row) * n, one_hot.data(), n);
  }
  return sum / shape.map_rows();
}

bool found_known_map(const SeedResults& shape, const KnownMap& known, const double* p,
                     double jsd_to_known) {
  if (!known.maps.empty()) return jsd_to_known < known.found_below;
  const int n = shape.n;
  for (int row = 0; row < shape.map_rows(); ++row) {
    const double* pr = p + static_cast<std::int64_t>(row) * n;
    if (std::max_element(pr, pr + n) - pr != known.keys[row % shape.rows]) return false;
  }
  return true;
}

namespace {

[[noreturn]] void fail(const std::string& why) { throw std::invalid_argument(why); }

std::string count_text(std::int64_t v) { return std::to_string(v); }

}  // namespace

MapSummary::MapSummary(SeedResults s, std::uint64_t budget, double threshold, Cover c,
                       KnownMap known_map)
    : shape(s),
      converged_below(threshold),
      cover(c),
      known(std::move(known_map)),
      loss(c == Cover::converged ? kLossQuantity.below(threshold) : kLossQuantity, budget),
      test_loss(kLossQuantity, budget),
      argmax(static_cast<std::size_t>(s.map_size()), 0),
      pair_jsd(kJsdQuantity, budget),
      pair_out(kDistanceQuantity, budget),
      pair_heads(s.heads > 1 ? kJsdQuantity : kJsdQuantity.without_quantiles(),
                 s.heads > 1 ? budget : 0),
      pair_start(kJsdQuantity, budget),
      known_jsd(known.empty() ? kJsdQuantity.without_quantiles() : kJsdQuantity,
                known.empty() ? 0 : budget),
      nudge_jsd(kJsdQuantity, budget) {
  const bool sketches = entry_quantiles();
  entries.assign(static_cast<std::size_t>(s.map_size()),
                 QuantileSketch(kEntryQuantity.without_quantiles(), 0));
  for (int e = 0; sketches && e < s.input_map(); ++e)
    entries[e] = QuantileSketch(kEntryQuantity, budget);
  for (int f = 0; f < kInterventionFields; ++f) {
    const bool none = known.empty() && (f == kKnownLoss || f == kKnownOut);
    interventions.emplace_back(
        none ? intervention_quantity(f).without_quantiles() : intervention_quantity(f),
        none ? 0 : budget);
  }
}

const QuantileSketch::Quantity& intervention_quantity(int field) {
  if (field == kAdversarialJsd) return kJsdQuantity;
  if (field == kNotUnique) return kFractionQuantity;
  if (field == kTauB) return kTauQuantity;
  return field % 2 == 0 ? kLossChangeQuantity : kDistanceQuantity;
}

bool MapSummary::covers(const double* r) const {
  if (!shape.finite(r)) return false;
  return cover == Cover::finite || shape.converged(r, converged_below);
}

void MapSummary::add(const double* results, std::int64_t count, const SeedExtras& extras) {
  const int size = shape.size(), map = shape.map_size(), n = shape.n;
  const std::int64_t start_size = static_cast<std::int64_t>(shape.heads) * map;
  std::vector<double> buffer, other;
  std::vector<char> in(static_cast<std::size_t>(count));  // covered, seed by seed
  for (std::int64_t i = 0; i < count; ++i) {
    const double* r = results + i * size;
    ++seeds;
    const bool finite = shape.finite(r), gone = !finite || shape.blew_up(r);
    const bool done = finite && !gone && r[0] < converged_below;
    not_finite += finite ? 0 : 1;
    diverged += gone ? 1 : 0;
    converged += done ? 1 : 0;
    generalized += shape.generalized(r, converged_below) ? 1 : 0;
    in[i] = cover == Cover::finite ? finite : done;
    if (!in[i]) continue;
    ++covered;
    loss.push(r[0]);
    test_loss.push(r[2]);
    const double* p = shape.mean_over_heads(shape.maps(r), buffer);
    for (int e = 0; e < map; ++e) entries[e].push(p[e]);
    for (int row = 0; row < shape.map_rows(); ++row) {
      const double* pr = p + static_cast<std::int64_t>(row) * n;
      argmax[row * n + static_cast<int>(std::max_element(pr, pr + n) - pr)]++;
    }
    if (known_map()) {
      const double to_known = known_map_jsd(shape, known, p);
      known_jsd.push(to_known);
      found += found_known_map(shape, known, p, to_known) ? 1 : 0;
    }
    if (extras.nudge_jsd != nullptr) {
      const double v = extras.nudge_jsd[i];
      ++nudged;
      if (std::isfinite(v)) nudge_jsd.push(v);
      sensitive += !std::isfinite(v) || v > kRoundingSensitiveJsd ? 1 : 0;
    }
  }
  // The interventions' measures of the covered seeds: patched where the partner is covered.
  for (std::int64_t i = 0; extras.interventions != nullptr && i < count; ++i) {
    if (!in[i]) continue;
    const bool partner = (i ^ 1) < count && in[i ^ 1];
    for (int f = 0; f < kInterventionFields; ++f) {
      const double v = extras.interventions[i * kInterventionFields + f];
      if ((f == kPatchedLoss || f == kPatchedOut) && !partner) continue;
      if (std::isfinite(v)) interventions[f].push(v);
    }
  }
  for (std::int64_t i = 0; i + 1 < count; i += 2) {
    const double* a = results + i * size;
    const double* b = a + size;
    if (!in[i] || !in[i + 1]) continue;
    const double* pa = shape.mean_over_heads(shape.maps(a), buffer);
    const double* pb = shape.mean_over_heads(shape.maps(b), other);
    pair_jsd.push(map_jsd(pa, pb, shape.map_rows(), n));
    pair_out.push(rms_distance(shape.outputs(a), shape.outputs(b), shape.map_rows() * shape.d_out,
                               shape.map_rows()));
    if (shape.heads > 1) pair_heads.push(matched_head_jsd(shape, shape.maps(a), shape.maps(b)));
    if (extras.start_maps != nullptr) {
      const double* sa = shape.mean_over_heads(extras.start_maps + i * start_size, buffer);
      const double* sb = shape.mean_over_heads(extras.start_maps + (i + 1) * start_size, other);
      pair_start.push(map_jsd(sa, sb, shape.map_rows(), n));
    }
  }
}

void MapSummary::merge(const MapSummary& o) {
  seeds += o.seeds;
  not_finite += o.not_finite;
  diverged += o.diverged;
  converged += o.converged;
  generalized += o.generalized;
  covered += o.covered;
  found += o.found;
  nudged += o.nudged;
  sensitive += o.sensitive;
  loss.merge(o.loss);
  test_loss.merge(o.test_loss);
  for (std::size_t e = 0; e < entries.size(); ++e) entries[e].merge(o.entries[e]);
  for (std::size_t e = 0; e < argmax.size(); ++e) argmax[e] += o.argmax[e];
  pair_jsd.merge(o.pair_jsd);
  pair_out.merge(o.pair_out);
  pair_heads.merge(o.pair_heads);
  pair_start.merge(o.pair_start);
  known_jsd.merge(o.known_jsd);
  nudge_jsd.merge(o.nudge_jsd);
  for (int f = 0; f < kInterventionFields; ++f) interventions[f].merge(o.interventions[f]);
}

std::vector<double> MapSummary::mean_map() const {
  std::vector<double> m(entries.size());
  for (std::size_t e = 0; e < entries.size(); ++e) m[e] = entries[e].moments().mean;
  return m;
}

namespace {

// Entries that keep moments and extremes only, [first, last) of them, as one hex vector per
// field (the moments' count being the covered seeds'), and back.
nlohmann::json moment_fields(const std::vector<QuantileSketch>& entries, std::size_t first,
                             std::size_t last) {
  std::vector<double> f[6];
  for (std::size_t e = first; e < last; ++e) {
    const QuantileSketch& q = entries[e];
    const Moments& m = q.moments();
    f[0].push_back(m.mean);
    f[1].push_back(m.m2);
    f[2].push_back(m.m3);
    f[3].push_back(m.m4);
    f[4].push_back(q.min());
    f[5].push_back(q.max());
  }
  return {{"mean", exact_vector(f[0])}, {"m2", exact_vector(f[1])},  {"m3", exact_vector(f[2])},
          {"m4", exact_vector(f[3])},   {"min", exact_vector(f[4])}, {"max", exact_vector(f[5])}};
}

void read_moment_fields(const nlohmann::json& es, std::int64_t used,
                        std::vector<QuantileSketch>& entries, std::size_t first, std::size_t last) {
  if (!es.is_object()) fail("entries that are not an object of fields");
  const std::size_t count = last - first;
  std::vector<double> f[6];
  const char* names[6] = {"mean", "m2", "m3", "m4", "min", "max"};
  for (int k = 0; k < 6; ++k) {
    if (!es.contains(names[k]) || !es.at(names[k]).is_string())
      fail(std::string("entries without ") + names[k]);
    append_exact_vector(es.at(names[k]).get<std::string>(), f[k]);
    if (f[k].size() != count) fail(std::string("entries' ") + names[k] + " of the wrong length");
  }
  for (std::size_t e = 0; e < count; ++e) {
    const double d = static_cast<double>(used);
    nlohmann::json s = {{"count", used},
                        {"moments", nlohmann::json::array({exact(d), exact(f[0][e]), exact(f[1][e]),
                                                           exact(f[2][e]), exact(f[3][e])})},
                        {"min", exact(f[4][e])},
                        {"max", exact(f[5][e])},
                        {"mode", "none"},
                        {"values", ""},
                        {"bins", nlohmann::json::array()}};
    entries[first + e] =
        entries[first + e].from_state(s, used, "map entry " + std::to_string(first + e));
  }
}

}  // namespace

// Entries: the first measured input's a sketch state each when they keep quantiles, the rest
// (later inputs, or all when there are too many to sketch) as moment fields.
nlohmann::json MapSummary::to_state() const {
  nlohmann::json entry_states;
  const std::size_t first = entry_quantiles() ? static_cast<std::size_t>(shape.input_map()) : 0;
  if (entry_quantiles()) {
    entry_states = nlohmann::json::array();
    for (std::size_t e = 0; e < first; ++e) entry_states.push_back(entries[e].to_state());
  } else {
    entry_states = moment_fields(entries, 0, entries.size());
  }
  nlohmann::json j = {{"seeds", seeds},
                      {"not_finite", not_finite},
                      {"diverged", diverged},
                      {"converged", converged},
                      {"generalized", generalized},
                      {"covered", covered},
                      {"found", found},
                      {"nudged", nudged},
                      {"sensitive", sensitive},
                      {"loss", loss.to_state()},
                      {"test_loss", test_loss.to_state()},
                      {"entries", entry_states},
                      {"argmax", argmax},
                      {"pair_jsd", pair_jsd.to_state()},
                      {"pair_out", pair_out.to_state()},
                      {"pair_heads", pair_heads.to_state()},
                      {"pair_start", pair_start.to_state()},
                      {"known_jsd", known_jsd.to_state()},
                      {"nudge_jsd", nudge_jsd.to_state()}};
  if (entry_quantiles() && first < entries.size())
    j["later_entries"] = moment_fields(entries, first, entries.size());
  nlohmann::json iv = nlohmann::json::object();
  for (int f = 0; f < kInterventionFields; ++f)
    iv[kInterventionColumns[f]] = interventions[f].to_state();
  j["interventions"] = iv;
  return j;
}

MapSummary MapSummary::from_state(const nlohmann::json& j, std::int64_t expected) const {
  if (!j.is_object()) fail("not a map summary");
  for (const char* key : {"seeds",      "not_finite", "diverged",  "converged", "generalized",
                          "covered",    "found",      "nudged",    "sensitive", "loss",
                          "test_loss",  "entries",    "argmax",    "pair_jsd",  "pair_out",
                          "pair_heads", "pair_start", "known_jsd", "nudge_jsd", "interventions"})
    if (!j.contains(key)) fail(std::string("a map summary without ") + key);
  MapSummary o = *this;
  o.seeds = exact_count(j.at("seeds"), "seeds");
  if (o.seeds != expected)
    fail("a summary of " + count_text(o.seeds) + " seeds, where there are " + count_text(expected));
  o.not_finite = exact_count(j.at("not_finite"), "not_finite");
  o.diverged = exact_count(j.at("diverged"), "diverged");
  o.converged = exact_count(j.at("converged"), "converged");
  o.generalized = exact_count(j.at("generalized"), "generalized");
  o.covered = exact_count(j.at("covered"), "covered");
  o.found = exact_count(j.at("found"), "found");
  o.nudged = exact_count(j.at("nudged"), "nudged");
  o.sensitive = exact_count(j.at("sensitive"), "sensitive");
  if (o.not_finite > o.diverged || o.diverged > o.seeds)
    fail("diverged seeds that are fewer than the non-finite ones or more than the seeds");
  if (o.converged > o.seeds - o.diverged) fail("more seeds converged than did not diverge");
  if (o.generalized > o.seeds - o.diverged) fail("more seeds generalized than did not diverge");
  const std::int64_t used = o.covered;
  if (used != (cover == Cover::converged ? o.converged : o.seeds - o.not_finite))
    fail("a count of covered seeds that is not the " + std::string(cover_name(cover)) + " seeds'");
  if (o.found > used || (!known_map() && o.found != 0)) fail("more seeds found the map than seeds");
  if ((o.nudged != 0 && o.nudged != used) || o.sensitive > o.nudged)
    fail("nudged or rounding-sensitive counts that are not of the covered seeds");
  o.loss = loss.from_state(j.at("loss"), o.seeds, "loss");
  if (o.loss.count() != used) fail("a loss count that is not the covered seeds'");
  o.test_loss = test_loss.from_state(j.at("test_loss"), o.seeds, "test loss");
  if (o.test_loss.count() != used) fail("a test loss count that is not the covered seeds'");
  const std::size_t first = entry_quantiles() ? static_cast<std::size_t>(shape.input_map()) : 0;
  const nlohmann::json& es = j.at("entries");
  if (entry_quantiles()) {
    if (!es.is_array() || es.size() != first)
      fail("not " + std::to_string(first) + " entry states, one per map entry");
    for (std::size_t e = 0; e < first; ++e) {
      o.entries[e] = entries[e].from_state(es.at(e), used, "map entry " + std::to_string(e));
      if (o.entries[e].count() != used) fail("a map entry that does not count the covered seeds");
    }
    if (first < entries.size()) {
      if (!j.contains("later_entries")) fail("a map summary without later_entries");
      read_moment_fields(j.at("later_entries"), used, o.entries, first, entries.size());
    } else if (j.contains("later_entries")) {
      fail("later_entries where there is one measured input");
    }
  } else {
    read_moment_fields(es, used, o.entries, 0, entries.size());
  }
  // The mean maps: each row of every measured input a distribution (the mean of the seeds'
  // rows, each summing to 1).
  for (int row = 0; row < shape.map_rows() && used > 0; ++row) {
    double sum = 0;
    for (int k = 0; k < shape.n; ++k) sum += o.entries[row * shape.n + k].moments().mean;
    if (!(std::fabs(sum - 1) <= 1e-6))
      fail("a mean map whose row " + std::to_string(row) + " sums to " + human_number(sum) +
           ", not 1");
  }
  const nlohmann::json& am = j.at("argmax");
  if (!am.is_array() || am.size() != argmax.size())
    fail("argmax counts that are not one per map entry");
  for (int row = 0; row < shape.map_rows(); ++row) {
    std::int64_t sum = 0;
    for (int k = 0; k < shape.n; ++k) {
      const std::int64_t c = exact_count(am.at(row * shape.n + k), "an argmax count");
      if (c > used - sum) fail("argmax counts of a row that add up to more than the covered seeds");
      sum += c;
      o.argmax[row * shape.n + k] = c;
    }
    if (sum != used) fail("argmax counts of a row that do not add up to the covered seeds");
  }
  // A seed's argmax in a row has weight 1/n at least; a seed that found the known map has its
  // argmax at the known key of every row.
  for (std::size_t e = 0; e < argmax.size(); ++e)
    if (o.argmax[e] > 0 && o.entries[e].max() < 1.0 / shape.n - 1e-12)
      fail("an argmax at map entry " + std::to_string(e) + ", whose weights stay below 1/n");
  for (int row = 0; !known.keys.empty() && row < shape.map_rows(); ++row)
    if (o.found > o.argmax[row * shape.n + known.keys[row % shape.rows]])
      fail("more seeds found the known map than have its key as argmax in row " +
           std::to_string(row % shape.rows) + " of measured input " +
           std::to_string(row / shape.rows));
  o.pair_jsd = pair_jsd.from_state(j.at("pair_jsd"), o.seeds / 2, "pair JSD");
  o.pair_out = pair_out.from_state(j.at("pair_out"), o.seeds / 2, "pair output distance");
  o.pair_heads = pair_heads.from_state(j.at("pair_heads"), o.seeds / 2, "pair head-matched JSD");
  o.pair_start = pair_start.from_state(j.at("pair_start"), o.seeds / 2, "pair JSD at the start");
  o.known_jsd = known_jsd.from_state(j.at("known_jsd"), used, "JSD to the known map");
  o.nudge_jsd = nudge_jsd.from_state(j.at("nudge_jsd"), used, "JSD after a nudge");
  if (o.pair_jsd.count() != o.pair_out.count())
    fail("pair JSD and output distance of different counts");
  if (o.pair_jsd.count() > used / 2) fail("more pairs than two covered seeds each");
  if (o.pair_heads.count() != (shape.heads > 1 ? o.pair_jsd.count() : 0))
    fail("a head-matched pair count that is not the pairs'");
  if (o.pair_start.count() != 0 && o.pair_start.count() != o.pair_jsd.count())
    fail("a count of pair JSDs at the start that is not the pairs'");
  if (o.known_jsd.count() != (known_map() ? used : 0))
    fail("a count of JSDs to the known map that is not the covered seeds'");
  if (o.nudge_jsd.count() > o.nudged) fail("more JSDs after a nudge than nudged seeds");
  // The interventions' measures: each in its quantity's domain, at most one per covered seed,
  // a change of the loss and an output distance for each covered seed measured (both finite or
  // neither, the distance's overflow aside), patched ones of covered pairs only, known ones
  // only with a known map.
  const nlohmann::json& iv = j.at("interventions");
  if (!iv.is_object()) fail("interventions that are not an object of states");
  for (int f = 0; f < kInterventionFields; ++f) {
    const char* name = kInterventionColumns[f];
    if (!iv.contains(name)) fail(std::string("interventions without ") + name);
    o.interventions[f] = interventions[f].from_state(iv.at(name), used, name);
    if (o.interventions[f].count() > used)
      fail(std::string("more values of ") + name + " than covered seeds");
  }
  if (o.interventions[kPatchedLoss].count() > 2 * o.pair_jsd.count())
    fail("more patched seeds than the covered pairs hold");
  if (!known_map() && o.interventions[kKnownLoss].count() != 0)
    fail("a known map's intervention without one");
  if (o.interventions[kAdversarialJsd].count() != o.interventions[kNotUnique].count())
    fail("adversarial JSDs and not-unique fractions of different counts");
  // A seed whose mean adversarial JSD is above kNotUniqueJsd has a row above it.
  if (o.interventions[kNotUnique].count() > 0 &&
      o.interventions[kAdversarialJsd].max() > kNotUniqueJsd &&
      !(o.interventions[kNotUnique].max() > 0))
    fail("adversarial JSDs above the not-unique threshold, but no row not unique");
  // The teacher's seeds found its maps when their JSD to them is below found_below.
  if (!known.maps.empty() && o.found > 0 && !(o.known_jsd.min() < known.found_below))
    fail("seeds that found the known map, but no JSD to it below " +
         human_number(known.found_below));
  if (!known.maps.empty() && o.found < used && !(o.known_jsd.max() >= known.found_below))
    fail("seeds that did not find the known map, but no JSD to it at " +
         human_number(known.found_below) + " or above");
  // Rounding-sensitive: every nudged seed without a finite JSD (its second run not finite), and
  // those whose JSD is above kRoundingSensitiveJsd.
  const std::int64_t without = o.nudged - o.nudge_jsd.count();
  if (o.sensitive < without)
    fail("fewer rounding-sensitive seeds than nudged seeds without a finite JSD after a nudge");
  if (o.nudge_jsd.count() > 0 &&
      (o.sensitive > without) != (o.nudge_jsd.max() > kRoundingSensitiveJsd))
    fail("a count of rounding-sensitive seeds that the JSDs after a nudge do not give");
  // Converged and generalized seeds are finite seeds whose loss (test loss) is below the
  // threshold: over the finite seeds, as many losses (test losses) below it at least.
  const auto below = [&](const QuantileSketch& q) -> std::int64_t {
    if (q.count() == 0 || !(q.min() < converged_below)) return 0;
    if (q.mode() != QuantileSketch::Mode::exact) return q.count();  // not known: any
    const std::vector<double>& v = q.kept_values();
    return std::count_if(v.begin(), v.end(), [&](double x) { return x < converged_below; });
  };
  if (cover == Cover::finite && o.converged > below(o.loss))
    fail("more seeds converged than finite seeds have a loss below " +
         human_number(converged_below));
  if (cover == Cover::finite && o.generalized > below(o.test_loss))
    fail("more seeds generalized than finite seeds have a test loss below " +
         human_number(converged_below));
  return o;
}

SeedMeasures SeedMeasures::of(const MapSummary& converged,
                              const std::vector<double>& converged_mean,
                              const std::vector<double>& finite_mean, const double* results,
                              std::int64_t count) {
  SeedMeasures m;
  const SeedResults& shape = converged.shape;
  const int size = shape.size();
  std::vector<double> buffer;
  for (std::int64_t i = 0; i < count; ++i) {
    const double* r = results + i * size;
    m.loss.push_back(r[0]);
    const bool finite = shape.finite(r);
    const double* p = finite ? shape.mean_over_heads(shape.maps(r), buffer) : nullptr;
    m.jsd.push_back(finite ? map_jsd(p, finite_mean.data(), shape.map_rows(), shape.n) : NAN);
    m.jsd_converged.push_back(converged.covers(r) && !converged_mean.empty()
                                  ? map_jsd(p, converged_mean.data(), shape.map_rows(), shape.n)
                                  : NAN);
  }
  return m;
}

nlohmann::json SeedMeasures::to_state() const {
  nlohmann::json j = {{"loss", exact_vector(loss)},
                      {"jsd", exact_vector(jsd)},
                      {"jsd_converged", exact_vector(jsd_converged)}};
  if (!records.empty()) j["records"] = exact_vector(records);
  return j;
}

SeedMeasures SeedMeasures::from_state(const nlohmann::json& j, std::int64_t count,
                                      const PerSeedRecord* record, double converged_below) {
  if (!j.is_object()) fail("not a seed measure state");
  SeedMeasures m;
  const auto read = [&](const char* key, std::vector<double>& out, std::int64_t length) {
    if (!j.contains(key) || !j.at(key).is_string()) fail(std::string("no ") + key);
    append_exact_vector(j.at(key).get<std::string>(), out);
    if (static_cast<std::int64_t>(out.size()) != length)
      fail(std::string(key) + " of " + std::to_string(out.size()) + " values, where " +
           std::to_string(length) + " belong");
  };
  read("loss", m.loss, count);
  read("jsd", m.jsd, count);
  read("jsd_converged", m.jsd_converged, count);
  for (std::int64_t i = 0; i < count; ++i) {
    const std::string seed = "seed " + std::to_string(i) + " of the chunk: ";
    try {
      kSeedLoss.check(m.loss[i]);
      for (const double v : {m.jsd[i], m.jsd_converged[i]})
        if (!std::isnan(v)) kJsdQuantity.domain.check(v);
    } catch (const std::invalid_argument& e) {
      fail(seed + e.what());
    }
    if (!std::isnan(m.jsd[i]) && !std::isfinite(m.loss[i]))
      fail(seed + "a JSD to the mean map with a loss that is not finite");
    if (!std::isnan(m.jsd_converged[i]) && (std::isnan(m.jsd[i]) || !(m.loss[i] < converged_below)))
      fail(seed + "a JSD to the converged seeds' mean map, but a loss of " +
           human_number(m.loss[i]) + ", not below " + human_number(converged_below));
  }
  if (record != nullptr) {
    const std::int64_t size = record->size();
    read("records", m.records, count * size);
    for (std::int64_t i = 0; i < count; ++i) {
      const double* r = m.records.data() + i * size;
      try {
        record->check(r, converged_below);
      } catch (const std::invalid_argument& e) {
        fail("seed " + std::to_string(i) + " of the chunk: " + e.what());
      }
      if (r[0] != m.loss[i] && !(std::isnan(m.loss[i]) && std::isnan(r[0])))
        fail("records whose loss is not the seed's loss");
    }
  } else if (j.contains("records")) {
    fail("records where none belong");
  }
  return m;
}

}  // namespace attn
