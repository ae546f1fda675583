// map_measures.cpp: see map_measures.hpp.
#include "experiments/map_measures.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "host/exact_state.hpp"
#include "host/format.hpp"

namespace attn {

double jsd(const double* p, const double* q, int len) {
  double sum = 0;
  for (int j = 0; j < len; ++j) {
    // p / m as 2p / (p + q): the same quotient, bit for bit, but m = (p + q) / 2 of a subnormal
    // weight rounds to 0 (and p / m to inf), where p + q never does.
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

bool SeedResults::finite(const double* r) const {
  bool ok = std::isfinite(r[0]);
  for (int e = 0; e < heads * map_size(); ++e) ok = ok && std::isfinite(r[2 + e]);
  return ok;
}

bool SeedResults::diverged(const double* r) const { return !finite(r) || blew_up(r); }

void SeedResults::check(const double* r) const {
  kSeedLoss.check(r[0]);
  kSeedLoss.check(r[1]);
  for (int h = 0; h < heads; ++h)
    for (int row = 0; row < rows; ++row) {
      const double* p = head_map(r, h) + row * n;
      double sum = 0;
      for (int k = 0; k < n; ++k) sum += kSeedWeight.check(p[k]);
      if (std::isfinite(sum) && !(std::fabs(sum - 1) <= n * kRowSum))
        throw std::invalid_argument("a row of the map whose weights sum to " + human_number(sum) +
                                    ", not 1");
    }
}

const double* SeedResults::mean_over_heads(const double* r, std::vector<double>& buffer) const {
  if (heads == 1) return head_map(r, 0);
  buffer.assign(static_cast<std::size_t>(map_size()), 0.0);
  for (int h = 0; h < heads; ++h) {
    const double* p = head_map(r, h);
    for (int e = 0; e < map_size(); ++e) buffer[e] += p[e];
  }
  for (double& v : buffer) v /= heads;
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
  std::vector<double> cost(static_cast<std::size_t>(h) * h);
  for (int i = 0; i < h; ++i)
    for (int j = 0; j < h; ++j)
      cost[i * h + j] = map_jsd(shape.head_map(a, i), shape.head_map(b, j), shape.rows, shape.n);
  return min_assignment(cost, h) / h;
}

namespace {

[[noreturn]] void fail(const std::string& why) { throw std::invalid_argument(why); }

std::string count_text(std::int64_t v) { return std::to_string(v); }

}  // namespace

MapSummary::MapSummary(SeedResults s, std::uint64_t budget, double threshold, Cover c,
                       std::vector<int> known_keys)
    : shape(s),
      converged_below(threshold),
      cover(c),
      known(std::move(known_keys)),
      loss(c == Cover::converged ? kLossQuantity.below(threshold) : kLossQuantity, budget),
      argmax(static_cast<std::size_t>(s.map_size()), 0),
      pair_jsd(kJsdQuantity, budget),
      pair_out(kDistanceQuantity, budget),
      pair_heads(s.heads > 1 ? kJsdQuantity : kJsdQuantity.without_quantiles(),
                 s.heads > 1 ? budget : 0),
      known_jsd(known.empty() ? kJsdQuantity.without_quantiles() : kJsdQuantity,
                known.empty() ? 0 : budget) {
  const bool sketches = entry_quantiles();
  entries.assign(static_cast<std::size_t>(s.map_size()),
                 QuantileSketch(sketches ? kEntryQuantity : kEntryQuantity.without_quantiles(),
                                sketches ? budget : 0));
}

bool MapSummary::covers(const double* r) const {
  if (!shape.finite(r)) return false;
  return cover == Cover::finite || (!shape.diverged(r) && r[0] < converged_below);
}

void MapSummary::add(const double* results, std::int64_t count) {
  const int size = shape.size(), map = shape.map_size(), n = shape.n;
  std::vector<double> buffer, other, one_hot(static_cast<std::size_t>(n));
  std::vector<char> in(static_cast<std::size_t>(count));  // covered, seed by seed
  for (std::int64_t i = 0; i < count; ++i) {
    const double* r = results + i * size;
    ++seeds;
    const bool finite = shape.finite(r), gone = !finite || shape.blew_up(r);
    const bool done = finite && !gone && r[0] < converged_below;
    not_finite += finite ? 0 : 1;
    diverged += gone ? 1 : 0;
    converged += done ? 1 : 0;
    in[i] = cover == Cover::finite ? finite : done;
    if (!in[i]) continue;
    ++covered;
    loss.push(r[0]);
    const double* p = shape.mean_over_heads(r, buffer);
    for (int e = 0; e < map; ++e) entries[e].push(p[e]);
    bool all_found = true;
    for (int row = 0; row < shape.rows; ++row) {
      const double* pr = p + row * n;
      const int best = static_cast<int>(std::max_element(pr, pr + n) - pr);
      argmax[row * n + best]++;
      if (known_map()) all_found = all_found && best == known[row];
    }
    if (known_map()) {
      found += all_found ? 1 : 0;
      double sum = 0;
      for (int row = 0; row < shape.rows; ++row) {
        std::fill(one_hot.begin(), one_hot.end(), 0.0);
        one_hot[known[row]] = 1.0;
        sum += jsd(p + row * n, one_hot.data(), n);
      }
      known_jsd.push(sum / shape.rows);
    }
  }
  for (std::int64_t i = 0; i + 1 < count; i += 2) {
    const double* a = results + i * size;
    const double* b = a + size;
    if (!in[i] || !in[i + 1]) continue;
    const double* pa = shape.mean_over_heads(a, buffer);
    const double* pb = shape.mean_over_heads(b, other);
    pair_jsd.push(map_jsd(pa, pb, shape.rows, n));
    pair_out.push(
        rms_distance(shape.outputs(a), shape.outputs(b), shape.rows * shape.d_out, shape.rows));
    if (shape.heads > 1) pair_heads.push(matched_head_jsd(shape, a, b));
  }
}

void MapSummary::merge(const MapSummary& o) {
  seeds += o.seeds;
  not_finite += o.not_finite;
  diverged += o.diverged;
  converged += o.converged;
  covered += o.covered;
  found += o.found;
  loss.merge(o.loss);
  for (std::size_t e = 0; e < entries.size(); ++e) entries[e].merge(o.entries[e]);
  for (std::size_t e = 0; e < argmax.size(); ++e) argmax[e] += o.argmax[e];
  pair_jsd.merge(o.pair_jsd);
  pair_out.merge(o.pair_out);
  pair_heads.merge(o.pair_heads);
  known_jsd.merge(o.known_jsd);
}

std::vector<double> MapSummary::mean_map() const {
  std::vector<double> m(entries.size());
  for (std::size_t e = 0; e < entries.size(); ++e) m[e] = entries[e].moments().mean;
  return m;
}

// Entries: a sketch state each when they keep quantiles; else (many entries, moments and
// extremes only) one hex vector per field, the moments' count being the finite seeds'.
nlohmann::json MapSummary::to_state() const {
  nlohmann::json entry_states;
  if (entry_quantiles()) {
    entry_states = nlohmann::json::array();
    for (const QuantileSketch& q : entries) entry_states.push_back(q.to_state());
  } else {
    std::vector<double> f[6];
    for (const QuantileSketch& q : entries) {
      const Moments& m = q.moments();
      f[0].push_back(m.mean);
      f[1].push_back(m.m2);
      f[2].push_back(m.m3);
      f[3].push_back(m.m4);
      f[4].push_back(q.min());
      f[5].push_back(q.max());
    }
    entry_states = {{"mean", exact_vector(f[0])}, {"m2", exact_vector(f[1])},
                    {"m3", exact_vector(f[2])},   {"m4", exact_vector(f[3])},
                    {"min", exact_vector(f[4])},  {"max", exact_vector(f[5])}};
  }
  return {{"seeds", seeds},
          {"not_finite", not_finite},
          {"diverged", diverged},
          {"converged", converged},
          {"covered", covered},
          {"found", found},
          {"loss", loss.to_state()},
          {"entries", entry_states},
          {"argmax", argmax},
          {"pair_jsd", pair_jsd.to_state()},
          {"pair_out", pair_out.to_state()},
          {"pair_heads", pair_heads.to_state()},
          {"known_jsd", known_jsd.to_state()}};
}

MapSummary MapSummary::from_state(const nlohmann::json& j, std::int64_t expected) const {
  if (!j.is_object()) fail("not a map summary");
  for (const char* key :
       {"seeds", "not_finite", "diverged", "converged", "covered", "found", "loss", "entries",
        "argmax", "pair_jsd", "pair_out", "pair_heads", "known_jsd"})
    if (!j.contains(key)) fail(std::string("a map summary without ") + key);
  MapSummary o = *this;
  o.seeds = exact_count(j.at("seeds"), "seeds");
  if (o.seeds != expected)
    fail("a summary of " + count_text(o.seeds) + " seeds, where there are " + count_text(expected));
  o.not_finite = exact_count(j.at("not_finite"), "not_finite");
  o.diverged = exact_count(j.at("diverged"), "diverged");
  o.converged = exact_count(j.at("converged"), "converged");
  o.covered = exact_count(j.at("covered"), "covered");
  o.found = exact_count(j.at("found"), "found");
  if (o.not_finite > o.diverged || o.diverged > o.seeds)
    fail("diverged seeds that are fewer than the non-finite ones or more than the seeds");
  if (o.converged > o.seeds - o.diverged) fail("more seeds converged than did not diverge");
  const std::int64_t used = o.covered;
  if (used != (cover == Cover::converged ? o.converged : o.seeds - o.not_finite))
    fail("a count of covered seeds that is not the " + std::string(cover_name(cover)) + " seeds'");
  if (o.found > used || (!known_map() && o.found != 0)) fail("more seeds found the map than seeds");
  o.loss = loss.from_state(j.at("loss"), o.seeds, "loss");
  if (o.loss.count() != used) fail("a loss count that is not the covered seeds'");
  const std::size_t map = entries.size();
  const nlohmann::json& es = j.at("entries");
  if (entry_quantiles()) {
    if (!es.is_array() || es.size() != map)
      fail("not " + std::to_string(map) + " entry states, one per map entry");
    for (std::size_t e = 0; e < map; ++e) {
      o.entries[e] = entries[e].from_state(es.at(e), used, "map entry " + std::to_string(e));
      if (o.entries[e].count() != used) fail("a map entry that does not count the covered seeds");
    }
  } else {
    if (!es.is_object()) fail("entries that are not an object of fields");
    std::vector<double> f[6];
    const char* names[6] = {"mean", "m2", "m3", "m4", "min", "max"};
    for (int k = 0; k < 6; ++k) {
      if (!es.contains(names[k]) || !es.at(names[k]).is_string())
        fail(std::string("entries without ") + names[k]);
      append_exact_vector(es.at(names[k]).get<std::string>(), f[k]);
      if (f[k].size() != map) fail(std::string("entries' ") + names[k] + " of the wrong length");
    }
    for (std::size_t e = 0; e < map; ++e) {
      const double d = static_cast<double>(used);
      nlohmann::json s = {
          {"count", used},
          {"moments", nlohmann::json::array({exact(d), exact(f[0][e]), exact(f[1][e]),
                                             exact(f[2][e]), exact(f[3][e])})},
          {"min", exact(f[4][e])},
          {"max", exact(f[5][e])},
          {"mode", "none"},
          {"values", ""},
          {"bins", nlohmann::json::array()}};
      o.entries[e] = entries[e].from_state(s, used, "map entry " + std::to_string(e));
    }
  }
  // The mean map: each row a distribution (the mean of the seeds' rows, each summing to 1).
  for (int row = 0; row < shape.rows && used > 0; ++row) {
    double sum = 0;
    for (int k = 0; k < shape.n; ++k) sum += o.entries[row * shape.n + k].moments().mean;
    if (!(std::fabs(sum - 1) <= 1e-6))
      fail("a mean map whose row " + std::to_string(row) + " sums to " + human_number(sum) +
           ", not 1");
  }
  const nlohmann::json& am = j.at("argmax");
  if (!am.is_array() || am.size() != argmax.size())
    fail("argmax counts that are not one per map entry");
  for (int row = 0; row < shape.rows; ++row) {
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
  for (int row = 0; row < static_cast<int>(known.size()); ++row)
    if (o.found > o.argmax[row * shape.n + known[row]])
      fail("more seeds found the known map than have its key as argmax in row " +
           std::to_string(row));
  o.pair_jsd = pair_jsd.from_state(j.at("pair_jsd"), o.seeds / 2, "pair JSD");
  o.pair_out = pair_out.from_state(j.at("pair_out"), o.seeds / 2, "pair output distance");
  o.pair_heads = pair_heads.from_state(j.at("pair_heads"), o.seeds / 2, "pair head-matched JSD");
  o.known_jsd = known_jsd.from_state(j.at("known_jsd"), used, "JSD to the known map");
  if (o.pair_jsd.count() != o.pair_out.count())
    fail("pair JSD and output distance of different counts");
  if (o.pair_jsd.count() > used / 2) fail("more pairs than two covered seeds each");
  if (o.pair_heads.count() != (shape.heads > 1 ? o.pair_jsd.count() : 0))
    fail("a head-matched pair count that is not the pairs'");
  if (o.known_jsd.count() != (known_map() ? used : 0))
    fail("a count of JSDs to the known map that is not the covered seeds'");
  return o;
}

SeedMeasures SeedMeasures::of(const MapSummary& converged,
                              const std::vector<double>& converged_mean,
                              const std::vector<double>& finite_mean, const double* results,
                              std::int64_t count, bool keep_results) {
  SeedMeasures m;
  const SeedResults& shape = converged.shape;
  const int size = shape.size();
  std::vector<double> buffer;
  for (std::int64_t i = 0; i < count; ++i) {
    const double* r = results + i * size;
    m.loss.push_back(r[0]);
    const bool finite = shape.finite(r);
    const double* p = finite ? shape.mean_over_heads(r, buffer) : nullptr;
    m.jsd.push_back(finite ? map_jsd(p, finite_mean.data(), shape.rows, shape.n) : NAN);
    m.jsd_converged.push_back(converged.covers(r) && !converged_mean.empty()
                                  ? map_jsd(p, converged_mean.data(), shape.rows, shape.n)
                                  : NAN);
  }
  if (keep_results) m.results.assign(results, results + count * size);
  return m;
}

nlohmann::json SeedMeasures::to_state() const {
  nlohmann::json j = {{"loss", exact_vector(loss)},
                      {"jsd", exact_vector(jsd)},
                      {"jsd_converged", exact_vector(jsd_converged)}};
  if (!results.empty()) j["results"] = exact_vector(results);
  return j;
}

SeedMeasures SeedMeasures::from_state(const nlohmann::json& j, const SeedResults& shape,
                                      std::int64_t count, bool keep_results,
                                      double converged_below) {
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
  if (keep_results) {
    read("results", m.results, count * shape.size());
    for (std::int64_t i = 0; i < count; ++i) {
      const double* r = m.results.data() + i * shape.size();
      try {
        shape.check(r);
      } catch (const std::invalid_argument& e) {
        fail("seed " + std::to_string(i) + " of the chunk: " + e.what());
      }
      if (r[0] != m.loss[i] && !(std::isnan(m.loss[i]) && std::isnan(r[0])))
        fail("results whose loss is not the seed's loss");
    }
  } else if (j.contains("results")) {
    fail("results where none belong");
  }
  return m;
}

}  // namespace attn
