// attention_sweep.cpp: attention-map variability at any size. One attention head
// (--words n, --d-model, --d-k, --d-v) trained from numpy's default_rng(seed) start for every
// seed in --seeds, on one task (the same X and target for every seed), then: how far apart are
// the seeds' attention maps, and how far apart are their outputs? Spec: docs/spec/VARIABILITY.md.
//
// Measures (natural logarithms; source: Wiegreffe and Pinter, "Attention is not not
// Explanation", EMNLP 2019, seed variance; Jain and Wallace, "Attention is not Explanation",
// NAACL 2019):
//   JSD(p, q) = ½ KL(p‖m) + ½ KL(q‖m), m = (p + q)/2, 0 ln 0 = 0; for two maps the mean over the
//   loss rows R of the JSD of their rows. Mean map: the entrywise mean of P over the seeds.
//   Pairs: seeds in the order given, (1st, 2nd), (3rd, 4th), ...; output distance of a pair: the
//   root mean square over R of ‖O_a − O_b‖. Argmax agreement: per row of R the fraction of seeds
//   whose row argmax (lowest index on a tie) is the most common one; the mean over R.
// Seeds whose loss or map is not finite (a diverged run) are counted and left out of the map
// measures; they count as not converged.
//
// Memory: the maps on R (8 (n − r0) n bytes per seed) and the loss are kept for the JSD to the
// mean map and the exact quantiles; pairs are measured as the chunks arrive.
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "experiments/attention_sweep.hpp"
#include "experiments/registry.hpp"
#include "host/memory.hpp"
#include "host/output.hpp"
#include "host/plots.hpp"
#include "host/progress.hpp"
#include "moments.hpp"

