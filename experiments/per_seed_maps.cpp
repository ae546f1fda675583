// per_seed_maps.cpp: see per_seed_maps.hpp.
#include "experiments/per_seed_maps.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "host/array_io.hpp"
#include "host/format.hpp"

namespace attn {
namespace {

// ".npy" in any case (x.NPY too).
bool is_npy(const std::string& path) {
  if (path.size() < 4) return false;
  std::string ext = path.substr(path.size() - 4);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".npy";
}

std::string stem(const std::string& path) { return path.substr(0, path.size() - 4); }

// The intervention field an array is named after, or -1.
int intervention_field(const std::string& name) {
  for (int f = 0; f < kInterventionFields; ++f)
    if (name == kInterventionColumns[f]) return f;
  return -1;
}

// The .npy arrays beside FILE, in the files' order ("" is FILE itself, the maps).
std::vector<std::string> array_names(const PerSeedRecord& r) {
  std::vector<std::string> names = {"",          "seeds",     "loss",        "start_loss",
                                    "test_loss", "converged", "generalized", "diverged",
                                    "jsd"};
  if (r.nudge) names.push_back("nudge_jsd");
  if (r.known) {
    names.push_back("jsd_to_known");
    names.push_back("found");
  }
  for (const char* n : {"out", "w_q", "w_k", "w_v"}) names.push_back(n);
  if (r.w_o) names.push_back("w_o");
  for (int f = 0; f < kInterventionFields; ++f)
    if (r.known || (f != kKnownLoss && f != kKnownOut)) names.push_back(kInterventionColumns[f]);
  return names;
}

template <class T>
void append(std::string& buffer, const T* values, std::size_t count) {
  const std::size_t at = buffer.size();
  buffer.resize(at + sizeof(T) * count);
  std::memcpy(buffer.data() + at, values, sizeof(T) * count);  // little-endian (x86-64, arm64)
}

}  // namespace

std::int64_t PerSeedRecord::weight_size(int which) const {
  const std::int64_t dm = d_model, dk = d_k, dv = d_v;
  return which == 0 || which == 1 ? dm * dk : which == 2 ? dm * dv : w_o ? dv * dm : 0;
}

void PerSeedRecord::make(const double* r, const double* weights, double nudge_jsd,
                         double converged_below, const KnownMap& known_map,
                         const double* interventions, double* out) const {
  out[0] = results.loss(r);
  out[1] = results.start_loss(r);
  out[2] = results.test_loss(r);
  out[3] = results.converged(r, converged_below) ? 1 : 0;
  out[4] = results.generalized(r, converged_below) ? 1 : 0;
  out[5] = results.diverged(r) ? 1 : 0;
  out[6] = nudge_jsd;
  out[7] = NAN;
  out[8] = 0;
  if (!known_map.empty() && results.finite(r)) {
    std::vector<double> buffer;
    const double* p = results.mean_over_heads(results.maps(r), buffer);
    out[7] = known_map_jsd(results, known_map, p);
    out[8] = found_known_map(results, known_map, p, out[7]) ? 1 : 0;
  }
  double* at = out + kHead;
  at = std::copy_n(weights, this->weights(), at);
  at = std::copy_n(results.maps(r), maps(), at);
  at = std::copy_n(results.outputs(r), outputs(), at);
  for (int f = 0; f < kInterventionFields; ++f)
    at[f] = interventions != nullptr ? interventions[f] : NAN;
}

void PerSeedRecord::check(const double* r, double converged_below) const {
  const auto flag = [&](int k, const char* what) {
    if (r[k] != 0 && r[k] != 1)
      throw std::invalid_argument(std::string("a flag '") + what + "' of " + human_number(r[k]) +
                                  ", not 0 or 1");
    return r[k] == 1;
  };
  const auto refuse = [](const std::string& why) { throw std::invalid_argument(why); };
  for (int k = 0; k < 3; ++k) kSeedLoss.check(r[k]);
  const bool converged = flag(3, "converged"), generalized = flag(4, "generalized"),
             diverged = flag(5, "diverged");
  if (converged != (!diverged && r[0] < converged_below))
    refuse("a seed marked " + std::string(converged ? "" : "not ") + "converged with a loss of " +
           human_number(r[0]) + (diverged ? ", diverged" : "") + " (converged below " +
           human_number(converged_below) + ")");
  if (generalized != (!diverged && r[2] < converged_below))
    refuse("a seed marked " + std::string(generalized ? "" : "not ") +
           "generalized with a test loss of " + human_number(r[2]) +
           (diverged ? ", diverged" : "") + " (below " + human_number(converged_below) + ")");
  if (!diverged && (!std::isfinite(r[0]) || !std::isfinite(r[2]) || results.blew_up(r)))
    refuse("a seed not marked diverged with a final loss of " + human_number(r[0]) +
           ", a start loss of " + human_number(r[1]) + " and a test loss of " + human_number(r[2]));
  if (!nudge && !std::isnan(r[6])) refuse("a nudge JSD without --nudge");
  if (!std::isnan(r[6])) kJsdQuantity.domain.check(r[6]);
  if (!known && (!std::isnan(r[7]) || r[8] != 0)) refuse("a known map's measures without one");
  if (!std::isnan(r[7])) kJsdQuantity.domain.check(r[7]);
  if (flag(8, "found") && std::isnan(r[7]))
    refuse("a seed that found the known map without a JSD to it");
  if (known && !diverged && std::isnan(r[7]))
    refuse("a seed not marked diverged without a JSD to the known map");
  const double* w = r + kHead;
  for (std::int64_t e = 0; std::isfinite(r[0]) && e < weights(); ++e) kFinalWeight.check(w[e]);
  const double* p = w + weights();
  check_map_rows(p, static_cast<std::int64_t>(map_inputs) * results.heads, results.rows, results.n);
  for (std::int64_t e = 0; !diverged && e < maps(); ++e)
    if (!std::isfinite(p[e]))
      refuse("a weight of the map of " + human_number(p[e]) + " of a seed not marked diverged");
  const double* iv = r + interventions_at();
  for (int f = 0; f < kInterventionFields; ++f) {
    if (std::isnan(iv[f])) continue;
    if (!known && (f == kKnownLoss || f == kKnownOut))
      refuse(std::string("a measure ") + kInterventionColumns[f] + " without a known map");
    if (!std::isfinite(iv[f]) && f % 2 == 1 && f < kAdversarialJsd) continue;  // inf: overflow
    intervention_quantity(f).domain.check(iv[f]);
  }
}

std::vector<std::string> PerSeedMaps::files(const std::string& path, const PerSeedRecord& r) {
  if (!is_npy(path)) return {path};
  std::vector<std::string> out;
  for (const std::string& name : array_names(r))
    out.push_back(name.empty() ? path : stem(path) + "." + name + ".npy");
  return out;
}

std::vector<std::string> PerSeedMaps::every_file(const std::string& path) {
  PerSeedRecord every;
  every.nudge = every.known = every.w_o = true;
  return files(path, every);
}

double PerSeedMaps::bytes(const std::string& path, const PerSeedRecord& r, std::uint64_t count) {
  const double seeds = static_cast<double>(count);
  // CSV: the seed (up to 20 digits), %.17g numbers (up to 24 characters) and separators.
  if (!is_npy(path))
    return seeds * (20 + 6 + 25.0 * (8 + kInterventionFields + static_cast<double>(r.maps())) + 1);
  return 30 * 128 +
         seeds * (8.0 * (7 + kInterventionFields + r.weights() + r.maps() + r.outputs()) + 4);
}

PerSeedMaps::PerSeedMaps(const std::string& path, bool force, const PerSeedRecord& record, int r0,
                         std::uint64_t count)
    : record_(record), count_(count), npy_(is_npy(path)) {
  for (const std::string& f : files(path, record)) {
    // A killed run's temporaries of the arrays beside FILE (demo clears FILE's own before work).
    const std::filesystem::path p(f);
    const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
    for (const std::string& stale : remove_stale_temporaries(dir, p.filename().string()))
      spdlog::warn("removed {}: a temporary file left by an earlier run that was killed", stale);
    files_.push_back(std::make_unique<AtomicFile>(f, force));
  }
  // An earlier run's arrays that this request does not write would lie beside the new ones.
  const std::vector<std::string> mine = files(path, record);
  for (const std::string& f : every_file(path))
    if (std::find(mine.begin(), mine.end(), f) == mine.end()) retire_file(f, force);
  buffers_.resize(files_.size());
  const SeedResults& s = record.results;
  const std::size_t seeds = count, rows = s.rows, n = static_cast<std::size_t>(s.n);
  const std::size_t k = static_cast<std::size_t>(record.map_inputs);
  const std::size_t h = static_cast<std::size_t>(s.heads);
  if (npy_) {
    names_ = array_names(record);
    for (std::size_t f = 0; f < names_.size(); ++f) {
      const std::string& name = names_[f];
      std::vector<std::size_t> shape = {seeds};
      std::string descr = "<f8";
      if (name.empty() || name == "out") {
        if (record.inputs_axis) shape.push_back(k);
        if (name.empty() && h > 1) shape.push_back(h);
        shape.push_back(rows);
        shape.push_back(name.empty() ? n : static_cast<std::size_t>(s.d_out));
      } else if (name == "seeds") {
        descr = "<u8";
      } else if (name == "converged" || name == "generalized" || name == "diverged" ||
                 name == "found") {
        descr = "|b1";
      } else if (name.rfind("w_", 0) == 0) {
        const bool o = name == "w_o";
        const std::size_t cols = name == "w_v" || o ? record.d_v : record.d_k;
        shape.push_back(o ? static_cast<std::size_t>(record.d_v) : record.d_model);
        shape.push_back(o ? static_cast<std::size_t>(record.d_model) : cols);
      }
      buffers_[f] = npy_header(descr, shape);
    }
    return;
  }
  std::string header = "seed,loss,start_loss,test_loss,converged,generalized,diverged,jsd_to_mean";
  if (record.nudge) header += ",nudge_jsd";
  if (record.known) header += ",jsd_to_known,found";
  for (int f = 0; f < kInterventionFields; ++f)
    if (record.known || (f != kKnownLoss && f != kKnownOut))
      header += std::string(",") + kInterventionColumns[f];
  for (int b = 0; b < record.map_inputs; ++b)
    for (int hh = 0; hh < s.heads; ++hh)
      for (int e = 0; e < s.input_map(); ++e)
        header += ",p_" + (record.inputs_axis ? "in" + std::to_string(b) + "_" : std::string()) +
                  (s.heads > 1 ? std::to_string(hh) + "_" : std::string()) +
                  std::to_string(r0 + e / s.n) + "_" + std::to_string(e % s.n);
  buffers_[0] = header + "\n";
}

void PerSeedMaps::add(std::uint64_t seed, const double* r, double jsd_to_mean) {
  ++added_;
  const double* maps = r + PerSeedRecord::kHead + record_.weights();
  const double* outputs = maps + record_.maps();
  if (npy_) {
    const double* w = r + PerSeedRecord::kHead;
    for (std::size_t f = 0; f < names_.size(); ++f) {
      const std::string& name = names_[f];
      std::string& b = buffers_[f];
      if (name.empty()) {
        append(b, maps, static_cast<std::size_t>(record_.maps()));
      } else if (name == "seeds") {
        append(b, &seed, 1);
      } else if (name == "jsd") {
        append(b, &jsd_to_mean, 1);
      } else if (name == "out") {
        append(b, outputs, static_cast<std::size_t>(record_.outputs()));
      } else if (intervention_field(name) >= 0) {
        append(b, r + record_.interventions_at() + intervention_field(name), 1);
      } else if (name.rfind("w_", 0) == 0) {
        const int which = name == "w_q" ? 0 : name == "w_k" ? 1 : name == "w_v" ? 2 : 3;
        std::int64_t at = 0;
        for (int before = 0; before < which; ++before) at += record_.weight_size(before);
        append(b, w + at, static_cast<std::size_t>(record_.weight_size(which)));
      } else {
        const int field = name == "loss"           ? 0
                          : name == "start_loss"   ? 1
                          : name == "test_loss"    ? 2
                          : name == "converged"    ? 3
                          : name == "generalized"  ? 4
                          : name == "diverged"     ? 5
                          : name == "nudge_jsd"    ? 6
                          : name == "jsd_to_known" ? 7
                                                   : 8;
        if ((field >= 3 && field <= 5) || field == 8) {
          const char flag = r[field] != 0 ? 1 : 0;
          append(b, &flag, 1);
        } else {
          append(b, r + field, 1);
        }
      }
    }
  } else {
    char cell[200];
    std::snprintf(cell, sizeof cell, "%llu,%.17g,%.17g,%.17g,%d,%d,%d,%.17g",
                  static_cast<unsigned long long>(seed), r[0], r[1], r[2], r[3] != 0 ? 1 : 0,
                  r[4] != 0 ? 1 : 0, r[5] != 0 ? 1 : 0, jsd_to_mean);
    std::string& rows = buffers_[0];
    rows += cell;
    if (record_.nudge) {
      std::snprintf(cell, sizeof cell, ",%.17g", r[6]);
      rows += cell;
    }
    if (record_.known) {
      std::snprintf(cell, sizeof cell, ",%.17g,%d", r[7], r[8] != 0 ? 1 : 0);
      rows += cell;
    }
    for (int f = 0; f < kInterventionFields; ++f)
      if (record_.known || (f != kKnownLoss && f != kKnownOut)) {
        std::snprintf(cell, sizeof cell, ",%.17g", r[record_.interventions_at() + f]);
        rows += cell;
      }
    for (std::int64_t e = 0; e < record_.maps(); ++e) {
      std::snprintf(cell, sizeof cell, ",%.17g", maps[e]);
      rows += cell;
    }
    rows += "\n";
  }
  flush(false);
}

void PerSeedMaps::flush(bool all) {
  for (std::size_t k = 0; k < files_.size(); ++k)
    if (all || buffers_[k].size() >= (std::size_t{1} << 20)) {
      files_[k]->write(buffers_[k]);
      buffers_[k].clear();
    }
}

void PerSeedMaps::commit() {
  if (added_ != count_)
    throw std::logic_error("--per-seed: " + std::to_string(added_) + " seeds written of " +
                           std::to_string(count_));
  flush(true);
  for (auto& f : files_) f->commit();
}

}  // namespace attn
