// training_sweep.cpp: the training comparison over many seeds ("attention-map variability").
// Per config: the distribution of sweet's weight on apple (mean, std, quantiles, a 20-bin
// histogram on [0, 1]) and the fraction of runs whose loss ended below --converged-below.
// Seeds go to the backend in chunks; per-seed results are folded in seed order, and only the
// weights (8 bytes per seed, for exact quantiles) are kept, unless --per-seed asks for rows.
#include <cmath>
#include <cstdio>
#include <limits>

#include "experiments/registry.hpp"
#include "experiments/training_common.hpp"
#include "host/output.hpp"
#include "host/progress.hpp"

namespace attn {
namespace {

constexpr int kBins = 20;
const std::vector<double> kProbs = {0.05, 0.25, 0.5, 0.75, 0.95};

struct Summary {
  Moments weight;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  std::vector<std::int64_t> histogram = std::vector<std::int64_t>(kBins, 0);
  std::int64_t converged = 0, not_finite = 0;
  std::vector<double> weights;
};

}  // namespace

std::vector<Table> run_training_sweep(const RunContext& ctx) {
  const auto configs =
      ctx.opt.configs.value_or(std::vector<std::string>{"all-random", "qk-random"});
  const SeedSet seeds = ctx.opt.seeds.value_or(SeedSet{true, 0, 100000, {}});
  const std::uint64_t n = seeds.size();
  const std::uint64_t chunk = ctx.backend.kind() == DeviceKind::cuda ? (1u << 20) : (1u << 14);

  std::unique_ptr<AtomicFile> per_seed;
  if (!ctx.opt.per_seed_file.empty()) {
    per_seed = std::make_unique<AtomicFile>(ctx.opt.per_seed_file, ctx.opt.force);
    per_seed->write("config,seed,weight_on_apple,out_x,out_y,loss\n");
  }
  Progress progress("training-sweep", static_cast<double>(n) * configs.size() * ctx.opt.train.steps,
                    "model-steps", ctx.opt.quiet);
  Table t;
  t.name = "training-sweep";
  t.title = "sweet's weight on apple across seeds: spread when W_V trains, pinned when fixed";
  t.columns = {{"config"},      {"seeds"},       {"mean", "%.4f"}, {"std", "%.4f"},
               {"min", "%.4f"}, {"p05", "%.4f"}, {"p25", "%.4f"},  {"p50", "%.4f"},
               {"p75", "%.4f"}, {"p95", "%.4f"}, {"max", "%.4f"},  {"converged", "%.4f"}};
  nlohmann::json hist = nlohmann::json::object();
  std::vector<std::uint64_t> chunk_seeds;
  std::vector<tiny::TrainResult> results;
  for (const std::string& name : configs) {
    const tiny::Config c = config_from_name(name);
    Summary s;
    s.weights.reserve(static_cast<std::size_t>(n));
    // Chunks of about 0.1 s (up to `chunk` seeds), so that a stop signal is seen within a second.
    ChunkPacer pacer(64, 16, chunk);
    for (std::uint64_t i0 = 0, m = 0; i0 < n; i0 += m) {
      progress.checkpoint();
      m = pacer.next(n - i0);
      chunk_seeds.resize(m);
      results.resize(m);
      for (std::uint64_t i = 0; i < m; ++i) chunk_seeds[i] = seeds.at(i0 + i);
      ctx.backend.train_seeds(c, chunk_seeds.data(), static_cast<std::int64_t>(m), ctx.opt.train,
                              ctx.opt.dtype == DType::f32, results.data());
      std::string rows;
      for (std::uint64_t i = 0; i < m; ++i) {
        const tiny::TrainResult& r = results[i];
        const double w = r.weight_on_apple;
        if (!std::isfinite(w)) {
          ++s.not_finite;
        } else {
          s.weight.push(w);
          s.weights.push_back(w);
          s.min = std::min(s.min, w);
          s.max = std::max(s.max, w);
          s.histogram[std::min(kBins - 1, std::max(0, static_cast<int>(w * kBins)))]++;
        }
        if (r.loss < ctx.opt.converged_below) ++s.converged;
        if (per_seed) {
          char line[256];
          std::snprintf(line, sizeof line, "%s,%llu,%.17g,%.17g,%.17g,%.17g\n", name.c_str(),
                        static_cast<unsigned long long>(chunk_seeds[i]), w, r.out_x, r.out_y,
                        r.loss);
          rows += line;
        }
      }
      if (per_seed) per_seed->write(rows);
      pacer.done();
      progress.advance(static_cast<double>(m) * ctx.opt.train.steps);
    }
    const std::vector<double> q = s.weights.empty()
                                      ? std::vector<double>(kProbs.size(), NAN)
                                      : ctx.backend.quantiles(std::move(s.weights), kProbs);
    t.add_row({name, n, s.weight.mean, s.weight.stddev(), s.min, q[0], q[1], q[2], q[3], q[4],
               s.max, static_cast<double>(s.converged) / n});
    hist[name] = s.histogram;
    if (s.not_finite > 0)
      t.notes.push_back(name + ": " + std::to_string(s.not_finite) +
                        " runs ended with a non-finite weight (left out of mean, std, histogram)");
  }
  progress.finish();
  if (per_seed) per_seed->commit();
  t.notes.push_back("converged: fraction of runs with final loss < " +
                    human_number(ctx.opt.converged_below));
  t.extra["histogram"] = {{"bins", kBins}, {"range", {0.0, 1.0}}, {"counts", hist}};
  t.run = training_settings(ctx.opt);
  t.run["seeds"] = seeds.text();
  t.run["converged_below"] = ctx.opt.converged_below;
  t.run["backend"] = ctx.backend.name();
  return {t};
}

}  // namespace attn
