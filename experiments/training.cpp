// training.cpp: section 4's "Deeper" table: train W_Q and W_K (W_V fixed), or all three, from
// identity or random starts; every run reaches the target output, with different attention.
// Identity starts do not depend on the seed and run once.
#include <cmath>

#include "experiments/registry.hpp"
#include "experiments/training_common.hpp"
#include "host/format.hpp"
#include "host/progress.hpp"

namespace attn {

namespace {

// The table keeps one row per run in memory (its cells, about 400 bytes) and the run's result
// (32 bytes): at most 2^20 seeds, about 0.45 GB.
constexpr std::uint64_t kMaxSeeds = std::uint64_t{1} << 20;
constexpr double kBytesPerSeed = 440;
std::string too_many_seeds(std::uint64_t n) {
  return "--table training keeps one row per seed in memory, about " +
         display_real(static_cast<double>(n) * kBytesPerSeed / 1e9, "%.3g") +
         " GB for these; it takes at most 1048576 seeds (about 0.46 GB). --table training-sweep "
         "summarizes any number in bounded memory";
}

std::vector<Table> run(const RunContext& ctx) {
  const auto& configs = ctx.get<std::vector<std::string>>("--configs");
  const auto& seeds = ctx.get<SeedSet>("--seeds");
  Table t;
  t.name = "training";
  t.title = "same loss, different attention: sweet's weight on apple after training";
  t.columns = {{"config"},        {"seed"},          {"weight_on_apple", "%.2f"},
               {"out_x", "%.3f"}, {"out_y", "%.3f"}, {"loss", "%.4f"}};
  // Every run of every config in one list, so that the table's handful of runs share the
  // threads (the lesson's six take about a millisecond each).
  std::vector<tiny::Config> run_config;
  std::vector<std::uint64_t> run_seed;
  for (const std::string& name : configs) {
    const tiny::Config c = config_from_name(name);
    const std::uint64_t n = config_uses_seed(c) ? seeds.size() : 1;
    for (std::uint64_t i = 0; i < n; ++i) {
      run_config.push_back(c);
      run_seed.push_back(config_uses_seed(c) ? seeds.at(i) : 0);
    }
  }
  std::vector<tiny::TrainResult> r(run_seed.size());
  // In chunks of about 0.1 s, so that a stop signal is seen within a second.
  ChunkPacer pacer(16, 16, std::uint64_t{1} << 20);
  for (std::uint64_t i0 = 0; i0 < r.size();) {
    stop_point();
    const std::uint64_t m = pacer.next(r.size() - i0);
    ctx.backend.train_runs(run_config.data() + i0, run_seed.data() + i0,
                           static_cast<std::int64_t>(m), train_options(ctx.settings),
                           precision(ctx.settings), r.data() + i0);
    pacer.done();
    i0 += m;
  }
  std::size_t i = 0;  // config by config, in the list's order
  for (const std::string& name : configs) {
    const tiny::Config c = config_from_name(name);
    const std::size_t n = config_uses_seed(c) ? seeds.size() : 1;
    std::uint64_t diverged = 0;
    for (std::size_t j = i; j < i + n; ++j)
      diverged += !std::isfinite(r[j].weight_on_apple) || !std::isfinite(r[j].loss);
    if (diverged > 0)
      t.notes.push_back(name + ": " + std::to_string(diverged) + " of " + std::to_string(n) +
                        " runs diverged (non-finite weight or loss; shown as they ended)");
    for (std::size_t j = i; j < i + n; ++j) {
      const Cell seed = config_uses_seed(c) ? Cell(run_seed[j]) : Cell();
      t.add_row({name, seed, r[j].weight_on_apple, r[j].out_x, r[j].out_y, r[j].loss});
    }
    i += n;
  }
  t.notes.push_back("qk-*: W_Q and W_K trained, W_V = I; all-*: all three trained");
  t.run = training_settings(ctx.settings);
  t.run["seeds"] = seeds.text();
  return {t};
}

}  // namespace

const Experiment& training_experiment() {
  static const Experiment e{
      .name = "training",
      .summary = "train W_Q, W_K, W_V: same loss, different attention (section 4)",
      .in_all = true,
      .runs = Runs::backend,
      .params = training_params("qk-identity,all-identity,all-random,qk-random", "0,1", kMaxSeeds,
                                too_many_seeds),
      .examples = {"demo --table training --grad analytic --format csv"},
      .run = run};
  return e;
}

}  // namespace attn
