// training_sweep.cpp: the training comparison over many seeds ("attention-map variability").
// Per config: the distribution of sweet's weight on apple (mean, std, quantiles, a 20-bin
// histogram on [0, 1]) and the fraction of runs whose loss ended below --converged-below.
// Seeds go to the backend in chunks; per-seed results are folded in seed order into a
// SweepSummary (experiments/sweep_summary.hpp): bounded memory for any number of seeds (exact
// quantiles up to --quantile-budget weights, binned beyond), diverged runs counted and left out.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "experiments/registry.hpp"
#include "experiments/sweep_summary.hpp"
#include "experiments/training_common.hpp"
#include "host/chunks.hpp"
#include "host/format.hpp"
#include "host/output.hpp"
#include "host/plots.hpp"

namespace attn {
namespace {

const std::vector<double> kProbs = {0.05, 0.25, 0.5, 0.75, 0.95};

// Runs are counted in Moments' double and int64: a sweep takes at most 2^53 seeds.
constexpr std::uint64_t kMaxSeeds = std::uint64_t{1} << 53;
// At most 2^27 weights kept for exact quantiles: 1 GiB.
constexpr std::uint64_t kMaxQuantileBudget = std::uint64_t{1} << 27;
std::string too_many_seeds(std::uint64_t) {
  return "a sweep counts at most 2^53 = 9007199254740992 runs exactly (in double); split the "
         "range into several runs";
}

// The figure: a histogram of the weight on apple per config, one panel each, drawn from the
// table alone (a stored result draws the same figure). The title names the model, the training
// settings and the seeds; each panel its seeds, diverged runs, converged fraction and the
// median with p05 and p95 (also drawn: dashed, dotted), which tell a config whose weights all
// fall in one bin apart from another's.
std::string histogram_script(const Table& t) {
  if (!t.extra.contains("histogram")) return "";
  const auto& h = t.extra["histogram"];
  const int bins = h["bins"].get<int>();
  std::vector<std::string> names;
  for (const auto& [name, counts] : h["counts"].items()) names.push_back(name);
  if (names.empty()) return "";
  std::ostringstream s;
  s << "$D << EOD\n";
  for (int b = 0; b < bins; ++b) {
    s << (b + 0.5) / bins;
    for (const std::string& name : names) {
      const auto& counts = h["counts"][name];
      double total = 0;
      for (const auto& c : counts) total += c.get<double>();
      s << " " << (total > 0 ? counts.at(b).get<double>() / total : 0.0);
    }
    s << "\n";
  }
  s << "EOD\n";
  // The config's row of the table, or null.
  const auto row_of = [&t](const std::string& name) -> const std::vector<Cell>* {
    for (const auto& r : t.rows)
      if (plot::text(r[t.column("config")]) == name) return &r;
    return nullptr;
  };
  const auto value = [&t](const std::vector<Cell>* r, const char* column) {
    return r ? plot::num((*r)[t.column(column)]) : NAN;
  };
  std::string settings = plot::run_text(t, "steps") + " steps, lr " + plot::run_text(t, "lr");
  if (plot::run_text(t, "grad") == "numeric")
    settings += ", numeric gradients (h " + plot::run_text(t, "h") + ")";
  else if (!plot::run_text(t, "grad").empty())
    settings += ", " + plot::run_text(t, "grad") + " gradients";
  if (!plot::run_text(t, "schedule").empty())
    settings += ", " + plot::run_text(t, "schedule") + " schedule";
  if (!plot::run_text(t, "dtype").empty()) settings += ", " + plot::run_text(t, "dtype");
  std::string seeds = "each config over the same seeds";
  const double n = value(row_of(names[0]), "seeds");
  if (std::isfinite(n)) seeds = "each config over the same " + plot::count(n, "seed", "seeds");
  if (!plot::run_text(t, "seeds").empty()) seeds += " (" + plot::run_text(t, "seeds") + ")";
  if (!plot::run_text(t, "converged_below").empty())
    seeds += "; converged: final loss < " + plot::run_text(t, "converged_below");
  s << "set multiplot layout 1," << names.size() << " title "
    << plot::title_lines(
           {"sweet's weight on apple after training, across seeds: fraction of seeds in " +
                std::to_string(bins) + " bins on [0, 1]; dashed: median, dotted: p05 and p95",
            "the lesson's model: apple [1, 0], sweet [0, 1], sweet's target [1, 0]; " + settings,
            "all-*: W_Q, W_K, W_V trained; qk-*: W_Q, W_K trained, W_V = I; *-random: each seed "
            "starts at numpy default_rng(seed).normal(size=(2, 2)); *-identity: at I",
            seeds},
           160)
    << " noenhanced\n"
    << "set xlabel 'weight on apple'\nset ylabel 'fraction of seeds'\nset xrange [0:1]\n"
    << "set yrange [0:*]\nset grid\nset style fill solid 0.6\nset boxwidth " << 1.0 / bins << "\n";
  const std::size_t width = 160 / names.size();  // characters across one panel
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto* r = row_of(names[i]);
    std::vector<std::string> caption = {names[i]};
    if (r) {
      std::string runs = names[i] + ": " + plot::count(value(r, "seeds"), "seed", "seeds") + ", " +
                         human_number(100 * value(r, "converged")) + "% converged";
      if (value(r, "diverged") > 0)
        runs += ", " + plot::count(value(r, "diverged")) + " diverged (left out)";
      const double p05 = value(r, "p05"), p50 = value(r, "p50"), p95 = value(r, "p95");
      caption = {runs, std::isfinite(p50) ? "median " + human_number(p50) + ", p05 " +
                                                human_number(p05) + ", p95 " + human_number(p95)
                                          : "no finite weight"};
    }
    s << "unset arrow\n";
    const auto line = [&s](double x, const char* dash) {
      if (std::isfinite(x))
        s << "set arrow from " << round_trip(x) << ", graph 0 to " << round_trip(x)
          << ", graph 1 nohead lw 2 " << dash << " lc rgb '#d62728' front\n";
    };
    line(value(r, "p50"), "dt 2");
    line(value(r, "p05"), "dt 3");
    line(value(r, "p95"), "dt 3");
    s << "set title " << plot::title_lines(caption, width)
      << " noenhanced\nplot $D using 1:" << i + 2 << " with boxes lc rgb '#1f77b4' notitle\n";
  }
  s << "unset multiplot\n";
  return s.str();
}

// Chunk-driver work (host/chunks.hpp): chunk i is seeds_per_chunk() consecutive seeds of one
// config; its state is their SweepSummary (moments pushed in seed order, extremes, histograms,
// counts, the finite weights for exact quantiles, and the --per-seed rows); the driver folds the
// states in chunk order, so every split gives the same bits.
// Seeds per chunk: about 2^21 gradient evaluations (a numeric gradient costs ~6 analytic ones),
// a power of two in [16, 4096], so that one chunk takes well under a second on one CPU core and
// a stop is seen soon. Fixed by the request alone, like every chunking here.
std::uint64_t seeds_per_chunk(const tiny::TrainOptions& train) {
  const double cost =
      static_cast<double>(train.steps) * (train.grad == tiny::Grad::numeric ? 6 : 1);
  std::uint64_t seeds = 4096;
  while (seeds > 16 && static_cast<double>(seeds) * cost > 2097152.0) seeds /= 2;
  return seeds;
}

struct SeedChunk {
  std::size_t config;
  std::uint64_t first, count;  // seeds.at(first .. first + count - 1)
};

ChunkState chunk_state(const SweepSummary& s, const std::string& rows, bool with_rows) {
  ChunkState j = s.to_state();
  if (with_rows) j["rows"] = rows;
  return j;
}

// One training-sweep run: its settings, read once, and the chunks its seeds go in.
struct TrainingSweep {
  explicit TrainingSweep(const RunContext& c)
      : ctx(c),
        configs(ctx.get<std::vector<std::string>>("--configs")),
        seeds(ctx.get<SeedSet>("--seeds")),
        n(seeds.size()),
        train(train_options(ctx.settings)),
        converged_below(ctx.get<double>("--converged-below")),
        per_seed_file(ctx.get<std::string>("--per-seed")),
        budget(ctx.get<std::uint64_t>("--quantile-budget")) {
    if (!per_seed_file.empty() && !ctx.opt.checkpoint.empty())
      throw std::invalid_argument(
          "--per-seed with --checkpoint: the rows written so far are not checkpointed; drop one");
  }

