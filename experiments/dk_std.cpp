// dk_std.cpp: section 5's table. For each d_k, N samples of q . k with q, k ~ N(0, I_{d_k});
// std (ddof 0) of q . k and of q . k / sqrt(d_k), with a 95% confidence interval, the theory
// (sqrt(d_k) and 1), the relative error, and the kurtosis (theory 3 + 6 / d_k: q . k is a sum of
// d_k products of independent normals, each with fourth moment 9).
//
// Generators: numpy's stream (the lesson's, exact; kernels/dk_std_numpy.hpp, its pieces decoded
// on the backend's device) or Philox (kernels/dk_std.hpp, on the backend's device). auto: numpy
// up to 1e8 normals.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <sstream>
#include <utility>

#include "experiments/dk_std.hpp"
#include "experiments/registry.hpp"
#include "host/chunks.hpp"
#include "host/exact_state.hpp"
#include "host/format.hpp"
#include "host/plots.hpp"
#include "host/progress.hpp"
#include "kernels/dk_std.hpp"
#include "kernels/dk_std_numpy.hpp"

#include <spdlog/spdlog.h>

namespace attn {
namespace {

constexpr double kAutoNumpyLimit = 1e8;  // normals

}  // namespace

// Bonett (2006), "Approximate confidence interval for standard deviation of nonnormal
// distributions", Comput. Stat. Data Anal. 50: 775-782, eq. (3)-(4), with the sample mean in
// place of the trimmed mean (the samplers keep moments only): with s^2 = M2 / (n - 1), the
// kurtosis g = n M4 / M2^2, c = n / (n - z) and se = c sqrt((g - (n - 3) / n) / (n - 1)), the
// interval for sigma is sqrt(c s^2 exp(-+z se)). Unlike the delta method it stays in (0, inf)
// and allows for heavy tails through g; nullopt below kMinSamplesForInterval samples.
std::optional<std::pair<double, double>> std_interval(const Moments& m, double min_samples) {
  if (m.n < min_samples || m.n < 4 || !(m.m2 > 0)) return std::nullopt;
  const double z = 1.959963984540054, n = m.n;
  // s2 in units of m.scale^2 (moments.hpp), so that it stays in range; the bounds times m.scale.
  const double s2 = m.m2 / (n - 1), c = n / (n - z);
  const double se = c * std::sqrt(std::fmax(m.kurtosis() - (n - 3) / n, 0.0) / (n - 1));
  return std::make_pair(m.scale * std::sqrt(c * s2 * std::exp(-z * se)),
                        m.scale * std::sqrt(c * s2 * std::exp(z * se)));
}

namespace {

// The philox table as chunk-driver work (host/chunks.hpp): chunk i is up to 256 consecutive
// sampler chunks (kernels/dk_std.hpp, about 2^20 normals each up to d_k 2048) of one d_k, fewer
// beyond d_k 4096 so that a chunk holds at most 2^29 normals (with d_k at most 2^16); its state
// is their Moments, merged left to right; the driver folds the chunks' states left to right per
// d_k. So the merge tree is fixed by (N, d_k list) alone. A chunk's sampler chunks are computed
// in backend calls of the backend's size (sampler_chunks_per_call), each after a stop point, so
// that Ctrl-C is honoured within a second even where a whole chunk of 2^29 normals takes longer
// (few or shared cores); a call's parts are per sampler chunk, so how the calls are cut leaves
// the bits.
std::uint64_t sampler_chunk_normals(const dk_std::Plan& p) { return 2 * p.chunk_samples() * p.d_k; }
std::uint64_t sampler_chunks_per_chunk(const dk_std::Plan& p) {
  return std::clamp<std::uint64_t>((std::uint64_t{1} << 29) / sampler_chunk_normals(p), 1, 256);
}
std::uint64_t sampler_chunks_per_call(const dk_std::Plan& p, const Backend& b) {
  return std::max<std::uint64_t>(
      1,
      std::min(b.dk_std_chunks_per_call(), b.dk_std_normals_per_call() / sampler_chunk_normals(p)));
}

bool philox_moments(const RunContext& ctx, const std::vector<std::int64_t>& dks, std::uint64_t n,
                    std::uint64_t seed, std::vector<Moments>& totals) {
  std::vector<dk_std::Plan> plans;
  KeyRanges chunks;  // key: the d_k's index; items: sampler chunks
  for (std::size_t d = 0; d < dks.size(); ++d) {
    plans.push_back(dk_std::make_plan(n, static_cast<std::uint32_t>(dks[d]), seed));
    chunks.add(plans[d].chunks(), sampler_chunks_per_chunk(plans[d]));
  }
  totals.assign(dks.size(), Moments{});
  ChunkJob job;
  job.label = "dk-std";
  job.unit = "normals";
  job.chunks = chunks.chunks();
  job.batch = std::max<std::uint64_t>(1, ctx.backend.dk_std_chunks_per_call() / 256);
  // The samples (dot products, one value each in the Moments) of chunk i.
  const auto samples = [&](std::uint64_t i) {
    const KeyRanges::Range c = chunks.at(i);
    const dk_std::Plan& p = plans[c.key];
    return p.chunk_end(c.first + c.count - 1) - p.chunk_first(c.first);
  };
  job.work = [&](std::uint64_t i) {
    return 2.0 * static_cast<double>(samples(i)) * plans[chunks.at(i).key].d_k;
  };
  std::vector<Moments> parts;
  job.compute = [&](std::uint64_t first, std::uint64_t count) {
    std::vector<ChunkState> states;
    for (std::uint64_t i = first; i < first + count;) {
      // One backend call for the consecutive chunks of one d_k.
      const KeyRanges::Range head = chunks.at(i);
      std::uint64_t j = i, sampler_chunks = 0;
      std::vector<std::uint64_t> sizes;
      for (; j < first + count; ++j) {
        const KeyRanges::Range c = chunks.at(j);
        if (c.key != head.key) break;
        sampler_chunks += c.count;
        sizes.push_back(c.count);
      }
      parts.resize(static_cast<std::size_t>(sampler_chunks));
      const dk_std::Plan& p = plans[head.key];
      const std::uint64_t per_call = sampler_chunks_per_call(p, ctx.backend);
      for (std::uint64_t done = 0; done < sampler_chunks; done += per_call) {
        stop_point();
        ctx.backend.dk_std_chunks(p, head.first + done, std::min(per_call, sampler_chunks - done),
                                  parts.data() + done);
      }
      std::size_t k = 0;
      for (const std::uint64_t size : sizes) {
        Moments m;
        for (std::uint64_t c = 0; c < size; ++c) m = merge(m, parts[k++]);
        states.push_back(exact(m));
      }
      i = j;
    }
    return states;
  };
  // A state read back must be the Moments of exactly its samples, each a q . k of its d_k: a
  // Philox normal is at most 6.66 in magnitude (philox.hpp: the radius sqrt(-2 ln 2^-32)), so
  // |q . k| <= 44.4 d_k (exact_moments checks the moments against that domain, and the rest).
  const auto moments_of = [&](const ChunkState& s, std::uint64_t want, std::size_t d) {
    const double bound = 44.5 * static_cast<double>(dks[d]);
    const Moments m = exact_moments(s, Domain{"a sample of q . k", -bound, bound});
    if (m.n != static_cast<double>(want))
      throw std::invalid_argument("moments of " + std::to_string(static_cast<std::uint64_t>(m.n)) +
                                  " samples, where there are " + std::to_string(want));
    return m;
  };
  job.fold = [&](std::uint64_t i, const ChunkState& s) {
    Moments& t = totals[chunks.at(i).key];
    t = merge(t, exact_moments(s));
  };
  job.check = [&](std::uint64_t i, const ChunkState& s) {
    moments_of(s, samples(i), chunks.at(i).key);
  };
  job.save = [&] {
    ChunkState s = ChunkState::array();
    for (const Moments& m : totals) s.push_back(exact(m));
    return s;
  };
  job.load = [&](const ChunkState& s, std::uint64_t next) {
    if (!s.is_array() || s.size() != totals.size())
      throw std::invalid_argument("not " + std::to_string(totals.size()) + " Moments, one per d_k");
    std::vector<std::uint64_t> want(totals.size(), 0);
    for (std::uint64_t i = 0; i < next; ++i) want[chunks.at(i).key] += samples(i);
    std::vector<Moments> loaded;
    for (std::size_t d = 0; d < totals.size(); ++d) {
      try {
        loaded.push_back(moments_of(s.at(d), want[d], d));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("d_k " + std::to_string(dks[d]) + ": " + e.what());
      }
    }
    totals = std::move(loaded);
  };
  return run_chunks(ctx.opt, job);
}

// The figure: std against d_k with sqrt(d_k), and the relative error with its interval, drawn
// from the table alone. The title names the samples per d_k, the generator and its seed.
std::string figure_script(const Table& t) {
  if (t.rows.empty()) return "";
  double samples = plot::num(t.rows.front()[t.column("samples")]);
  std::string rng = plot::text(t.rows.front()[t.column("rng")]);
  bool intervals = false;
  for (const auto& r : t.rows) {
    if (plot::num(r[t.column("samples")]) != samples) samples = NAN;  // not one count for all
    if (plot::text(r[t.column("rng")]) != rng) rng.clear();
    intervals = intervals || std::isfinite(plot::num(r[t.column("std_ci95_low")]));
  }
  std::string source = std::isfinite(samples) ? plot::count(samples) + " samples of q.k per d_k"
                                              : "the samples of q.k";
  const std::string seed = plot::run_text(t, "seed");
  if (rng == "numpy")
    source += "; numpy default_rng(" + seed + "): one stream, q then k for each d_k in turn";
  else if (rng == "philox")
    source += "; Philox4x32-10 + Box-Muller (float32) normals, seed " + seed;
  const std::string bars = intervals
                               ? "bars: 95% intervals for the std (Bonett 2006)"
                               : "no intervals: the table has none below 1000 samples per d_k";
  // The std axis' range (log 2: the points, their intervals and the theory level 1 inside,
  // half a step from each edge, so that no line lies on the frame).
  double y_lo = 1, y_hi = 1;
  for (const auto& r : t.rows) {
    for (const char* c : {"std", "std_ci95_low", "std_ci95_high", "std_scaled"}) {
      const double v = plot::num(r[t.column(c)]);
      if (std::isfinite(v) && v > 0) y_lo = std::min(y_lo, v), y_hi = std::max(y_hi, v);
    }
  }
  std::ostringstream s;
  s << plot::columns(t, {"d_k", "std", "std_ci95_low", "std_ci95_high", "std_scaled"})
    << "set multiplot layout 1,2 title "
    << plot::title_lines({"std of q.k, q and k with N(0, 1) entries", source, bars}, 160)
    << " noenhanced\n"
    << "set logscale xy 2\nset xlabel 'd_k'\nset ylabel 'std'\nset grid\n"
    << plot::dk_range(t) << "set yrange [" << round_trip(y_lo / 1.4) << ":"
    << round_trip(y_hi * 1.4) << "]\n"
    << "set key top left\nset offsets 0, 0, 0, 0\n"
    << "set title 'grows like sqrt(d_k); dividing by sqrt(d_k) gives 1'\n"
    << "plot sqrt(x) with lines lw 2 lc rgb '#888888' title 'sqrt(d_k) (theory)', \\\n"
    << "     1 with lines dt 2 lc rgb '#888888' title '1 (theory, scaled)', \\\n"
    << "     $D using 1:2:3:4 with yerrorbars pt 7 lc rgb '#1f77b4' title 'std of q.k"
    << (intervals ? " (95% CI)" : "") << "', \\\n"
    << "     $D using 1:5 with points pt 5 lc rgb '#d62728' title 'std of q.k / sqrt(d_k)'\n"
    << "unset logscale y\nset autoscale y\nset ylabel 'std / sqrt(d_k) - 1'\nset key top right\n"
    << "set offsets 0, 0, graph 0.05, graph 0.05\n"
    << "set title 'relative error" << (intervals ? ", with its 95% interval" : "") << "'\n"
    << "plot 0 with lines dt 2 lc rgb '#888888' title 'theory', \\\n"
    << "     $D using 1:($2/sqrt($1)-1):($3/sqrt($1)-1):($4/sqrt($1)-1) with yerrorbars pt 7 "
       "lc rgb '#1f77b4' title 'measured'\n"
    << "unset multiplot\n";
  return s.str();
}

std::vector<Table> run(const RunContext& ctx) {
  const auto& dks = ctx.get<std::vector<std::int64_t>>("--d-k");
  const std::uint64_t n = ctx.get<std::uint64_t>("--samples");
  const std::uint64_t seed = ctx.get<std::uint64_t>("--seed");
  if (n < 2)
    throw std::invalid_argument("--samples 1: a standard deviation needs at least 2 samples");
  const double normals =
      2.0 * static_cast<double>(n) *
      static_cast<double>(std::accumulate(dks.begin(), dks.end(), std::int64_t{0}));
  const bool numpy = dk_std_uses_numpy(ctx.get<std::string>("--rng"), normals);
  if (numpy && normals > 1e9)  // 3 normals decoded per 2 used, about 2.5 ns each per core
    spdlog::warn(
        "warning: --rng numpy decodes numpy's stream for its {:.3g} normals: "
        "about {} of core time, shared by the threads; --rng philox is several times faster",
        normals, human_duration(normals * 1.5 * 2.5e-9));

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
  std::vector<Moments> moments;
  if (numpy) {
    if (ctx.opt.shards > 0)
      throw std::invalid_argument(
          std::string("--shard: ") +
          (ctx.get<std::string>("--rng") == "auto"
               ? "--rng auto takes numpy's stream up to " + human_number(kAutoNumpyLimit) +
                     " normals (this run: " + human_number(normals) + "), which"
               : "--rng numpy") +
          " is one sequential stream and cannot be split; use --rng philox");
    if (!reports_results(ctx.opt)) return {};  // MPI: the stream stays on rank 0
    if (ctx.ranks > 1)
      spdlog::warn(
          "warning: --rng numpy: one sequential stream, drawn on rank 0 alone (the other {} "
          "ranks wait); --rng philox splits across ranks",
          ctx.ranks - 1);
    if (!ctx.opt.checkpoint.empty())
      spdlog::warn("--rng numpy: one sequential stream, not checkpointed (--rng philox is)");
    // Both generators report the normals the table uses (2 N d_k per d_k), whatever they draw.
    Progress progress("dk-std", normals, "normals", ctx.opt.quiet);
    dk_std::NumpyStream stream(seed, ctx.backend.numpy_stream_split());
    for (std::int64_t d : dks)
      moments.push_back(stream.next_block(n, static_cast<std::uint32_t>(d), progress));
    progress.finish();
  } else if (!philox_moments(ctx, dks, n, seed, moments)) {
    return {};  // a shard or another MPI rank: rank 0 / demo merge makes the table
  }
  for (std::size_t i = 0; i < dks.size(); ++i) {
    const std::int64_t d = dks[i];
    const auto d_k = static_cast<std::uint32_t>(d);
    const Moments& m = moments[i];
    const double sd = m.stddev(), root = std::sqrt(static_cast<double>(d_k));
    const auto ci = std_interval(m);
    t.add_row({d, static_cast<std::int64_t>(n), sd, sd / root, ci ? Cell(ci->first) : Cell(),
               ci ? Cell(ci->second) : Cell(), root, 1.0, sd / root - 1.0, m.kurtosis(),
               3.0 + 6.0 / d_k, std::string(numpy ? "numpy" : "philox")});
  }
  if (numpy) {
    t.notes.push_back("rng numpy: one numpy default_rng(" + std::to_string(seed) +
                      ") stream, q then k for each d_k in turn (the lesson's draws, exactly)");
    t.run = {{"generator", "numpy default_rng (SeedSequence, PCG64, 256-layer ziggurat)"},
             {"decoder", ctx.backend.kind() == DeviceKind::cuda
                             ? "pieces of 256 words decoded on the GPU, joined on the host; the "
                               "CPU's bits (glibc's log1p and exp on the device too)"
                             : "pieces decoded on the CPU's threads, joined in order"}};
    if (ctx.ranks > 1) t.run["ranks_used"] = "rank 0 alone (numpy's stream is decoded there)";
  } else {
    t.notes.push_back("rng philox: Philox4x32-10 keyed by seed " + std::to_string(seed) +
                      ", counter (block, d_k, sample); float32 Box-Muller normals");
    t.run = {{"generator", "Philox4x32-10 + Box-Muller (float32), counter (block, d_k, sample)"}};
  }
  t.notes.push_back(
      n >= kMinSamplesForInterval
          ? "std_ci95: 95% interval for the std (Bonett 2006, for non-normal samples)"
          : "std_ci95: none below 1000 samples: at d_k = 1 (kurtosis 9) no interval from the "
            "sample's moments covers the std 93% of the time (Bonett 2006: 89% at 10 samples, "
            "90% at 100)");
  t.run["seed"] = seed;
  t.run["samples"] = n;
  t.run["normals"] = static_cast<std::uint64_t>(normals);
  return {t};
}

}  // namespace

bool dk_std_uses_numpy(const std::string& rng, double normals) {
  return rng == "numpy" || (rng == "auto" && normals <= kAutoNumpyLimit);
}

const Experiment& dk_std_experiment() {
  static const Experiment e{
      .name = "dk-std",
      .summary = "std of q.k grows like sqrt(d_k); scaling restores 1 (section 5)",
      .in_all = true,
      .runs = Runs::backend,
      .params = {param::int_list("--d-k", "2,64,512", "d_k values", 1, 1 << 16),
                 param::count("--samples", "10000", "Samples per d_k, e.g. 10000 or 1e9"),
                 param::choice(
                     "--rng", "auto",
                     "numpy (the lesson's stream), philox (counter-based), or auto (numpy up to "
                     "1e8 normals)",
                     {"auto", "numpy", "philox"}),
                 param::u64("--seed", "0", "Seed of the generator")},
      .figures = {{"dk-std", true, figure_script}},
      .examples =
          {"demo --table dk-std                    the sqrt(d_k) table, the lesson's numpy "
           "stream",
           "demo --table dk-std --d-k 2,64,512 --samples 1e9 --rng philox   a GPU-sized run "
           "(the progress line says how long it will take here)"},
      .run = run,
      .chunked = true};
  return e;
}

}  // namespace attn
