// dk_std.cpp: section 5's table. For each d_k, N samples of q . k with q, k ~ N(0, I_{d_k});
// std (ddof 0) of q . k and of q . k / sqrt(d_k), with a 95% confidence interval, the theory
// (sqrt(d_k) and 1), the relative error, and the kurtosis (theory 3 + 6 / d_k: q . k is a sum of
// d_k products of independent normals, each with fourth moment 9).
//
// Generators: numpy's stream (the lesson's, exact; kernels/dkstd_numpy.hpp, on the CPU's
// threads) or
// Philox (kernels/dkstd.hpp, on the backend's device). auto: numpy up to 1e8 normals.
#include <cmath>
#include <numeric>

#include "dkstd.hpp"
#include "dkstd_numpy.hpp"
#include "experiments/registry.hpp"
#include "host/progress.hpp"

#include <spdlog/spdlog.h>

namespace attn {
namespace {

constexpr double kAutoNumpyLimit = 1e8;  // normals

// 95% interval for the std: std +- 1.96 se, with the delta method
// se(std) = se(var) / (2 std) and se(var) = sqrt((m4 - var^2) / n) (no normality assumed).
void confidence_interval(const Moments& m, double& lo, double& hi) {
  const double var = m.variance(), sd = std::sqrt(var);
  const double se_var = std::sqrt(std::fmax(m.m4 / m.n - var * var, 0.0) / m.n);
  const double half = 1.959963984540054 * se_var / (2 * sd);
  lo = sd - half;
  hi = sd + half;
}

Moments philox_moments(const Backend& b, std::uint64_t samples, std::uint32_t d_k,
                       std::uint64_t seed, Monitor& monitor) {
  const dkstd::Plan plan = dkstd::make_plan(samples, d_k, seed);
  const std::uint64_t wave = b.kind() == DeviceKind::cuda ? 65536 : 64;
  std::vector<Moments> parts(static_cast<std::size_t>(std::min(wave, plan.chunks())));
  Moments total;
  for (std::uint64_t c0 = 0; c0 < plan.chunks(); c0 += wave) {
    monitor.checkpoint();
    const std::uint64_t count = std::min(wave, plan.chunks() - c0);
    b.dkstd_chunks(plan, c0, count, parts.data());
    for (std::uint64_t i = 0; i < count; ++i) total = merge(total, parts[i]);
    const std::uint64_t done =
        std::min(samples, (c0 + count) * plan.chunk_samples()) - c0 * plan.chunk_samples();
    monitor.advance(2.0 * static_cast<double>(done) * d_k);
  }
  return total;
}

}  // namespace

bool dkstd_uses_numpy(RngChoice rng, double normals) {
  return rng == RngChoice::numpy || (rng == RngChoice::auto_ && normals <= kAutoNumpyLimit);
}

std::vector<Table> run_dk_std(const RunContext& ctx) {
  const std::vector<std::int64_t> dks = ctx.opt.dk.value_or(std::vector<std::int64_t>{2, 64, 512});
  const std::uint64_t n = ctx.opt.samples.value_or(10000);
  const double normals =
      2.0 * static_cast<double>(n) *
      static_cast<double>(std::accumulate(dks.begin(), dks.end(), std::int64_t{0}));
  const bool numpy = dkstd_uses_numpy(ctx.opt.rng, normals);
  if (numpy && normals > 1e9)  // 3 normals decoded per 2 used, about 2.5 ns each per core
    spdlog::warn(
        "warning: --rng numpy decodes numpy's stream for its {:.3g} normals: "
        "about {:.0f} core-minutes, shared by the threads; --rng philox is several times faster",
        normals, normals * 1.5 * 2.5e-9 / 60);

  Table t;
  t.name = "dk-std";
  t.title = "std of q.k for q, k ~ N(0, I): it grows like sqrt(d_k); dividing by sqrt(d_k) gives 1";
  t.columns = {{"d_k"},
               {"samples"},
               {"std", "%.2f"},
               {"std_scaled", "%.2f"},
               {"std_ci95_low", "%.4f"},
               {"std_ci95_high", "%.4f"},
               {"theory", "%.4f"},
               {"theory_scaled", "%.0f"},
               {"rel_error", "%+.1e"},
               {"kurtosis", "%.3f"},
               {"kurtosis_theory", "%.3f"},
               {"rng"}};
  // Both generators report the normals the table uses (2 N d_k per d_k), whatever they draw.
  Progress progress("dk-std", normals, "normals", ctx.opt.quiet);
  dkstd::NumpyStream stream(ctx.opt.seed);
  for (std::int64_t d : dks) {
    const auto d_k = static_cast<std::uint32_t>(d);
    const Moments m = numpy ? stream.next_block(n, d_k, progress)
                            : philox_moments(ctx.backend, n, d_k, ctx.opt.seed, progress);
    const double sd = m.stddev(), root = std::sqrt(static_cast<double>(d_k));
    double lo, hi;
    confidence_interval(m, lo, hi);
    t.add_row({d, static_cast<std::int64_t>(n), sd, sd / root, lo, hi, root, 1.0, sd / root - 1.0,
               m.kurtosis(), 3.0 + 6.0 / d_k, std::string(numpy ? "numpy" : "philox")});
  }
  progress.finish();
  if (numpy) {
    t.notes.push_back("rng numpy: one numpy default_rng(" + std::to_string(ctx.opt.seed) +
                      ") stream, q then k for each d_k in turn (the lesson's draws, exactly)");
    t.run = {{"generator", "numpy default_rng (SeedSequence, PCG64, 256-layer ziggurat)"},
             {"backend", "cpu"},
             {"why_cpu", "numpy's stream is decoded on the host's threads in every build"}};
  } else {
    t.notes.push_back("rng philox: Philox4x32-10 keyed by seed " + std::to_string(ctx.opt.seed) +
                      ", counter (block, d_k, sample); float32 Box-Muller normals");
    t.run = {{"generator", "Philox4x32-10 + Box-Muller (float32), counter (block, d_k, sample)"},
             {"backend", ctx.backend.name()}};
  }
  t.notes.push_back("std_ci95: 95% interval for the std (delta method, no normality assumed)");
  t.run["seed"] = ctx.opt.seed;
  t.run["samples"] = n;
  t.run["normals"] = static_cast<std::uint64_t>(normals);
  return {t};
}

}  // namespace attn
