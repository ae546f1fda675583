// softmax_saturation.cpp: beyond the lesson, the consequence section 5 asserts. For each d_k,
// rows of a query and `keys` keys with N(0, 1) entries: mean largest weight, mean entropy and
// mean Frobenius norm of the softmax Jacobian, without and with the 1/sqrt(d_k) scaling.
// Without it, the scores' std grows like sqrt(d_k): max weight -> 1, entropy -> 0 and the
// Jacobian (which carries every gradient through softmax) -> 0.
#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

#include "experiments/registry.hpp"
#include "host/chunks.hpp"
#include "host/exact_state.hpp"
#include "host/format.hpp"
#include "host/plots.hpp"
#include "host/progress.hpp"
#include "saturation.hpp"

namespace attn {

namespace {

// The figure: the three measures against d_k, unscaled and scaled, with the value equal
// scores give (dotted), drawn from the table alone. The title names the rows each mean is over,
// their generator and seed, and the rows left out.
std::string figure_script(const Table& t) {
  if (t.rows.empty()) return "";
  const auto& first = t.rows.front();
  const double keys = plot::num(first[t.column("keys")]);
  if (!(keys >= 1)) return "";
  double samples = plot::num(first[t.column("samples")]), non_finite = 0;
  for (const auto& r : t.rows) {
    non_finite += plot::num(r[t.column("non_finite")]);
    if (plot::num(r[t.column("samples")]) != samples) samples = NAN;  // not one count for all
  }
  std::string rows = "each point: the mean over " +
                     (std::isfinite(samples) ? plot::count(samples, "row", "rows") : "the rows") +
                     " per d_k (a query and its " +
                     human_count(static_cast<std::uint64_t>(keys), "key", "keys") +
                     ", N(0, 1) entries";
  if (!plot::run_text(t, "generator").empty())
    rows +=
        ": " +
        plot::run_text(t, "generator").substr(0, plot::run_text(t, "generator").find(", counter"));
  if (!plot::run_text(t, "seed").empty()) rows += ", seed " + plot::run_text(t, "seed");
  rows += ")";
  if (non_finite > 0)
    rows += "; " + plot::count(non_finite, "row", "rows") + " with a non-finite measure left out";
  // Equal scores: every weight 1/n, entropy ln n, ||J||_F = sqrt(n - 1) / n.
  const std::string uniform = round_trip(1 / keys), entropy = round_trip(std::log(keys)),
                    jacobian = round_trip(std::sqrt(keys - 1) / keys);
  std::ostringstream s;
  s << plot::columns(t, {"d_k", "max_weight_unscaled", "max_weight_scaled", "entropy_unscaled",
                         "entropy_scaled", "jacobian_norm_unscaled", "jacobian_norm_scaled"})
    << "set multiplot layout 1,3 title "
    << plot::title_lines(
           {t.title, rows,
            "dotted: equal scores (every weight 1/" + plot::count(keys) + "): max weight " +
                human_number(1 / keys) + ", entropy ln " + plot::count(keys) + " = " +
                human_number(std::log(keys)) + ", ||J||_F = sqrt(" + plot::count(keys - 1) + ")/" +
                plot::count(keys) + " = " + human_number(std::sqrt(keys - 1) / keys)},
           160)
    << " noenhanced\n"
    << "set logscale x 2\nset xlabel 'd_k'\nset grid\n"
    << plot::dk_range(t)
    << "set ylabel 'mean max weight'\nset yrange [0:1.05]\nset key bottom right\n"
    << "plot $D using 1:2 with linespoints pt 7 title 'unscaled', $D using 1:3 with linespoints "
       "pt 5 title 'scaled', "
    << uniform << " with lines dt 3 lw 2 lc rgb '#888888' title 'equal scores'\n"
    << "set ylabel 'mean entropy (nats)'\nset yrange [0:*]\nset key bottom left\n"
    << "plot $D using 1:4 with linespoints pt 7 title 'unscaled', $D using 1:5 with linespoints "
       "pt 5 title 'scaled', "
    << entropy << " with lines dt 3 lw 2 lc rgb '#888888' title 'equal scores'\n"
    << "set ylabel 'mean ||J||_F of softmax'\n"
    << "plot $D using 1:6 with linespoints pt 7 title 'unscaled', $D using 1:7 with linespoints "
       "pt 5 title 'scaled', "
    << jacobian << " with lines dt 3 lw 2 lc rgb '#888888' title 'equal scores'\n"
    << "unset multiplot\n";
  return s.str();
}

// The domain of each measure of a row of `keys` weights (saturation.hpp's order, unscaled then
// scaled): the largest weight in [1/keys, 1], the entropy in [0, ln keys], ||J||_F of the
// softmax Jacobian J = diag(p) - p p^T in [0, 1] (J is positive semidefinite with trace
// 1 - sum p^2 < 1, and its Frobenius norm is at most its trace); in double, each within 1e-9.
Domain measure_domain(int k, int keys) {
  switch (k % 3) {
    case 0:
      return {"a largest weight", 1.0 / keys, 1, 1e-9};
    case 1:
      return {"an entropy", 0, std::log(static_cast<double>(keys)), 1e-9};
    default:
      return {"a softmax Jacobian norm", 0, 1, 1e-9};
  }
}

// A state read back: the kStats Moments of the finite rows (each measure pushed once per such
// row, so all of one count, each in its domain) and the count of the others, together `rows`
// rows; from s[at..]. Throws std::invalid_argument saying what is wrong.
using SaturationStats = std::pair<std::array<Moments, saturation::kStats>, std::int64_t>;
SaturationStats saturation_stats(const ChunkState& s, std::size_t at, std::uint64_t rows,
                                 int keys) {
  SaturationStats x;
  for (int k = 0; k < saturation::kStats; ++k)
    x.first[k] = exact_moments(s.at(at + k), measure_domain(k, keys));
  x.second = exact_count(s.at(at + saturation::kStats), "non_finite");
  for (int k = 1; k < saturation::kStats; ++k)
    if (x.first[k].n != x.first[0].n)
      throw std::invalid_argument("its measures count different rows");
  if (x.first[0].n + static_cast<double>(x.second) != static_cast<double>(rows))
    throw std::invalid_argument(std::to_string(static_cast<std::uint64_t>(x.first[0].n)) +
                                " finite rows and " + std::to_string(x.second) +
                                " non-finite ones, where there are " + std::to_string(rows));
  return x;
}

// One softmax-saturation run: its settings, read once, its chunks, and the measures' moments
// folded so far. Chunk-driver work (host/chunks.hpp): chunk i is a run of rows of one d_k, about
// 2^22 normals of q and keys (so memory stays bounded); its state is the six Moments of its rows,
// pushed in row order; the driver folds the chunks' states in chunk order.
struct Saturation {
  explicit Saturation(const RunContext& c)
      : ctx(c),
        dks(ctx.get<std::vector<std::int64_t>>("--d-k")),
        rows(ctx.get<std::uint64_t>("--samples")),
        keys(static_cast<int>(ctx.get<std::int64_t>("--keys"))),
        seed(ctx.get<std::uint64_t>("--seed")),
        m(dks.size()),
        non_finite(dks.size(), 0) {}

