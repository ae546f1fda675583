// attention_sweep.cpp: attention-map variability at any size. One attention head
// (--words n, --d-model, --d-k, --d-v) trained from numpy's default_rng(seed) start for every
// seed in --seeds, on one task (the same X and target for every seed), then: how far apart are
// the seeds' attention maps, and how far apart are their outputs? Spec: docs/spec/VARIABILITY.md.
//
// Measures (natural logarithms; source: Wiegreffe and Pinter, "Attention is not not
// Explanation", EMNLP 2019, seed variance; Jain and Wallace, "Attention is not Explanation",
// NAACL 2019): experiments/map_measures.hpp.
//
// The work goes through the chunk driver (host/chunks.hpp): chunks of consecutive seeds (whole
// pairs), so ranks, --shard parts, --checkpoint and resume give the bits of one process. Memory
// is bounded at any seed count: a chunk sends a MapSummary, never its maps. The JSD of each seed
// to the mean map needs the mean of all seeds first, so it is a second pass: over the seeds'
// results kept by the first pass when they fit --map-memory, else by training every seed again
// (a second job on the driver: twice the training, no memory or disk per seed). With --shard,
// the parts hold the first pass and `demo merge` runs the second.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "experiments/map_measures.hpp"
#include "experiments/per_seed_maps.hpp"
#include "experiments/quantile_sketch.hpp"
#include "experiments/registry.hpp"
#include "host/chunks.hpp"
#include "host/memory.hpp"
#include "host/output.hpp"
#include "host/plots.hpp"
#include "host/progress.hpp"
#include "moments.hpp"

namespace attn {

namespace {

const std::vector<double> kProbs = {0.05, 0.25, 0.5, 0.75, 0.95};
constexpr int kJsdBins = 40;            // the JSD histogram: kJsdBins bins on [0, ln 2]
constexpr std::size_t kScatter = 4000;  // seeds (the first ones) in the loss-vs-JSD figure
constexpr int kMaxSize = 1024;          // --words, --d-model, --d-k, --d-v at most

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

// Seeds per chunk: a whole number of pairs, about 2^28 FLOPs of training (so that a chunk takes a
// fraction of a second on one core and a stop comes soon), between 2 and 4096 (a sweep of more
// chunks than the driver takes is refused by it). Fixed by the request alone.
std::uint64_t seeds_per_chunk(const head::Model& m) {
  const double work = m.steps * head_sizing::flops_per_seed_step(m);
  std::uint64_t per = 4096;
  while (per > 2 && static_cast<double>(per) * work > 268435456.0) per /= 2;
  return per;
}

// A monitor for the training calls inside the driver's chunks: a large head's seed trains long,
// so the CPU's threads ask it between steps.
const Monitor& signal_monitor() {
  struct Signals : Monitor {
    bool stop_requested() const override { return stop_requested_by_signal(); }
  };
  static const Signals m;
  return m;
}

// One sweep: the request, its chunks, the first pass's summary, the second pass's measures.
struct Sweep {
  Sweep(const RunContext& c, const Shape& shape) : ctx(c), s(shape) {}

  const RunContext& ctx;
  const Shape s;
  head::Model m;
  std::vector<double> x, y;  // the task
  SeedResults shape;
  const SeedSet* seeds = nullptr;
  std::uint64_t count = 0, per_chunk = 0, chunks = 0;
  std::uint64_t budget = 0;  // values kept per quantity for exact quantiles
  bool keep = false;         // the first pass keeps every seed's results for the second
  std::string per_seed_file;
  std::unique_ptr<PerSeedMaps> per_seed;
  std::optional<MapSummary> summary;
  std::vector<double> kept;  // keep: every seed's results, in order
  std::vector<double> mean_map;
  // The second pass's result.
  std::optional<QuantileSketch> to_mean;
  std::vector<std::int64_t> histogram = std::vector<std::int64_t>(kJsdBins, 0);
  std::vector<double> scatter_loss, scatter_jsd;
  std::uint64_t measured = 0;  // seeds through the second pass's fold
  double train_seconds = 0;    // the first pass's

  std::uint64_t first_of(std::uint64_t chunk) const { return chunk * per_chunk; }
  std::uint64_t count_of(std::uint64_t chunk) const {
    return std::min(per_chunk, count - first_of(chunk));
  }
  double work_of(std::uint64_t chunk) const {
    return static_cast<double>(count_of(chunk)) * m.steps;
  }