namespace attn {

// See attention_sweep.hpp.
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

namespace {

const std::vector<double> kProbs = {0.05, 0.25, 0.5, 0.75, 0.95};
constexpr int kJsdBins = 40;            // the JSD histogram: kJsdBins bins on [0, ln 2]
constexpr std::size_t kScatter = 4000;  // seeds (the first ones) in the loss-vs-JSD figure
constexpr int kMaxSize = 1024;          // --words, --d-model, --d-k, --d-v at most

// JSD of two distributions of length len (natural log, 0 ln 0 = 0). Between 0 and ln 2.
double jsd(const double* p, const double* q, int len) {
  double sum = 0;
  for (int j = 0; j < len; ++j) {
    const double m = 0.5 * (p[j] + q[j]);
    if (p[j] > 0) sum += 0.5 * p[j] * std::log(p[j] / m);
    if (q[j] > 0) sum += 0.5 * q[j] * std::log(q[j] / m);
  }
  return sum;
}

// The mean over `rows` rows of length n of the rows' JSD.
double map_jsd(const double* a, const double* b, int rows, int n) {
  double sum = 0;
  for (int r = 0; r < rows; ++r) sum += jsd(a + r * n, b + r * n, n);
  return sum / rows;
}

struct Shape {
  int n, d_model, d_k, d_v, r0;
  bool lesson, train_values;
  int rows() const { return n - r0; }  // |R|
  int map_size() const { return rows() * n; }
};

// A real in (lo, hi], or "auto" (the default), which reads as NaN: the task then picks the value.
Param auto_real(std::string flag, std::string help, double lo, double hi) {
  Param p = param::real(std::move(flag), "1", std::move(help), lo, hi, true);
  p.kind = "X";  // as the other tables' --lr; the default shows "auto"
  p.default_text = "auto";
  auto inner = p.parse;
  p.parse = [inner](const std::string& f, const std::string& text) -> Value {
    if (text == "auto") return std::numeric_limits<double>::quiet_NaN();
    return inner(f, text);
  };
  return p;
}

// --lr and --init-scale when "auto": the lesson's 0.5 and 1 for --task lesson (spec, "Start
// and training"); for --task random the numpy and PyTorch peers' 0.01 and 0.25
// (shared/anchors/numpy_head.py), where gradient descent is stable: with the lesson's values
// every seed of the n = 8, d = 16 random task diverges (the loss's curvature in W_V grows with
// n and d_model).
double auto_value(const RunContext& ctx, const std::string& flag, bool lesson) {
  const double v = ctx.get<double>(flag);
  if (!std::isnan(v)) return v;
  if (flag == "--lr") return lesson ? 0.5 : 0.01;
  return lesson ? 1.0 : 0.25;
}

// Every refusal, before any work, as one line (std::invalid_argument).
Shape check_shape(const RunContext& ctx) {
  Shape s;
  s.n = static_cast<int>(ctx.get<std::int64_t>("--words"));
  s.d_model = static_cast<int>(ctx.get<std::int64_t>("--d-model"));
  s.d_k = static_cast<int>(ctx.get<std::int64_t>("--d-k"));
  const std::int64_t d_v = ctx.get<std::int64_t>("--d-v");
  if (ctx.settings.given("--d-v") && d_v == 0)
    throw std::invalid_argument("--d-v 0: the values need at least one dimension");
  s.d_v = d_v == 0 ? s.d_model : static_cast<int>(d_v);
  s.lesson = ctx.get<std::string>("--task") == "lesson";
  s.train_values = ctx.get<std::string>("--train") == "qkv";
  if (s.lesson) {
    if (s.n < 2)
      throw std::invalid_argument(
          "--task lesson needs --words 2 or more (a query word and a "
          "first word to attend to); got " +
          std::to_string(s.n));
    if (s.d_model != s.n)
      throw std::invalid_argument("--task lesson: --d-model must equal --words (X = I_n); got " +
                                  std::to_string(s.d_model) + " and " + std::to_string(s.n));
    if (s.d_v != s.n)
      throw std::invalid_argument(
          "--task lesson: --d-v must equal --words (the target is a "
          "word's one-hot vector); got " +
          std::to_string(s.d_v));
  }
  if (!s.train_values && s.d_v != s.d_model)
    throw std::invalid_argument(
        "--train qk fixes W_V to the identity, so --d-v must equal "
        "--d-model; got " +
        std::to_string(s.d_v) + " and " + std::to_string(s.d_model));
  s.r0 = s.lesson ? s.n - 1 : 0;
  return s;
}

head::Model model_of(const RunContext& ctx, const Shape& s) {
  head::Model m;
  m.n = s.n;
  m.d_model = s.d_model;
  m.d_k = s.d_k;
  m.d_v = s.d_v;
  m.r0 = s.r0;
  m.train_values = s.train_values;
  m.steps = static_cast<int>(ctx.get<std::int64_t>("--steps"));
  m.lr = auto_value(ctx, "--lr", s.lesson);
  m.grad = ctx.get<std::string>("--grad") == "numeric" ? head::Grad::numeric : head::Grad::analytic;
  m.h = ctx.get<double>("--h");
  m.schedule = ctx.get<std::string>("--schedule") == "sequential" ? head::Schedule::sequential
                                                                  : head::Schedule::simultaneous;
  m.init_scale = auto_value(ctx, "--init-scale", s.lesson);
  return m;
}

// The task's X (n, d_model) and Y (n, d_v), spec "Tasks".
void make_task(const RunContext& ctx, const Shape& s, std::vector<double>& x,
               std::vector<double>& y) {
  x.assign(static_cast<std::size_t>(s.n) * s.d_model, 0.0);
  y.assign(static_cast<std::size_t>(s.n) * s.d_v, 0.0);
  if (s.lesson) {
    for (int i = 0; i < s.n; ++i) x[i * s.d_model + i] = 1.0;
    y[(s.n - 1) * s.d_v + 0] = 1.0;
    return;
  }
  numpy_rng::Pcg64 g(ctx.get<std::uint64_t>("--task-seed"));
  for (double& v : x) v = numpy_rng::normal(g);
  for (double& v : y) v = numpy_rng::normal(g);
}

// Per-seed CSV: the bytes of one row, at most (seed up to 20 digits, %.17g up to 24 characters).
double per_seed_row_bytes(const Shape& s) { return 20 + 2 + 25.0 * (2 + s.map_size()) + 1; }

// Figures -----------------------------------------------------------------------------------

std::string matrix_block(const std::string& name, const nlohmann::json& rows) {
  std::ostringstream s;
  s << "$" << name << " << EOD\n";
  for (const auto& row : rows) {
    for (std::size_t j = 0; j < row.size(); ++j) s << (j ? " " : "") << row[j].get<double>();
    s << "\n";
  }
  s << "EOD\n";
  return s.str();
}

// The mean map and each entry's std across seeds, side by side (rows: the loss rows R).
std::string heatmap_script(const Table& t) {
  if (!t.extra.contains("mean_map") || t.extra["mean_map"].empty()) return "";
  const int r0 = t.extra["first_loss_row"].get<int>();
  const int n = static_cast<int>(t.extra["mean_map"][0].size());
  std::ostringstream s;
  s << matrix_block("M", t.extra["mean_map"]) << matrix_block("S", t.extra["std_map"]);
  s << "set multiplot layout 1,2 title 'attention map across seeds (rows: queries in R, "
       "columns: keys)'\n"
    << "set xlabel 'key j'\nset ylabel 'query i'\nset size ratio -1\n"
    << "set xrange [-0.5:" << n - 0.5 << "]\nset yrange [" << n - 0.5 << ":" << r0 - 0.5 << "]\n"
    << "set palette defined (0 'white', 1 '#1f77b4')\n";
  s << "set title 'mean weight'\nset cbrange [0:1]\nplot $M matrix using 1:($2+" << r0
    << "):3 with image notitle\n";
  s << "set title 'std across seeds'\nset cbrange [0:*]\nplot $S matrix using 1:($2+" << r0
    << "):3 with image notitle\n";
  s << "unset multiplot\n";
  return s.str();
}

std::string jsd_histogram_script(const Table& t) {
  if (!t.extra.contains("jsd_histogram")) return "";
  const auto& h = t.extra["jsd_histogram"];
  const auto& counts = h["counts"];
  const double hi = h["range"][1].get<double>();
  double total = 0;
  for (const auto& c : counts) total += c.get<double>();
  if (total == 0) return "";
  std::ostringstream s;
  s << "$D << EOD\n";
  for (std::size_t b = 0; b < counts.size(); ++b)
    s << (b + 0.5) * hi / counts.size() << " " << counts[b].get<double>() / total << "\n";
  s << "EOD\n";
  s << "set title 'JSD of each seed''s map to the mean map (ln 2 = maps that share nothing)'\n"
    << "set xlabel 'JSD (nats)'\nset ylabel 'fraction of seeds'\nset xrange [0:" << hi
    << "]\nset yrange [0:*]\nset grid\nset style fill solid 0.6\nset boxwidth "
    << hi / counts.size() << "\nplot $D using 1:2 with boxes lc rgb '#1f77b4' notitle\n";
  return s.str();
}

std::string scatter_script(const Table& t) {
  if (!t.extra.contains("scatter") || t.extra["scatter"]["loss"].empty()) return "";
  const auto& loss = t.extra["scatter"]["loss"];
  const auto& jsd_values = t.extra["scatter"]["jsd"];
  std::ostringstream s;
  s << "$D << EOD\n";
  bool any = false;
  for (std::size_t i = 0; i < loss.size(); ++i) {
    const double l = loss[i].get<double>();
    if (!(l > 0) || !std::isfinite(l)) continue;  // log axis
    s << l << " " << jsd_values[i].get<double>() << "\n";
    any = true;
  }
  s << "EOD\n";
  if (!any) return "";
  s << "set title 'final loss against the map''s JSD to the mean map (first " << loss.size()
    << " seeds)'\nset xlabel 'final loss'\nset ylabel 'JSD to the mean map (nats)'\n"
    << "set logscale x\nset format x '10^{%L}'\nset grid\n"
    << "plot $D using 1:2 with points pt 7 ps 0.3 lc rgb '#1f77b4' notitle\n";
  return s.str();
}

// The run --------------------------------------------------------------------------------

std::vector<Table> run(const RunContext& ctx) {
  const Shape s = check_shape(ctx);
  const SeedSet& seeds = ctx.get<SeedSet>("--seeds");
  const std::uint64_t count = seeds.size();
  const double converged_below = ctx.get<double>("--converged-below");
  const std::string& per_seed_file = ctx.get<std::string>("--per-seed");
  std::vector<double> x, y;
  make_task(ctx, s, x, y);
  head::Model m = model_of(ctx, s);
  m.x = x.data();
  m.y = y.data();
  const std::int64_t result = head::result_size(m);
  const std::int64_t workspace = head::layout(m).total;
  const int map = s.map_size();

  // Seeds per backend call: the backend's size, fewer for large shapes (at most about 4 GB of
  // results and workspaces per call: the GPU keeps one workspace per seed of the call) or long
  // runs, and even, so that the pairs never straddle two calls.
  // By work too: the backend's size is for training-sweep's ~1e6 FLOPs per seed; a call here
  // does at most about 5e6 FLOPs per seed of that size (CPU: 2^14 x 5e6 = 8e10 FLOPs; GPU:
  // 2^20 x 5e6, seconds). Within that the calls are paced to about 0.1 s (ChunkPacer), so that
  // progress and Ctrl-C stay responsive where a whole call at the lesson's size would take
  // seconds. Seeds train alone, so the calls' sizes leave the bits.
  const double per_seed_bytes = 8.0 * (result + workspace);
  const double weights = static_cast<double>(m.d_model) * (2 * m.d_k + m.d_v);
  const double work =
      m.steps * head::flops_per_step(m) * (m.grad == head::Grad::numeric ? 2 * weights : 1.0);
  const double per_call = static_cast<double>(ctx.backend.seeds_per_call());
  std::uint64_t chunk = static_cast<std::uint64_t>(
      std::max(2.0, std::min({per_call, 4e9 / per_seed_bytes, per_call * 5e6 / work})));
  chunk -= chunk % 2;
  chunk = std::max<std::uint64_t>(chunk, 2);

  // Refusals that depend on the sweep's size: host memory (kept maps + one call's results + the
  // CPU's workspaces, one lane pack per thread) and, with --per-seed, the disk.
  const double kept = static_cast<double>(count) * (8.0 * (map + 2) + 1);
  const double call = static_cast<double>(std::min<std::uint64_t>(chunk, count)) * 8.0 * result +
                      64.0 * workspace * std::max(1, ctx.backend.threads());
  if (!per_seed_file.empty()) {
    const double need = static_cast<double>(count) * per_seed_row_bytes(s);
    std::filesystem::path dir = std::filesystem::path(per_seed_file).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    const auto space = std::filesystem::space(dir, ec);
    if (!ec && need > static_cast<double>(space.available))
      throw std::invalid_argument("--per-seed " + per_seed_file + ": about " + human_bytes(need) +
                                  " of rows, " + human_bytes(static_cast<double>(space.available)) +
                                  " free on that disk; use fewer seeds or leave out --per-seed");
  }
  const double memory = memory_available();
  if (kept + call > 0.8 * memory)
    throw std::invalid_argument("--seeds " + seeds.text() + ": the sweep needs about " +
                                human_bytes(kept + call) + " of memory (" + human_bytes(8.0 * map) +
                                " per seed for its map), " + human_bytes(memory) +
                                " available; use fewer seeds or words");
  std::unique_ptr<AtomicFile> per_seed;
  if (!per_seed_file.empty()) per_seed = std::make_unique<AtomicFile>(per_seed_file, ctx.opt.force);

  // Train, chunk by chunk; keep loss and map, measure the pairs and argmaxes on the way.
  std::vector<double> losses(count), maps(count * map);
  std::vector<char> finite(count);
  std::vector<double> pair_jsd, pair_out;
  std::vector<std::int64_t> argmax_counts(static_cast<std::size_t>(s.rows()) * s.n, 0);
  std::int64_t converged = 0, not_finite = 0;
  Progress progress("attention-sweep", static_cast<double>(count) * m.steps, "seed-steps",
                    ctx.opt.quiet);
  std::vector<std::uint64_t> chunk_seeds;
  std::vector<double> out;
  ChunkPacer pacer(2, 2, chunk, 0.1, 2);  // even chunks: i0 stays even
  for (std::uint64_t i0 = 0, c = 0; i0 < count; i0 += c) {
    progress.stop_point();
    c = pacer.next(count - i0);
    chunk_seeds.resize(c);
    out.resize(c * result);
    for (std::uint64_t i = 0; i < c; ++i) chunk_seeds[i] = seeds.at(i0 + i);
    ctx.backend.train_heads(m, chunk_seeds.data(), static_cast<std::int64_t>(c), out.data(),
                            progress);
    for (std::uint64_t i = 0; i < c; ++i) {
      const double* r = out.data() + i * result;
      bool ok = std::isfinite(r[0]);
      for (int e = 0; e < map; ++e) ok = ok && std::isfinite(r[1 + e]);
      losses[i0 + i] = r[0];
      std::copy(r + 1, r + 1 + map, maps.begin() + (i0 + i) * map);
      finite[i0 + i] = ok;
      if (!ok) {
        ++not_finite;
        continue;
      }
      if (r[0] < converged_below) ++converged;
      for (int row = 0; row < s.rows(); ++row) {
        const double* p = r + 1 + row * s.n;
        argmax_counts[row * s.n + (std::max_element(p, p + s.n) - p)]++;
      }
    }
    for (std::uint64_t i = 0; i + 1 < c; i += 2) {  // pairs (1st, 2nd), (3rd, 4th), ...
      if (!finite[i0 + i] || !finite[i0 + i + 1]) continue;
      const double* a = out.data() + i * result;
      const double* b = a + result;
      pair_jsd.push_back(map_jsd(a + 1, b + 1, s.rows(), s.n));
      pair_out.push_back(rms_distance(a + 1 + map, b + 1 + map, s.rows() * s.d_v, s.rows()));
    }
    pacer.done();
    progress.advance(static_cast<double>(c) * m.steps);
  }
  progress.finish();

  // The mean map, each seed's JSD to it, the entries' moments.
  spdlog::debug("attention-sweep: measuring the maps of {} seeds", count);
  const std::int64_t used = static_cast<std::int64_t>(count) - not_finite;
  std::vector<Moments> entry(map);
  StopEvery stops(double(1 << 22));  // units: map entries (each a few FLOPs, a log in a JSD)
  for (std::uint64_t i = 0; i < count; ++i) {
    stops.add(map);
    if (finite[i])
      for (int e = 0; e < map; ++e) entry[e].push(maps[i * map + e]);
  }
  std::vector<double> mean_map(map);
  for (int e = 0; e < map; ++e) mean_map[e] = entry[e].mean;
  std::vector<double> to_mean(count, NAN);
  for (std::uint64_t i = 0; i < count; ++i) {
    stops.add(map);
    if (finite[i]) to_mean[i] = map_jsd(&maps[i * map], mean_map.data(), s.rows(), s.n);
  }

  Table t;
  t.name = "attention-sweep";
  t.title = "attention maps across seeds: how far apart the maps are, and how far the outputs";
  t.columns = {{"quantity"},    {"seeds"},       {"mean", "%.4g"}, {"std", "%.4g"},
               {"min", "%.4g"}, {"p05", "%.4g"}, {"p25", "%.4g"},  {"p50", "%.4g"},
               {"p75", "%.4g"}, {"p95", "%.4g"}, {"max", "%.4g"}};
  auto distribution = [&](const std::string& name, std::vector<double> v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](double z) { return !std::isfinite(z); }),
            v.end());
    Moments mo;
    double lo = INFINITY, hi = -INFINITY;
    for (double z : v) {
      stops.add(1);
      mo.push(z);
      lo = std::min(lo, z);
      hi = std::max(hi, z);
    }
    const std::int64_t k = static_cast<std::int64_t>(v.size());
    if (v.empty()) {
      t.add_row({name, k, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN});
      return;
    }
    const std::vector<double> q = ctx.backend.quantiles(std::move(v), kProbs);
    t.add_row({name, k, mo.mean, mo.stddev(), lo, q[0], q[1], q[2], q[3], q[4], hi});
  };
  auto scalar = [&](const std::string& name, std::int64_t k, double value) {
    t.add_row({name, k, value, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}});
  };
  distribution("final loss", losses);
  scalar("converged (fraction)", static_cast<std::int64_t>(count),
         static_cast<double>(converged) / static_cast<double>(count));
  distribution("JSD to the mean map", to_mean);
  distribution("JSD between pairs of seeds", pair_jsd);
  distribution("output distance between pairs", pair_out);
  double agree = 0;
  for (int row = 0; row < s.rows(); ++row)
    agree += static_cast<double>(*std::max_element(argmax_counts.begin() + row * s.n,
                                                   argmax_counts.begin() + (row + 1) * s.n));
  scalar("argmax agreement", used, used > 0 ? agree / s.rows() / static_cast<double>(used) : NAN);
  std::vector<double> column(used);
  for (int e = 0; e < map; ++e) {
    std::size_t k = 0;
    stop_point();
    for (std::uint64_t i = 0; i < count; ++i)
      if (finite[i]) column[k++] = maps[i * map + e];
    distribution("P[" + std::to_string(s.r0 + e / s.n) + "][" + std::to_string(e % s.n) + "]",
                 column);
  }

  // Per-seed rows, in the order given.
  if (per_seed) {
    std::string header = "seed,loss,converged,jsd_to_mean";
    for (int e = 0; e < map; ++e)
      header += ",p_" + std::to_string(s.r0 + e / s.n) + "_" + std::to_string(e % s.n);
    per_seed->write(header + "\n");
    std::string rows;
    char cell[96];
    for (std::uint64_t i = 0; i < count; ++i) {
      stops.add(map);
      std::snprintf(cell, sizeof cell, "%llu,%.17g,%d,%.17g",
                    static_cast<unsigned long long>(seeds.at(i)), losses[i],
                    finite[i] && losses[i] < converged_below ? 1 : 0, to_mean[i]);
      rows += cell;
      for (int e = 0; e < map; ++e) {
        std::snprintf(cell, sizeof cell, ",%.17g", maps[i * map + e]);
        rows += cell;
      }
      rows += "\n";
      if (rows.size() > (1u << 20)) {
        per_seed->write(rows);
        rows.clear();
      }
    }
    per_seed->write(rows);
    per_seed->commit();
  }

  // Figures' data and notes.
  nlohmann::json mean_rows = nlohmann::json::array(), std_rows = nlohmann::json::array();
  for (int row = 0; row < s.rows(); ++row) {
    nlohmann::json a = nlohmann::json::array(), b = nlohmann::json::array();
    for (int j = 0; j < s.n; ++j) {
      a.push_back(entry[row * s.n + j].mean);
      b.push_back(used > 1 ? entry[row * s.n + j].stddev() : 0.0);
    }
    mean_rows.push_back(a);
    std_rows.push_back(b);
  }
  std::vector<std::int64_t> hist(kJsdBins, 0);
  const double ln2 = std::log(2.0);
  for (double v : to_mean)
    if (std::isfinite(v)) hist[std::clamp(static_cast<int>(v / ln2 * kJsdBins), 0, kJsdBins - 1)]++;
  nlohmann::json scatter_loss = nlohmann::json::array(), scatter_jsd = nlohmann::json::array();
  for (std::uint64_t i = 0; i < count && scatter_loss.size() < kScatter; ++i)
    if (finite[i]) {
      scatter_loss.push_back(losses[i]);
      scatter_jsd.push_back(to_mean[i]);
    }
  t.extra["first_loss_row"] = s.r0;
  t.extra["mean_map"] = mean_rows;
  t.extra["std_map"] = std_rows;
  t.extra["jsd_histogram"] = {{"bins", kJsdBins}, {"range", {0.0, ln2}}, {"counts", hist}};
  t.extra["scatter"] = {{"loss", scatter_loss}, {"jsd", scatter_jsd}};

  const double seconds = progress.elapsed_seconds();
  const double seed_steps = static_cast<double>(count) * m.steps;
  char line[200];
  std::snprintf(line, sizeof line,
                "%.3g seed-steps in %.3g s: %.3g seed-steps/s, %.3g GFLOP/s (%.0f useful FLOPs "
                "per seed-step)",
                seed_steps, seconds, seed_steps / seconds,
                seed_steps * head::flops_per_step(m) / seconds / 1e9, head::flops_per_step(m));
  if (m.grad == head::Grad::analytic) t.notes.push_back(line);
  t.notes.push_back("converged: final loss < " + ctx.settings.text("--converged-below") +
                    "; JSD in nats (0: same map, ln 2 = 0.693: maps that share nothing), the mean "
                    "over the loss rows R = queries " +
                    std::to_string(s.r0) + ".." + std::to_string(s.n - 1));
  t.notes.push_back(
      "pairs: seeds in the order given, (1st, 2nd), (3rd, 4th), ...; output "
      "distance: RMS over R of |O_a - O_b|");
  if (std::isnan(ctx.get<double>("--lr")) || std::isnan(ctx.get<double>("--init-scale"))) {
    char what[160];
    std::snprintf(what, sizeof what, "--lr %g, --init-scale %g (auto for --task %s)", m.lr,
                  m.init_scale, s.lesson ? "lesson" : "random");
    t.notes.push_back(what);
  }
  if (not_finite > 0)
    t.notes.push_back(std::to_string(not_finite) +
                      " runs ended with a non-finite loss or map (left out of the map measures)");
  t.run = {
      {"task", ctx.get<std::string>("--task")},
      {"words", s.n},
      {"d_model", s.d_model},
      {"d_k", s.d_k},
      {"d_v", s.d_v},
      {"train", ctx.get<std::string>("--train")},
      {"steps", m.steps},
      {"lr", m.lr},
      {"grad", ctx.get<std::string>("--grad")},
      {"schedule", ctx.get<std::string>("--schedule")},
      {"init_scale", m.init_scale},
      {"seeds", seeds.text()},
      {"converged_below", converged_below},
      {"useful_flops_per_seed_step", head::flops_per_step(m)},
      {"init", "numpy default_rng(seed).normal(size=...) for W_Q, W_K, W_V, times --init-scale"}};
  if (!s.lesson) t.run["task_seed"] = ctx.get<std::uint64_t>("--task-seed");
  return {t};
}

}  // namespace