  const RunContext& ctx;
  const std::vector<std::int64_t>& dks;
  const std::uint64_t rows;
  const int keys;
  const std::uint64_t seed;
  std::vector<saturation::Params> params;  // per d_k
  KeyRanges chunks;                        // key: the d_k's index; items: rows
  std::vector<std::array<Moments, saturation::kStats>> m;
  // Rows with a non-finite measure, per d_k: counted and left out of the means.
  std::vector<std::int64_t> non_finite;

  // A row (its query and keys) is computed whole: bounded, so that a chunk's memory and time
  // are. Throws std::invalid_argument for a larger row.
  void check_rows() const {
    constexpr std::uint64_t kMaxRowNormals = std::uint64_t{1} << 24;
    for (const std::int64_t d : dks)
      if (static_cast<std::uint64_t>(keys + 1) * static_cast<std::uint64_t>(d) > kMaxRowNormals)
        throw std::invalid_argument("--keys " + std::to_string(keys) + " with --d-k " +
                                    std::to_string(d) + ": a row of (keys + 1) d_k = " +
                                    std::to_string(static_cast<std::uint64_t>(keys + 1) * d) +
                                    " normals; at most 2^24 (16777216)");
  }

  // Each d_k's parameters and chunks.
  void size_chunks() {
    for (std::size_t d = 0; d < dks.size(); ++d) {
      params.push_back({seed, static_cast<std::uint32_t>(dks[d]), keys});
      chunks.add(rows, std::max<std::uint64_t>(
                           1, (std::uint64_t{1} << 22) /
                                  static_cast<std::uint64_t>(params[d].normals_per_row())));
    }
  }

