// training_sweep.cpp: the training comparison over many seeds ("attention-map variability").
// Per config: the distribution of sweet's weight on apple (mean, std, quantiles, a 20-bin
// histogram on [0, 1]) and the fraction of runs whose loss ended below --converged-below.
// Seeds go to the backend in chunks; per-seed results are folded in seed order, and only the
// weights (8 bytes per seed, for exact quantiles) are kept, unless --per-seed asks for rows.
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "experiments/registry.hpp"
#include "experiments/training_common.hpp"
#include "host/chunks.hpp"
#include "host/output.hpp"
#include "host/plots.hpp"

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

// The figure: a histogram of the weight on apple per config, one panel each.
std::string histogram_script(const Table& t) {
  if (!t.extra.contains("histogram")) return "";
  const auto& h = t.extra["histogram"];
  const int bins = h["bins"].get<int>();
  std::vector<std::string> names;
  std::ostringstream s;
  s << "$D << EOD\n";
  for (int b = 0; b < bins; ++b) {
    s << (b + 0.5) / bins;
    for (const auto& [name, counts] : h["counts"].items()) {
      double total = 0;
      for (const auto& c : counts) total += c.get<double>();
      s << " " << (total > 0 ? counts[b].get<double>() / total : 0.0);
    }
    s << "\n";
  }
  s << "EOD\n";
  for (const auto& [name, counts] : h["counts"].items()) names.push_back(name);
  s << "set multiplot layout 1," << names.size()
    << " title 'sweet''s weight on apple across seeds (20 bins on [0, 1])'\n"
    << "set xlabel 'weight on apple'\nset ylabel 'fraction of seeds'\nset xrange [0:1]\n"
    << "set yrange [0:*]\nset grid\nset style fill solid 0.6\nset boxwidth " << 1.0 / bins << "\n";
  for (std::size_t i = 0; i < names.size(); ++i)
    s << "set title " << plot::quote(names[i]) << "\nplot $D using 1:" << i + 2
      << " with boxes lc rgb '#1f77b4' notitle\n";
  s << "unset multiplot\n";
  return s.str();
}

// Chunk-driver work (host/chunks.hpp): chunk i is kSeedsPerChunk consecutive seeds of one
// config; its state is their Summary (moments pushed in seed order, extremes, histogram, counts,
// the finite weights for exact quantiles, and the --per-seed rows); the driver folds the states
// in chunk order, so every split gives the same bits.
constexpr std::uint64_t kSeedsPerChunk = 4096;

struct SeedChunk {
  std::size_t config;
  std::uint64_t first, count;  // seeds.at(first .. first + count - 1)
};

ChunkState chunk_state(const Summary& s, const std::string& rows, bool with_rows) {
  ChunkState j = {
      {"weight", exact(s.weight)},         {"min", exact(s.min)},      {"max", exact(s.max)},
      {"histogram", s.histogram},          {"converged", s.converged}, {"not_finite", s.not_finite},
      {"weights", exact_vector(s.weights)}};
  if (with_rows) j["rows"] = rows;
  return j;
}

void fold_state(Summary& s, const ChunkState& j) {
  s.weight = merge(s.weight, exact_moments(j.at("weight")));
  s.min = std::min(s.min, exact_double(j.at("min")));
  s.max = std::max(s.max, exact_double(j.at("max")));
  const auto h = j.at("histogram").get<std::vector<std::int64_t>>();
  for (int b = 0; b < kBins; ++b) s.histogram[b] += h.at(b);
  s.converged += j.at("converged").get<std::int64_t>();
  s.not_finite += j.at("not_finite").get<std::int64_t>();
  append_exact_vector(j.at("weights").get<std::string>(), s.weights);
}