  const RunContext& ctx;
  const std::vector<std::string>& configs;
  const SeedSet& seeds;
  const std::uint64_t n;
  const tiny::TrainOptions train;
  const double converged_below;
  const std::string& per_seed_file;
  const std::uint64_t budget;
  std::vector<tiny::Config> cs;  // configs' models
  std::uint64_t per_chunk = 0, per_config = 0;

  // Chunk i, computed (not stored: a sweep may have 2^53 seeds).
  SeedChunk chunk_of(std::uint64_t i) const {
    const std::uint64_t first = (i % per_config) * per_chunk;
    return SeedChunk{static_cast<std::size_t>(i / per_config), first,
                     std::min(per_chunk, n - first)};
  }

  // The configs' models and the chunks' size.
  void size_chunks() {
    for (const std::string& name : configs) cs.push_back(config_from_name(name));
    per_chunk = seeds_per_chunk(train);
    per_config = (n + per_chunk - 1) / per_chunk;
  }

  // Chunks [first, first + count) trained, one backend call for the consecutive chunks of one
  // config: each chunk's state (its summary and, with --per-seed, its rows). chunk_seeds and
  // results: the calls' buffers, kept between calls.
  std::vector<ChunkState> train_chunks(std::uint64_t first, std::uint64_t count,
                                       std::vector<std::uint64_t>& chunk_seeds,
                                       std::vector<tiny::TrainResult>& results) const {
    std::vector<ChunkState> states;
    for (std::uint64_t i = first; i < first + count;) {
      // One backend call for the consecutive chunks of one config.
      std::uint64_t j = i;
      chunk_seeds.clear();
      for (; j < first + count && chunk_of(j).config == chunk_of(i).config; ++j)
        for (std::uint64_t k = 0; k < chunk_of(j).count; ++k)
          chunk_seeds.push_back(seeds.at(chunk_of(j).first + k));
      results.resize(chunk_seeds.size());
      ctx.backend.train_seeds(cs[chunk_of(i).config], chunk_seeds.data(),
                              static_cast<std::int64_t>(chunk_seeds.size()), train,
                              precision(ctx.settings), results.data());
      std::size_t r = 0;
      for (; i < j; ++i) {
        const std::string& name = configs[chunk_of(i).config];
        SweepSummary s(budget, converged_below);
        std::string rows;
        for (std::uint64_t k = 0; k < chunk_of(i).count; ++k, ++r) {
          const tiny::TrainResult& res = results[r];
          const double w = res.weight_on_apple;
          s.push(w, res.loss);
          if (!per_seed_file.empty()) {
            char line[256];
            std::snprintf(line, sizeof line, "%s,%llu,%.17g,%.17g,%.17g,%.17g\n", name.c_str(),
                          static_cast<unsigned long long>(chunk_seeds[r]), w, res.out_x, res.out_y,
                          res.loss);
            rows += line;
          }
        }
        states.push_back(chunk_state(s, rows, !per_seed_file.empty()));
      }
    }
    return states;
  }