  // Chunk c's state: the Moments of its rows' six measures (the finite rows) and the count of
  // the others. stats: the rows' measures, a buffer kept between chunks.
  ChunkState measure_chunk(const KeyRanges::Range& c, std::vector<double>& stats) const {
    stats.resize(static_cast<std::size_t>(c.count) * saturation::kStats);
    // The chunk's rows in backend calls of about 2^20 normals, each after a stop point, so
    // that Ctrl-C is honoured within a second on shared cores too (Signals.SoftmaxSaturation),
    // where a whole chunk of 2^22 normals would take longer. Rows are independent and their
    // Moments are pushed below, so the parts leave the bits.
    const std::uint64_t per_call =
        std::max<std::uint64_t>(1, (std::uint64_t{1} << 20) / params[c.key].normals_per_row());
    for (std::uint64_t done = 0; done < c.count; done += per_call) {
      stop_point();
      ctx.backend.saturation_rows(params[c.key], c.first + done,
                                  static_cast<std::int64_t>(std::min(per_call, c.count - done)),
                                  stats.data() + done * saturation::kStats);
    }
    Moments part[saturation::kStats];
    std::int64_t bad = 0;
    for (std::uint64_t r = 0; r < c.count; ++r) {
      const double* row = &stats[r * saturation::kStats];
      bool finite = true;
      for (int k = 0; k < saturation::kStats; ++k) finite = finite && std::isfinite(row[k]);
      if (!finite) {
        ++bad;
        continue;
      }
      for (int k = 0; k < saturation::kStats; ++k) part[k].push(row[k]);
    }
    ChunkState s = ChunkState::array();
    for (const Moments& p : part) s.push_back(exact(p));
    s.push_back(bad);
    return s;
  }