std::vector<Table> run(const RunContext& ctx) {
  const auto& configs = ctx.get<std::vector<std::string>>("--configs");
  const auto& seeds = ctx.get<SeedSet>("--seeds");
  const std::uint64_t n = seeds.size();
  const tiny::TrainOptions train = train_options(ctx.settings);
  const double converged_below = ctx.get<double>("--converged-below");
  const std::string& per_seed_file = ctx.get<std::string>("--per-seed");
  if (!per_seed_file.empty() && !ctx.opt.checkpoint.empty())
    throw std::invalid_argument(
        "--per-seed with --checkpoint: the rows written so far are not checkpointed; drop one");

  std::unique_ptr<AtomicFile> per_seed;
  if (!per_seed_file.empty() && reports_results(ctx.opt)) {
    per_seed = std::make_unique<AtomicFile>(per_seed_file, ctx.opt.force);
    per_seed->write("config,seed,weight_on_apple,out_x,out_y,loss\n");
  }
  Table t;
  t.name = "training-sweep";
  t.title = "sweet's weight on apple across seeds: spread when W_V trains, pinned when fixed";
  t.columns = {{"config"},      {"seeds"},       {"mean", "%.4f"}, {"std", "%.4f"},
               {"min", "%.4f"}, {"p05", "%.4f"}, {"p25", "%.4f"},  {"p50", "%.4f"},
               {"p75", "%.4f"}, {"p95", "%.4f"}, {"max", "%.4f"},  {"converged", "%.4f"}};

  std::vector<tiny::Config> cs;
  std::vector<SeedChunk> chunks;
  for (std::size_t c = 0; c < configs.size(); ++c) {
    cs.push_back(config_from_name(configs[c]));
    for (std::uint64_t i0 = 0; i0 < n; i0 += kSeedsPerChunk)
      chunks.push_back({c, i0, std::min(kSeedsPerChunk, n - i0)});
  }
  std::vector<Summary> summaries(configs.size());
  if (reports_results(ctx.opt))  // the process that folds keeps every weight: 8 bytes a seed
    for (Summary& s : summaries) s.weights.reserve(static_cast<std::size_t>(n));
  std::vector<std::uint64_t> chunk_seeds;
  std::vector<tiny::TrainResult> results;
  ChunkJob job;
  job.label = "training-sweep";
  job.unit = "model-steps";
  job.chunks = chunks.size();
  job.batch = std::max<std::uint64_t>(1, ctx.backend.seeds_per_call() / kSeedsPerChunk);
  job.work = [&](std::uint64_t i) { return static_cast<double>(chunks[i].count) * train.steps; };
  job.compute = [&](std::uint64_t first, std::uint64_t count) {
    std::vector<ChunkState> states;
    for (std::uint64_t i = first; i < first + count;) {
      // One backend call for the consecutive chunks of one config.
      std::uint64_t j = i;
      chunk_seeds.clear();
      for (; j < first + count && chunks[j].config == chunks[i].config; ++j)
        for (std::uint64_t k = 0; k < chunks[j].count; ++k)
          chunk_seeds.push_back(seeds.at(chunks[j].first + k));
      results.resize(chunk_seeds.size());
      ctx.backend.train_seeds(cs[chunks[i].config], chunk_seeds.data(),
                              static_cast<std::int64_t>(chunk_seeds.size()), train,
                              precision(ctx.settings), results.data());
      std::size_t r = 0;
      for (; i < j; ++i) {
        const std::string& name = configs[chunks[i].config];
        Summary s;
        std::string rows;
        for (std::uint64_t k = 0; k < chunks[i].count; ++k, ++r) {
          const tiny::TrainResult& res = results[r];
          const double w = res.weight_on_apple;
          if (!std::isfinite(w)) {
            ++s.not_finite;
          } else {
            s.weight.push(w);
            s.weights.push_back(w);
            s.min = std::min(s.min, w);
            s.max = std::max(s.max, w);
            s.histogram[std::min(kBins - 1, std::max(0, static_cast<int>(w * kBins)))]++;
          }
          if (res.loss < converged_below) ++s.converged;
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
  };
  job.fold = [&](std::uint64_t i, const ChunkState& s) {
    fold_state(summaries[chunks[i].config], s);
    if (per_seed) per_seed->write(s.at("rows").get<std::string>());
  };
  job.save = [&] {
    ChunkState j = ChunkState::array();
    for (const Summary& s : summaries) j.push_back(chunk_state(s, "", false));
    return j;
  };
  job.load = [&](const ChunkState& j) {
    for (std::size_t c = 0; c < summaries.size(); ++c) {
      summaries[c] = Summary{};
      summaries[c].weights.reserve(static_cast<std::size_t>(n));
      fold_state(summaries[c], j.at(c));
    }
  };
  if (!run_chunks(ctx.opt, job)) return {};  // a shard or another MPI rank

  nlohmann::json hist = nlohmann::json::object();
  for (std::size_t c = 0; c < configs.size(); ++c) {
    const std::string& name = configs[c];
    Summary& s = summaries[c];
    const std::vector<double> q = s.weights.empty()
                                      ? std::vector<double>(kProbs.size(), NAN)
                                      : ctx.backend.quantiles(std::move(s.weights), kProbs);
    t.add_row({name, static_cast<std::int64_t>(n), s.weight.mean, s.weight.stddev(), s.min, q[0],
               q[1], q[2], q[3], q[4], s.max, static_cast<double>(s.converged) / n});
    hist[name] = s.histogram;
    if (s.not_finite > 0)
      t.notes.push_back(name + ": " + std::to_string(s.not_finite) +
                        " runs ended with a non-finite weight (left out of mean, std, histogram)");
  }
  if (per_seed) per_seed->commit();
  t.notes.push_back("converged: fraction of runs with final loss < " +
                    std::to_string(converged_below));
  t.extra["histogram"] = {{"bins", kBins}, {"range", {0.0, 1.0}}, {"counts", hist}};
  t.run = training_settings(ctx.settings);
  t.run["seeds"] = seeds.text();
  t.run["converged_below"] = converged_below;
  return {t};
}

}  // namespace

const Experiment& training_sweep_experiment() {
  std::vector<Param> params = training_params("all-random,qk-random", "0:100000");
  params.push_back(param::real("--converged-below", "1e-4",
                               "A run converged if its loss ends below X", 0, 1e300, true));
  params.push_back(param::output_file("--per-seed", "Also write one CSV row per run to FILE"));
  static const Experiment e{
      "training-sweep",
      "the training comparison over many seeds (beyond)",
      false,
      Runs::backend,
      params,
      {{"training-sweep", true, histogram_script}},
      {"demo --table training-sweep --seeds 0:1000000 --grad analytic --per-seed runs.csv"},
      run,
      true};
  return e;
}

}  // namespace attn