  // Trains chunks [first, first + n) in one backend call: their results, in seed order.
  std::vector<double> train(std::uint64_t first, std::uint64_t n, const Monitor& monitor) const {
    const std::uint64_t a = first_of(first), b = first_of(first + n - 1) + count_of(first + n - 1);
    std::vector<std::uint64_t> chunk_seeds(b - a);
    for (std::uint64_t i = a; i < b; ++i) chunk_seeds[i - a] = seeds->at(i);
    std::vector<double> out((b - a) * shape.size());
    ctx.backend.train_heads(m, chunk_seeds.data(), static_cast<std::int64_t>(b - a), out.data(),
                            monitor);
    return out;
  }

  ChunkJob job(const std::string& label, std::uint64_t batch) const {
    ChunkJob j;
    j.label = label;
    j.unit = "seed-steps";
    j.chunks = chunks;
    j.batch = batch;
    j.paced = ctx.backend.kind() == DeviceKind::cpu;
    j.work = [this](std::uint64_t i) { return work_of(i); };
    return j;
  }

  void first_pass(std::uint64_t batch);
  void second_pass(std::uint64_t batch);
  void measure(std::uint64_t chunk, const SeedMeasures& measures);
  Table table();
};

void Sweep::first_pass(std::uint64_t batch) {
  ChunkJob j = job("attention-sweep", batch);
  const MapSummary empty(shape, budget, ctx.get<double>("--converged-below"));
  const MapSummary chunk_template(shape, per_chunk, empty.converged_below);
  summary.emplace(empty);
  const std::uint64_t size = static_cast<std::uint64_t>(shape.size());
  j.compute = [&](std::uint64_t first, std::uint64_t n) {
    const std::vector<double> out = train(first, n, signal_monitor());
    std::vector<ChunkState> states;
    const double* r = out.data();
    for (std::uint64_t i = first; i < first + n; ++i) {
      MapSummary c = chunk_template;
      c.add(r, static_cast<std::int64_t>(count_of(i)));
      ChunkState state = c.to_state();
      if (keep) state["results"] = exact_vector(std::vector<double>(r, r + count_of(i) * size));
      states.push_back(std::move(state));
      r += count_of(i) * size;
    }
    return states;
  };
  // The kept results of `seeds` seeds in a state (keep mode), appended to out.
  const auto read_results = [&](const ChunkState& state, std::uint64_t seeds,
                                std::vector<double>& out) {
    if (!state.contains("results") || !state.at("results").is_string())
      throw std::invalid_argument("no results of its seeds");
    const std::size_t before = out.size();
    append_exact_vector(state.at("results").get<std::string>(), out);
    if (out.size() - before != seeds * size)
      throw std::invalid_argument("results of the wrong length");
  };
  const auto read = [&](std::uint64_t i, const ChunkState& state) {
    MapSummary c = chunk_template.from_state(state, static_cast<std::int64_t>(count_of(i)));
    std::vector<double> results;
    if (keep) read_results(state, count_of(i), results);
    return std::make_pair(std::move(c), std::move(results));
  };
  j.check = [&](std::uint64_t i, const ChunkState& state) { read(i, state); };
  j.fold = [&](std::uint64_t i, const ChunkState& state) {
    auto [c, results] = read(i, state);
    summary->merge(c);
    kept.insert(kept.end(), results.begin(), results.end());
  };
  j.save = [&] {
    ChunkState state = summary->to_state();
    if (keep) state["results"] = exact_vector(kept);
    return state;
  };
  j.load = [&](const ChunkState& state, std::uint64_t next) {
    const std::int64_t folded = static_cast<std::int64_t>(std::min(count, first_of(next)));
    summary.emplace(empty.from_state(state, folded));
    kept.clear();
    if (keep) read_results(state, static_cast<std::uint64_t>(folded), kept);
  };
  const auto start = std::chrono::steady_clock::now();
  const bool folded = run_chunks(ctx.opt, j);
  train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (folded) mean_map = summary->mean_map();
}

// Each seed's JSD to the mean map: from the kept results, or by training the seeds again (the
// same bits: a seed trains alone from its own start).
void Sweep::second_pass(std::uint64_t batch) {
  to_mean.emplace(kJsdScale, budget);
  spdlog::debug("attention-sweep: measuring each seed's JSD to the mean map ({})",
                keep ? "from the kept results" : "training every seed again");
  if (keep) {  // measure() takes the per-seed results from `kept`
    for (std::uint64_t i = 0; i < chunks; ++i) {
      stop_point();
      measure(i, SeedMeasures::of(shape, mean_map, kept.data() + first_of(i) * shape.size(),
                                  static_cast<std::int64_t>(count_of(i)), false));
    }
    return;
  }
  mean_map = share_result(nlohmann::json(mean_map)).get<std::vector<double>>();
  const bool results_wanted = !per_seed_file.empty();
  ChunkJob j = job("attention-sweep-second-pass", batch);
  j.second_pass = true;
  j.compute = [&](std::uint64_t first, std::uint64_t n) {
    const std::vector<double> out = train(first, n, signal_monitor());
    std::vector<ChunkState> states;
    const double* r = out.data();
    for (std::uint64_t i = first; i < first + n; ++i) {
      states.push_back(SeedMeasures::of(shape, mean_map, r, static_cast<std::int64_t>(count_of(i)),
                                        results_wanted)
                           .to_state());
      r += count_of(i) * shape.size();
    }
    return states;
  };
  j.check = [&](std::uint64_t i, const ChunkState& state) {
    SeedMeasures::from_state(state, shape, static_cast<std::int64_t>(count_of(i)), results_wanted);
  };
  j.fold = [&](std::uint64_t i, const ChunkState& state) {
    measure(i, SeedMeasures::from_state(state, shape, static_cast<std::int64_t>(count_of(i)),
                                        results_wanted));
  };
  j.save = [&] {
    return ChunkState{{"to_mean", to_mean->to_state()},
                      {"histogram", histogram},
                      {"scatter_loss", exact_vector(scatter_loss)},
                      {"scatter_jsd", exact_vector(scatter_jsd)}};
  };
  j.load = [&](const ChunkState& state, std::uint64_t next) {
    const std::int64_t folded = static_cast<std::int64_t>(std::min(count, first_of(next)));
    to_mean.emplace(QuantileSketch(kJsdScale, budget)
                        .from_state(state.at("to_mean"), folded, "JSD to the mean map"));
    const auto h = state.at("histogram").get<std::vector<std::int64_t>>();
    std::int64_t in_bins = 0;
    for (std::int64_t c : h) in_bins += c < 0 ? throw std::invalid_argument("a negative count") : c;
    if (h.size() != histogram.size() || in_bins != to_mean->count())
      throw std::invalid_argument("a JSD histogram that does not count the finite seeds");
    histogram = h;
    scatter_loss.clear();
    scatter_jsd.clear();
    append_exact_vector(state.at("scatter_loss").get<std::string>(), scatter_loss);
    append_exact_vector(state.at("scatter_jsd").get<std::string>(), scatter_jsd);
    if (scatter_loss.size() != scatter_jsd.size() || scatter_loss.size() > kScatter)
      throw std::invalid_argument("a scatter of the wrong length");
    measured = static_cast<std::uint64_t>(folded);
  };
  run_chunks(ctx.opt, j);
}

// Folds one chunk of the second pass, in order: the JSD sketch, its figures, the per-seed files.
void Sweep::measure(std::uint64_t chunk, const SeedMeasures& sm) {
  const double ln2 = std::log(2.0);
  const std::uint64_t first = first_of(chunk);
  for (std::size_t k = 0; k < sm.jsd.size(); ++k) {
    const double v = sm.jsd[k];
    if (std::isfinite(v)) {
      to_mean->push(v);
      histogram[std::clamp(static_cast<int>(v / ln2 * kJsdBins), 0, kJsdBins - 1)]++;
      if (scatter_loss.size() < kScatter) {
        scatter_loss.push_back(sm.loss[k]);
        scatter_jsd.push_back(v);
      }
    }
    if (per_seed) {
      const double* r = sm.results.empty() ? kept.data() + (first + k) * shape.size()
                                           : sm.results.data() + k * shape.size();
      per_seed->add(seeds->at(first + k), r, v);
    }
  }
  measured += sm.jsd.size();
}

Table Sweep::table() {
  const MapSummary& su = *summary;
  Table t;
  t.name = "attention-sweep";
  t.title = "attention maps across seeds: how far apart the maps are, and how far the outputs";
  t.columns = {{"quantity"},    {"seeds"},       {"mean", "%.4g"}, {"std", "%.4g"},
               {"min", "%.4g"}, {"p05", "%.4g"}, {"p25", "%.4g"},  {"p50", "%.4g"},
               {"p75", "%.4g"}, {"p95", "%.4g"}, {"max", "%.4g"},  {"quantiles"}};
  std::vector<std::string> binned;
  auto distribution = [&](const std::string& name, QuantileSketch& q) {
    stop_point();
    if (q.count() == 0) {
      t.add_row({name, std::int64_t{0}, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, Cell{}});
      return;
    }
    const QuantileSketch::Mode mode = q.mode();
    const auto qs = q.quantiles(kProbs, ctx.backend);
    auto at = [&](int k) { return qs ? Cell((*qs)[k]) : Cell(); };
    const char* how = mode == QuantileSketch::Mode::exact    ? "exact"
                      : mode == QuantileSketch::Mode::binned ? "binned"
                                                             : "";
    if (mode == QuantileSketch::Mode::binned) binned.push_back(name);
    t.add_row({name, q.count(), q.moments().mean, q.moments().stddev(), q.min(), at(0), at(1),
               at(2), at(3), at(4), q.max(), how[0] ? Cell(std::string(how)) : Cell{}});
  };
  auto scalar = [&](const std::string& name, std::int64_t k, double value) {
    t.add_row(
        {name, k, value, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}});
  };
  const std::int64_t used = su.seeds - su.not_finite;
  QuantileSketch loss = su.loss;
  distribution("final loss", loss);
  scalar("converged (fraction)", static_cast<std::int64_t>(count),
         static_cast<double>(su.converged) / static_cast<double>(count));
  distribution("JSD to the mean map", *to_mean);
  QuantileSketch pair_jsd = su.pair_jsd, pair_out = su.pair_out;
  distribution("JSD between pairs of seeds", pair_jsd);
  distribution("output distance between pairs", pair_out);
  double agree = 0;
  for (int row = 0; row < s.rows(); ++row)
    agree += static_cast<double>(
        *std::max_element(su.argmax.begin() + row * s.n, su.argmax.begin() + (row + 1) * s.n));
  scalar("argmax agreement", used, used > 0 ? agree / s.rows() / static_cast<double>(used) : NAN);
  nlohmann::json mean_rows = nlohmann::json::array(), std_rows = nlohmann::json::array();
  for (int row = 0; row < s.rows(); ++row) {
    nlohmann::json a = nlohmann::json::array(), b = nlohmann::json::array();
    for (int j = 0; j < s.n; ++j) {
      const Moments& mo = su.entries[row * s.n + j].moments();
      a.push_back(mo.mean);
      b.push_back(used > 1 ? mo.stddev() : 0.0);
    }
    mean_rows.push_back(a);
    std_rows.push_back(b);
  }
  for (int e = 0; e < s.map_size(); ++e) {
    QuantileSketch entry = su.entries[e];
    distribution("P[" + std::to_string(s.r0 + e / s.n) + "][" + std::to_string(e % s.n) + "]",
                 entry);
  }
  t.extra["first_loss_row"] = s.r0;
  t.extra["mean_map"] = mean_rows;
  t.extra["std_map"] = std_rows;
  t.extra["jsd_histogram"] = {
      {"bins", kJsdBins}, {"range", {0.0, std::log(2.0)}}, {"counts", histogram}};
  t.extra["scatter"] = {{"loss", scatter_loss}, {"jsd", scatter_jsd}};