  // The moments of the first `next` chunks, from a checkpoint's state s.
  void load(const ChunkState& s, std::uint64_t next) {
    if (!s.is_array() || s.size() != m.size() * (saturation::kStats + 1))
      throw std::invalid_argument("not " + std::to_string(saturation::kStats) +
                                  " Moments and a count for each d_k");
    std::vector<std::uint64_t> rows_done(m.size(), 0);
    for (std::uint64_t i = 0; i < next; ++i) rows_done[chunks.at(i).key] += chunks.at(i).count;
    std::vector<SaturationStats> loaded;
    for (std::size_t d = 0; d < m.size(); ++d) {
      try {
        loaded.push_back(saturation_stats(s, d * (saturation::kStats + 1), rows_done[d], keys));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("d_k " + std::to_string(dks[d]) + ": " + e.what());
      }
    }
    for (std::size_t d = 0; d < m.size(); ++d) {
      m[d] = loaded[d].first;
      non_finite[d] = loaded[d].second;
    }
  }
};

// The table's name, title and columns.
Table empty_table(int keys) {
  Table t;
  t.name = "softmax-saturation";
  t.title = "softmax of q.k over " + human_count(keys, "key", "keys") +
            ", unscaled vs / sqrt(d_k): max weight, entropy (nats), ||J||_F";
  t.columns = {{"d_k"},
               {"keys"},
               {"samples"},
               {"non_finite"},
               {"max_weight_unscaled", "%.4f"},
               {"max_weight_scaled", "%.4f"},
               {"entropy_unscaled", "%.4f"},
               {"entropy_scaled", "%.4f"},
               {"jacobian_norm_unscaled", "%.4f"},
               {"jacobian_norm_scaled", "%.4f"}};
  return t;
}

// The table's rows (one per d_k), notes and run record, from the folded moments.
void summarize(const Saturation& w, Table& t) {
  const std::vector<std::int64_t>& dks = w.dks;
  const std::vector<std::array<Moments, saturation::kStats>>& m = w.m;
  const std::vector<std::int64_t>& non_finite = w.non_finite;
  const int keys = w.keys;
  const std::uint64_t rows = w.rows, seed = w.seed;
  bool any_non_finite = false;
  for (std::size_t d = 0; d < dks.size(); ++d) {
    const auto& x = m[d];
    auto mean = [&](int k) { return x[k].n > 0 ? Cell(x[k].mean) : Cell(); };
    t.add_row({dks[d], std::int64_t{keys}, static_cast<std::int64_t>(rows), non_finite[d], mean(0),
               mean(3), mean(1), mean(4), mean(2), mean(5)});
    any_non_finite = any_non_finite || non_finite[d] > 0;
    if (x[0].n == 0)
      t.notes.push_back("d_k " + std::to_string(dks[d]) +
                        ": every row had a non-finite measure: no means");
  }
  if (any_non_finite)
    t.notes.push_back(
        "non_finite: rows with a non-finite max weight, entropy or ||J||_F, counted and left out "
        "of the means (which are over samples - non_finite rows)");
  const double n = keys;
  t.notes.push_back("equal scores would give max weight 1/n = " + human_number(1 / n) +
                    ", entropy ln n = " + human_number(std::log(n)) +
                    ", ||J||_F = sqrt(n-1)/n = " + human_number(std::sqrt(n - 1) / n));
  t.run = {{"generator", "Philox4x32-10 + Box-Muller (float32), counter (block, 2^31 | d_k, row)"},
           {"seed", seed},
           {"samples", rows},
           {"keys", keys}};
}

std::vector<Table> run(const RunContext& ctx) {
  Saturation w(ctx);
  Table t = empty_table(w.keys);
  w.check_rows();
  w.size_chunks();
  std::vector<double> stats;
  ChunkJob job;
  job.label = "softmax-saturation";
  job.unit = "normals";
  job.chunks = w.chunks.chunks();
  job.work = [&](std::uint64_t i) {
    const KeyRanges::Range c = w.chunks.at(i);
    return static_cast<double>(c.count) * w.params[c.key].normals_per_row();
  };
  job.compute = [&](std::uint64_t first, std::uint64_t count) {
    std::vector<ChunkState> states;
    for (std::uint64_t i = first; i < first + count; ++i)
      states.push_back(w.measure_chunk(w.chunks.at(i), stats));
    return states;
  };
  job.fold = [&](std::uint64_t i, const ChunkState& s) {
    const std::size_t d = w.chunks.at(i).key;
    for (int k = 0; k < saturation::kStats; ++k)
      w.m[d][k] = merge(w.m[d][k], exact_moments(s.at(k)));
    w.non_finite[d] += s.at(saturation::kStats).get<std::int64_t>();
  };
  job.check = [&](std::uint64_t i, const ChunkState& s) {
    if (!s.is_array() || s.size() != saturation::kStats + 1)
      throw std::invalid_argument("not " + std::to_string(saturation::kStats) +
                                  " Moments and a count");
    saturation_stats(s, 0, w.chunks.at(i).count, w.keys);
  };
  job.save = [&] {
    ChunkState s = ChunkState::array();
    for (std::size_t d = 0; d < w.m.size(); ++d) {
      for (const Moments& x : w.m[d]) s.push_back(exact(x));
      s.push_back(w.non_finite[d]);
    }
    return s;
  };
  job.load = [&](const ChunkState& s, std::uint64_t next) { w.load(s, next); };
  if (!run_chunks(ctx.opt, job)) return {};  // a shard or another MPI rank
  summarize(w, t);
  return {t};
}

}  // namespace

const Experiment& softmax_saturation_experiment() {
  static const Experiment e{
      .name = "softmax-saturation",
      .summary = "max weight, entropy, Jacobian norm vs d_k, scaled or not (beyond)",
      .runs = Runs::backend,
      .params = {param::int_list("--d-k", "1,2,4,8,16,32,64,128,256,512,1024", "d_k values", 1,
                                 1 << 16),
                 param::count("--samples", "10000", "Rows (one query and its keys) per d_k"),
                 param::integer("--keys", "3", "Keys per row", 1, 65536),
                 param::u64("--seed", "0", "Seed of the generator")},
      .figures = {{"softmax-saturation", true, figure_script}},
      .examples = {"demo --table softmax-saturation --keys 8"},
      .run = run,
      .chunked = true};
  return e;
}

}  // namespace attn
