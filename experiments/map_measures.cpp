// map_measures.cpp: see map_measures.hpp.
#include "experiments/map_measures.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "host/exact_state.hpp"

namespace attn {

double jsd(const double* p, const double* q, int len) {
  double sum = 0;
  for (int j = 0; j < len; ++j) {
    const double m = 0.5 * (p[j] + q[j]);
    if (p[j] > 0) sum += 0.5 * p[j] * std::log(p[j] / m);
    if (q[j] > 0) sum += 0.5 * q[j] * std::log(q[j] / m);
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
  for (int e = 0; e < map_size(); ++e) ok = ok && std::isfinite(r[1 + e]);
  return ok;
}

namespace {

[[noreturn]] void fail(const std::string& why) { throw std::invalid_argument(why); }

std::string count_text(std::int64_t v) { return std::to_string(v); }

}  // namespace

MapSummary::MapSummary(SeedResults s, std::uint64_t budget, double threshold)
    : shape(s),
      converged_below(threshold),
      loss(kLossScale, budget),
      argmax(static_cast<std::size_t>(s.map_size()), 0),
      pair_jsd(kJsdScale, budget),
      pair_out(kDistanceScale, budget) {
  const bool sketches = entry_quantiles();
  entries.assign(
      static_cast<std::size_t>(s.map_size()),
      QuantileSketch(sketches ? kEntryScale : QuantileSketch::none(), sketches ? budget : 0));
}

void MapSummary::add(const double* results, std::int64_t count) {
  const int size = shape.size(), map = shape.map_size(), n = shape.n;
  for (std::int64_t i = 0; i < count; ++i) {
    const double* r = results + i * size;
    ++seeds;
    if (std::isfinite(r[0])) loss.push(r[0]);
    if (!shape.finite(r)) {
      ++not_finite;
      continue;
    }
    if (r[0] < converged_below) ++converged;
    for (int e = 0; e < map; ++e) entries[e].push(r[1 + e]);
    for (int row = 0; row < shape.rows; ++row) {
      const double* p = r + 1 + row * n;
      argmax[row * n + (std::max_element(p, p + n) - p)]++;
    }
  }
  for (std::int64_t i = 0; i + 1 < count; i += 2) {
    const double* a = results + i * size;
    const double* b = a + size;
    if (!shape.finite(a) || !shape.finite(b)) continue;
    pair_jsd.push(map_jsd(a + 1, b + 1, shape.rows, n));
    pair_out.push(rms_distance(a + 1 + map, b + 1 + map, shape.rows * shape.d_v, shape.rows));
  }
}

void MapSummary::merge(const MapSummary& o) {
  seeds += o.seeds;
  not_finite += o.not_finite;
  converged += o.converged;
  loss.merge(o.loss);
  for (std::size_t e = 0; e < entries.size(); ++e) entries[e].merge(o.entries[e]);
  for (std::size_t e = 0; e < argmax.size(); ++e) argmax[e] += o.argmax[e];
  pair_jsd.merge(o.pair_jsd);
  pair_out.merge(o.pair_out);
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
          {"converged", converged},
          {"loss", loss.to_state()},
          {"entries", entry_states},
          {"argmax", argmax},
          {"pair_jsd", pair_jsd.to_state()},
          {"pair_out", pair_out.to_state()}};
}

MapSummary MapSummary::from_state(const nlohmann::json& j, std::int64_t expected) const {
  if (!j.is_object()) fail("not a map summary");
  for (const char* key :
       {"seeds", "not_finite", "converged", "loss", "entries", "argmax", "pair_jsd", "pair_out"})
    if (!j.contains(key)) fail(std::string("a map summary without ") + key);
  MapSummary o = *this;
  o.seeds = exact_count(j.at("seeds"), "seeds");
  if (o.seeds != expected)
    fail("a summary of " + count_text(o.seeds) + " seeds, where there are " + count_text(expected));
  o.not_finite = exact_count(j.at("not_finite"), "not_finite");
  o.converged = exact_count(j.at("converged"), "converged");
  if (o.not_finite > o.seeds) fail("more seeds not finite than seeds");
  const std::int64_t used = o.seeds - o.not_finite;
  if (o.converged > used) fail("more seeds converged than finite seeds");
  o.loss = loss.from_state(j.at("loss"), o.seeds, "loss");
  if (o.loss.count() < used) fail("fewer finite losses than finite seeds");
  const std::size_t map = entries.size();
  const nlohmann::json& es = j.at("entries");
  if (entry_quantiles()) {
    if (!es.is_array() || es.size() != map)
      fail("not " + std::to_string(map) + " entry states, one per map entry");
    for (std::size_t e = 0; e < map; ++e) {
      o.entries[e] = entries[e].from_state(es.at(e), used, "map entry " + std::to_string(e));
      if (o.entries[e].count() != used) fail("a map entry that does not count the finite seeds");
      if (used > 0 && (o.entries[e].min() < 0 || o.entries[e].max() > 1))
        fail("a map entry outside [0, 1]");
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
  const nlohmann::json& am = j.at("argmax");
  if (!am.is_array() || am.size() != argmax.size())
    fail("argmax counts that are not one per map entry");
  for (int row = 0; row < shape.rows; ++row) {
    std::int64_t sum = 0;
    for (int k = 0; k < shape.n; ++k) {
      const std::int64_t c = exact_count(am.at(row * shape.n + k), "an argmax count");
      if (c > used - sum) fail("argmax counts of a row that add up to more than the finite seeds");
      sum += c;
      o.argmax[row * shape.n + k] = c;
    }
    if (sum != used) fail("argmax counts of a row that do not add up to the finite seeds");
  }
  o.pair_jsd = pair_jsd.from_state(j.at("pair_jsd"), o.seeds / 2, "pair JSD");
  o.pair_out = pair_out.from_state(j.at("pair_out"), o.seeds / 2, "pair output distance");
  if (o.pair_jsd.count() != o.pair_out.count())
    fail("pair JSD and output distance of different counts");
  return o;
}

SeedMeasures SeedMeasures::of(const SeedResults& shape, const std::vector<double>& mean_map,
                              const double* results, std::int64_t count, bool keep_results) {
  SeedMeasures m;
  const int size = shape.size();
  for (std::int64_t i = 0; i < count; ++i) {
    const double* r = results + i * size;
    m.loss.push_back(r[0]);
    m.jsd.push_back(shape.finite(r) ? map_jsd(r + 1, mean_map.data(), shape.rows, shape.n) : NAN);
  }
  if (keep_results) m.results.assign(results, results + count * size);
  return m;
}

nlohmann::json SeedMeasures::to_state() const {
  nlohmann::json j = {{"loss", exact_vector(loss)}, {"jsd", exact_vector(jsd)}};
  if (!results.empty()) j["results"] = exact_vector(results);
  return j;
}

SeedMeasures SeedMeasures::from_state(const nlohmann::json& j, const SeedResults& shape,
                                      std::int64_t count, bool keep_results) {
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
  for (double v : m.jsd)
    if (!(std::isnan(v) || (v >= -1e-12 && v <= 0.6931471805599453 + 1e-12)))
      fail("a JSD outside [0, ln 2]");
  if (keep_results) {
    read("results", m.results, count * shape.size());
    for (std::int64_t i = 0; i < count; ++i)
      if (m.results[i * shape.size()] != m.loss[i] &&
          !(std::isnan(m.loss[i]) && std::isnan(m.results[i * shape.size()])))
        fail("results whose loss is not the seed's loss");
  } else if (j.contains("results")) {
    fail("results where none belong");
  }
  return m;
}

}  // namespace attn