  const double seed_steps = static_cast<double>(count) * m.steps;
  char line[240];
  std::snprintf(line, sizeof line,
                "%.3g seed-steps in %.3g s: %.3g seed-steps/s, %.3g GFLOP/s (%.0f useful FLOPs "
                "per seed-step)%s",
                seed_steps, train_seconds, seed_steps / train_seconds,
                seed_steps * head::flops_per_step(m) / train_seconds / 1e9, head::flops_per_step(m),
                keep ? "" : "; the first of two passes");
  if (m.grad == head::Grad::analytic && ctx.opt.shards == 0) t.notes.push_back(line);
  t.notes.push_back("converged: final loss < " + ctx.settings.text("--converged-below") +
                    "; JSD in nats (0: same map, ln 2 = 0.693: maps that share nothing), the mean "
                    "over the loss rows R = queries " +
                    std::to_string(s.r0) + ".." + std::to_string(s.n - 1));
  t.notes.push_back(
      "pairs: seeds in the order given, (1st, 2nd), (3rd, 4th), ...; output "
      "distance: RMS over R of |O_a - O_b|");
  if (!keep)
    t.notes.push_back(
        "JSD to the mean map: every seed trained a second time once the mean map was known (the "
        "seeds' results did not fit --map-memory)");
  if (!binned.empty()) {
    char bound[200];
    std::snprintf(bound, sizeof bound,
                  "binned quantiles (past --quantile-budget values each): within %.2g (map "
                  "entries), %.2g (JSD) absolute, %.2g of the value (loss, distance)",
                  QuantileSketch::error_bound(kEntryScale), QuantileSketch::error_bound(kJsdScale),
                  QuantileSketch::error_bound(kLossScale));
    t.notes.push_back(bound);
  }
  if (!su.entry_quantiles())
    t.notes.push_back("map entries: moments and extremes only (more than " +
                      std::to_string(kMaxEntrySketches) + " entries)");
  if (std::isnan(ctx.get<double>("--lr")) || std::isnan(ctx.get<double>("--init-scale"))) {
    char what[160];
    std::snprintf(what, sizeof what, "--lr %g, --init-scale %g (auto for --task %s)", m.lr,
                  m.init_scale, s.lesson ? "lesson" : "random");
    t.notes.push_back(what);
  }
  if (su.not_finite > 0)
    t.notes.push_back(std::to_string(su.not_finite) +
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
      {"seeds", seeds->text()},
      {"converged_below", summary->converged_below},
      {"quantile_budget", ctx.get<std::uint64_t>("--quantile-budget")},
      {"quantile_budget_per_quantity", budget},
      {"passes", keep ? 1 : 2},
      {"useful_flops_per_seed_step", head::flops_per_step(m)},
      {"init", "numpy default_rng(seed).normal(size=...) for W_Q, W_K, W_V, times --init-scale"}};
  if (!s.lesson) t.run["task_seed"] = ctx.get<std::uint64_t>("--task-seed");
  return t;
}

std::vector<Table> run(const RunContext& ctx) {
  Sweep w(ctx, check_shape(ctx));
  const Shape& s = w.s;
  w.seeds = &ctx.get<SeedSet>("--seeds");
  w.count = w.seeds->size();
  w.per_seed_file = ctx.get<std::string>("--per-seed");
  make_task(ctx, s, w.x, w.y);
  w.m = model_of(ctx, s);
  w.m.x = w.x.data();
  w.m.y = w.y.data();
  w.shape = SeedResults{s.rows(), s.n, s.d_v};
  w.per_chunk = seeds_per_chunk(w.m);
  w.chunks = (w.count + w.per_chunk - 1) / w.per_chunk;
  // Values kept per quantity: the budget shared by the table's quantities (the loss, the JSDs,
  // the distance, each map entry that keeps quantiles).
  const int quantities = 4 + (s.map_size() <= kMaxEntrySketches ? s.map_size() : 0);
  w.budget = ctx.get<std::uint64_t>("--quantile-budget") / static_cast<std::uint64_t>(quantities);
  const double result_bytes = 8.0 * w.shape.size();
  w.keep = static_cast<double>(w.count) * result_bytes <=
           static_cast<double>(ctx.get<std::uint64_t>("--map-memory"));
  if (!w.per_seed_file.empty() && PerSeedMaps::files(w.per_seed_file).size() > 1 &&
      std::filesystem::path(w.per_seed_file).filename().string().size() <= 4)
    throw std::invalid_argument("--per-seed " + w.per_seed_file +
                                ": a file name before the extension, e.g. maps.npy");
  if (w.chunks > kMaxChunks)
    throw std::invalid_argument("--seeds " + w.seeds->text() + ": " + std::to_string(w.chunks) +
                                " chunks of " + std::to_string(w.per_chunk) +
                                " seeds, more than the 2^28 the chunk driver takes; split the "
                                "range into several runs");
  if (!w.per_seed_file.empty() && ctx.opt.shards > 0)
    spdlog::info("--per-seed {}: written by demo merge (a part holds its seeds' results)",
                 w.per_seed_file);
  if (!w.per_seed_file.empty() && !ctx.opt.checkpoint.empty())
    throw std::invalid_argument(
        "--per-seed with --checkpoint: the rows written so far are not checkpointed; drop one");

  // Refusals that depend on the sweep's size, before any work: the disk for --per-seed, and
  // memory for what a backend call and the summaries hold.
  if (!w.per_seed_file.empty()) {
    const double need = PerSeedMaps::bytes(w.per_seed_file, w.shape, w.count);
    std::filesystem::path dir = std::filesystem::path(w.per_seed_file).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    const auto space = std::filesystem::space(dir, ec);
    if (!ec && need > static_cast<double>(space.available))
      throw std::invalid_argument("--per-seed " + w.per_seed_file + ": about " + human_bytes(need) +
                                  " of results, " +
                                  human_bytes(static_cast<double>(space.available)) +
                                  " free on that disk; use fewer seeds or leave out --per-seed");
  }
  ctx.backend.check_head(w.m);
  const std::uint64_t call = std::max<std::uint64_t>(
      static_cast<std::uint64_t>(ctx.backend.head_seeds_per_call(w.m)), w.per_chunk);
  const double call_bytes = static_cast<double>(std::min(call, w.count)) * result_bytes * 3 +
                            64.0 * 8 * head::layout(w.m).total * std::max(1, ctx.backend.threads());
  const double summary_bytes = (w.keep ? static_cast<double>(w.count) * result_bytes * 3 : 0) +
                               static_cast<double>(quantities) * 8 * static_cast<double>(w.budget) +
                               static_cast<double>(s.map_size()) * 400;
  const double memory = memory_available();
  if (call_bytes + summary_bytes > 0.8 * memory)
    throw std::invalid_argument("--seeds " + w.seeds->text() + ": the sweep needs about " +
                                human_bytes(call_bytes + summary_bytes) + " of memory, " +
                                human_bytes(memory) +
                                " available; use fewer words, a smaller --quantile-budget or "
                                "--map-memory");
  if (!w.per_seed_file.empty() && reports_results(ctx.opt))
    w.per_seed = std::make_unique<PerSeedMaps>(w.per_seed_file, ctx.opt.force, w.shape, s.r0,
                                               w.count, ctx.get<double>("--converged-below"));
  spdlog::debug("attention-sweep: {} seeds in {} chunks of {}, {} pass{}", w.count, w.chunks,
                w.per_chunk, w.keep ? 1 : 2, w.keep ? "" : "es");

  if (!w.keep && ctx.opt.shards == 0)
    spdlog::info(
        "attention-sweep: the seeds' results need more than --map-memory: every seed trains "
        "twice (the second time for its JSD to the mean map)");
  const std::uint64_t batch = std::max<std::uint64_t>(1, call / w.per_chunk);
  w.first_pass(batch);
  if (w.mean_map.empty() && (w.keep || ctx.opt.shards > 0)) return {};  // a part, or a rank
  if (!w.keep || reports_results(ctx.opt)) w.second_pass(batch);
  if (!reports_results(ctx.opt)) return {};
  spdlog::debug("attention-sweep: measured the maps of {} seeds", w.measured);
  if (w.per_seed) w.per_seed->commit();
  return {w.table()};
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
                 param::output_file(
                     "--per-seed",
                     "Also write every seed's results: FILE.csv (a row each) or FILE.npy (the "
                     "maps as an array (seeds, rows, n), beside FILE.seeds/.loss/.jsd/.out.npy)"),
                 param::count_up_to("--quantile-budget", "4194304",
                                    "Values kept for exact quantiles, shared by the table's "
                                    "quantities (8 bytes each); beyond, binned quantiles",
                                    std::uint64_t{1} << 30),
                 param::count_up_to("--map-memory", "33554432",
                                    "Bytes of seeds' results kept for the JSD to the mean map; "
                                    "a larger sweep trains its seeds a second time instead",
                                    std::uint64_t{1} << 40)},
      .figures = {{"attention-sweep-map", true, heatmap_script},
                  {"attention-sweep-jsd", false, jsd_histogram_script},
                  {"attention-sweep-loss-jsd", false, scatter_script}},
      .examples = {"demo --table attention-sweep --task random --words 8 --d-model 16 --d-k 16 "
                   "--seeds 0:10000 --steps 1000",
                   "demo --table attention-sweep --task lesson --words 2 --d-model 2 --d-k 2 "
                   "--train qk"},
      .run = run,
      .chunked = true};
  return e;
}

}  // namespace attn