const Experiment& attention_sweep_experiment() {
  static const Experiment e{
      .name = "attention-sweep",
      .summary = "attention-map variability across seeds for a general head (beyond)",
      .runs = Runs::backend,
      .params = {param::choice(
                     "--task", "lesson",
                     "lesson (X = I_n, last word should output the first) or random (X, Y from "
                     "numpy default_rng(--task-seed))",
                     {"lesson", "random"}),
                 param::u64("--task-seed", "0", "Seed of the random task's X and Y"),
                 param::integer("--words", "2", "Words n (rows of X)", 1, kMaxSize),
                 param::integer("--d-model", "2", "d_model (columns of X)", 1, kMaxSize),
                 param::integer("--d-k", "2", "d_k (columns of W_Q and W_K)", 1, kMaxSize),
                 param::integer("--d-v", "0", "d_v (columns of W_V); default d_model", 0, kMaxSize),
                 param::choice("--train", "qkv", "qk (W_V fixed to I) or qkv", {"qk", "qkv"}),
                 param::seeds("--seeds", "0:10000", "Seeds: a list 0,1 (distinct) or a range A:B",
                              std::uint64_t{1} << 53,
                              [](std::uint64_t) {
                                return std::string("counts stay exact up to 2^53 seeds");
                              }),
                 param::integer("--steps", "3000", "Gradient steps", 1, 1000000000),
                 auto_real(
                     "--lr",
                     "Learning rate; auto: 0.5 for --task lesson (the lesson's), 0.01 for random",
                     0, 1e6),
                 param::choice("--grad", "analytic",
                               "analytic (softmax Jacobian) or numeric (central "
                               "differences)",
                               {"numeric", "analytic"}),
                 param::real("--h", "1e-5", "Step of the numeric gradient", 0, 1, true),
                 param::choice("--schedule", "sequential",
                               "sequential (the lesson's: W_Q, then W_K, then W_V) or simultaneous",
                               {"sequential", "simultaneous"}),
                 auto_real("--init-scale",
                           "Initial weights: numpy normals times X; auto: 1 for --task lesson (the "
                           "lesson's), 0.25 for random",
                           0, 1e6),
                 param::real("--converged-below", "1e-4",
                             "A run converged if its loss ends below X", 0, 1e300, true),
                 param::output_file("--per-seed", "Also write one CSV row per run to FILE")},
      .figures = {{"attention-sweep-map", true, heatmap_script},
                  {"attention-sweep-jsd", false, jsd_histogram_script},
                  {"attention-sweep-loss-jsd", false, scatter_script}},
      .examples = {"demo --table attention-sweep --task random --words 8 --d-model 16 --d-k 16 "
                   "--seeds 0:10000 --steps 1000",
                   "demo --table attention-sweep --task lesson --words 2 --d-model 2 --d-k 2 "
                   "--train qk"},
      .run = run};
  return e;
}

}  // namespace attn