  // A chunk's state read back: the summary of its seeds and, with --per-seed, one row for each
  // seed, in order, of its config, whose weight and loss are in their domains
  // (SweepSummary::kWeight, kLoss) and give the summary: the rows are the runs it summarizes.
  void check_chunk(std::uint64_t i, const ChunkState& s) const {
    const SeedChunk c = chunk_of(i);
    SweepSummary(budget, converged_below).check_state(s, static_cast<std::int64_t>(c.count));
    if (per_seed_file.empty()) return;
    if (!s.contains("rows") || !s.at("rows").is_string())
      throw std::invalid_argument("no --per-seed rows");
    const std::string& rows = s.at("rows").get_ref<const std::string&>();
    const std::string name = configs[c.config] + ",";
    SweepSummary made(budget, converged_below);
    std::size_t at = 0;
    for (std::uint64_t k = 0; k < c.count; ++k) {
      const std::size_t end = rows.find('\n', at);
      const std::string seed = std::to_string(seeds.at(c.first + k));
      if (end == std::string::npos || rows.compare(at, name.size(), name) != 0 ||
          rows.compare(at + name.size(), seed.size() + 1, seed + ",") != 0)
        throw std::invalid_argument("--per-seed row " + std::to_string(k) + " is not that of " +
                                    configs[c.config] + " seed " + seed);
      // weight_on_apple, out_x, out_y, loss: numbers as %.17g wrote them.
      double v[4];
      const char* p = rows.c_str() + at + name.size() + seed.size() + 1;
      for (int f = 0; f < 4; ++f) {
        char* stop = nullptr;
        v[f] = std::strtod(p, &stop);
        if (stop == p || *stop != (f < 3 ? ',' : '\n'))
          throw std::invalid_argument("--per-seed row " + std::to_string(k) + " of seed " + seed +
                                      " does not hold four numbers after the seed");
        p = stop + 1;
      }
      try {
        SweepSummary::kWeight.check(v[0]);
        SweepSummary::kLoss.check(v[3]);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("--per-seed row of seed " + seed + ": " + e.what());
      }
      made.push(v[0], v[3]);
      at = end + 1;
    }
    if (at != rows.size()) throw std::invalid_argument("more --per-seed rows than seeds");
    ChunkState summary = s;
    summary.erase("rows");
    if (made.to_state() != summary)
      throw std::invalid_argument(
          "a summary that is not the one its --per-seed rows give (weights, losses, counts)");
  }

  // The summaries of the first `next` chunks, from a checkpoint's state j.
  void load_summaries(const ChunkState& j, std::uint64_t next,
                      std::vector<SweepSummary>& summaries) const {
    if (!j.is_array() || j.size() != summaries.size())
      throw std::invalid_argument("not " + std::to_string(summaries.size()) +
                                  " sweep states, one per config");
    std::vector<std::int64_t> runs(summaries.size(), 0);
    for (std::uint64_t i = 0; i < next; ++i)
      runs[chunk_of(i).config] += static_cast<std::int64_t>(chunk_of(i).count);
    for (std::size_t c = 0; c < summaries.size(); ++c) {
      summaries[c] = SweepSummary(budget, converged_below);  // its memory freed first
      summaries[c].reserve(n);
      try {
        summaries[c].merge_state(j.at(c), runs[c]);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("config " + configs[c] + ": " + e.what());
      }
    }
  }
};

// The table's name, title and columns.
Table empty_table() {
  Table t;
  t.name = "training-sweep";
  t.title = "sweet's weight on apple across seeds: spread when W_V trains, pinned when fixed";
  t.columns = {
      {"config"},      {"seeds"},       {"diverged"},          {"mean", "%.4f"}, {"std", "%.4f"},
      {"min", "%.4f"}, {"p05", "%.4f"}, {"p25", "%.4f"},       {"p50", "%.4f"},  {"p75", "%.4f"},
      {"p95", "%.4f"}, {"max", "%.4f"}, {"converged", "%.4f"}, {"quantiles"}};
  return t;
}

// The table's rows (one per config), notes, histograms and run record, from the summaries.
void summarize(const TrainingSweep& sw, std::vector<SweepSummary>& summaries,
               std::unique_ptr<AtomicFile>& per_seed, Table& t) {
  const RunContext& ctx = sw.ctx;
  const std::vector<std::string>& configs = sw.configs;
  const double converged_below = sw.converged_below;
  const std::uint64_t budget = sw.budget;
  nlohmann::json hist = nlohmann::json::object();
  bool any_binned = false, any_diverged = false;
  for (std::size_t c = 0; c < configs.size(); ++c) {
    const std::string& name = configs[c];
    const SweepSummary::Row row = summaries[c].finish(kProbs, ctx.backend);
    auto cell = [](const std::optional<double>& v) { return v ? Cell(*v) : Cell(); };
    t.add_row({name, row.runs, row.diverged, cell(row.mean), cell(row.std), cell(row.min),
               cell(row.quantiles[0]), cell(row.quantiles[1]), cell(row.quantiles[2]),
               cell(row.quantiles[3]), cell(row.quantiles[4]), cell(row.max), row.converged,
               row.used == 0 ? Cell() : Cell(std::string(row.exact ? "exact" : "binned"))});
    hist[name] = row.histogram;
    any_binned = any_binned || !row.exact;
    any_diverged = any_diverged || row.diverged > 0;
    if (row.used == 0)
      t.notes.push_back(name + ": all " + std::to_string(row.runs) +
                        " runs diverged (non-finite weight or loss): no statistics");
  }
  if (per_seed) per_seed->commit();
  if (any_diverged)
    t.notes.push_back(
        "diverged: runs whose weight or loss ended non-finite; mean, std, min, quantiles, max "
        "and the histogram are over the other seeds - diverged runs");
  t.notes.push_back("converged: fraction of all runs with final loss < " +
                    human_number(converged_below));
  t.notes.push_back(
      any_binned
          ? "quantiles: exact (numpy's linear) up to --quantile-budget weights per config; binned: "
            "from a 2^20-bin histogram on [0, 1], within 4.8e-7 (half a bin) of the exact value"
          : "quantiles: exact (numpy's linear, all weights kept)");
  t.extra["histogram"] = {
      {"bins", SweepSummary::kFigureBins}, {"range", {0.0, 1.0}}, {"counts", hist}};
  t.run = training_settings(ctx.settings);
  t.run["seeds"] = sw.seeds.text();
  t.run["converged_below"] = converged_below;
  t.run["quantile_budget"] = budget;
  t.run["quantiles"] = any_binned ? "binned: 2^20-bin histogram on [0, 1], error <= 2^-21"
                                  : "exact: type 7 (numpy's linear) on the sorted weights";
}

std::vector<Table> run(const RunContext& ctx) {
  TrainingSweep sw(ctx);
  std::unique_ptr<AtomicFile> per_seed;
  if (!sw.per_seed_file.empty() && reports_results(ctx.opt)) {
    per_seed = std::make_unique<AtomicFile>(sw.per_seed_file, ctx.opt.force);
    per_seed->write("config,seed,weight_on_apple,out_x,out_y,loss\n");
  }
  Table t = empty_table();
  sw.size_chunks();
  std::vector<SweepSummary> summaries(sw.configs.size(),
                                      SweepSummary(sw.budget, sw.converged_below));
  if (reports_results(ctx.opt))  // the process that folds keeps the weights (up to the budget)
    for (SweepSummary& s : summaries) s.reserve(sw.n);
  std::vector<std::uint64_t> chunk_seeds;
  std::vector<tiny::TrainResult> results;
  ChunkJob job;
  job.label = "training-sweep";
  job.unit = "model-steps";
  job.chunks = sw.per_config * sw.configs.size();
  job.batch = std::max<std::uint64_t>(1, ctx.backend.seeds_per_call() / sw.per_chunk);
  job.least = (ctx.backend.least_seeds_per_call() + sw.per_chunk - 1) / sw.per_chunk;
  job.work = [&](std::uint64_t i) {
    return static_cast<double>(sw.chunk_of(i).count) * sw.train.steps;
  };
  job.compute = [&](std::uint64_t first, std::uint64_t count) {
    return sw.train_chunks(first, count, chunk_seeds, results);
  };
  job.fold = [&](std::uint64_t i, const ChunkState& s) {
    summaries[sw.chunk_of(i).config].merge_state(s,
                                                 static_cast<std::int64_t>(sw.chunk_of(i).count));
    if (per_seed) per_seed->write(s.at("rows").get<std::string>());
  };
  job.check = [&](std::uint64_t i, const ChunkState& s) { sw.check_chunk(i, s); };
  job.save = [&] {
    ChunkState j = ChunkState::array();
    for (const SweepSummary& s : summaries) j.push_back(chunk_state(s, "", false));
    return j;
  };
  job.load = [&](const ChunkState& j, std::uint64_t next) {
    sw.load_summaries(j, next, summaries);
  };
  if (!run_chunks(ctx.opt, job)) return {};  // a shard or another MPI rank
  summarize(sw, summaries, per_seed, t);
  return {t};
}

}  // namespace

const Experiment& training_sweep_experiment() {
  std::vector<Param> params =
      training_params("all-random,qk-random", "0:100000", kMaxSeeds, too_many_seeds);
  params.push_back(param::real("--converged-below", "1e-4",
                               "A run converged if its loss ends below X", 0, 1e300, true));
  params.push_back(param::output_file(
      "--per-seed", "Also write one row per run to FILE (.csv; attention-sweep's also .npy)",
      {".csv"}));
  params.push_back(param::count_up_to(
      "--quantile-budget", "16777216",
      "Weights kept per config for exact quantiles (8 bytes each); beyond, quantiles come from a "
      "2^20-bin histogram, within 4.8e-7",
      kMaxQuantileBudget));
  static const Experiment e{
      .name = "training-sweep",
      .summary = "the training comparison over many seeds (beyond)",
      .runs = Runs::backend,
      .params = params,
      .figures = {{"training-sweep", true, histogram_script}},
      .examples = {"demo --table training-sweep --seeds 0:1000000 --grad analytic --per-seed "
                   "runs.csv"},
      .run = run,
      .chunked = true};
  return e;
}

}  // namespace attn
