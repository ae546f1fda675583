// softmax_saturation.cpp: beyond the lesson, the consequence section 5 asserts. For each d_k,
// rows of a query and `keys` keys with N(0, 1) entries: mean largest weight, mean entropy and
// mean Frobenius norm of the softmax Jacobian, without and with the 1/sqrt(d_k) scaling.
// Without it, the scores' std grows like sqrt(d_k): max weight -> 1, entropy -> 0 and the
// Jacobian (which carries every gradient through softmax) -> 0.
#include <cmath>
#include <sstream>

#include "experiments/registry.hpp"
#include "host/format.hpp"
#include "host/plots.hpp"
#include "host/progress.hpp"
#include "saturation.hpp"

namespace attn {

namespace {

// The figure: the three measures against d_k, unscaled and scaled.
std::string figure_script(const Table& t) {
  using plot::num;
  std::ostringstream s;
  s << "$D << EOD\n";
  for (const auto& r : t.rows) {
    s << num(r[0]);
    for (const char* c : {"max_weight_unscaled", "max_weight_scaled", "entropy_unscaled",
                          "entropy_scaled", "jacobian_norm_unscaled", "jacobian_norm_scaled"})
      s << " " << round_trip(num(r[t.column(c)]));
    s << "\n";
  }
  s << "EOD\n"
    << "set multiplot layout 1,3 title " << plot::quote(t.title) << "\n"
    << "set logscale x 2\nset xlabel 'd_k'\nset grid\nset key bottom left\n"
    << "set ylabel 'mean max weight'\nset yrange [0:1.05]\nset key bottom right\n"
    << "plot $D using 1:2 with linespoints pt 7 title 'unscaled', $D using 1:3 with linespoints "
       "pt 5 title 'scaled'\n"
    << "set ylabel 'mean entropy (nats)'\nset yrange [0:*]\nset key bottom left\n"
    << "plot $D using 1:4 with linespoints pt 7 title 'unscaled', $D using 1:5 with linespoints "
       "pt 5 title 'scaled'\n"
    << "set ylabel 'mean ||J||_F of softmax'\n"
    << "plot $D using 1:6 with linespoints pt 7 title 'unscaled', $D using 1:7 with linespoints "
       "pt 5 title 'scaled'\n"
    << "unset multiplot\n";
  return s.str();
}

std::vector<Table> run(const RunContext& ctx) {
  const auto& dks = ctx.get<std::vector<std::int64_t>>("--dk");
  const std::uint64_t rows = ctx.get<std::uint64_t>("--samples");
  const int keys = static_cast<int>(ctx.get<std::int64_t>("--keys"));
  const std::uint64_t seed = ctx.get<std::uint64_t>("--seed");
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
  double total_normals = 0;
  for (std::int64_t d : dks) total_normals += static_cast<double>(rows) * (1 + keys) * d;
  bool any_non_finite = false;
  Progress progress("softmax-saturation", total_normals, "normals", ctx.opt.quiet);
  for (std::int64_t d : dks) {
    const saturation::Params p{seed, static_cast<std::uint32_t>(d), keys};
    // Rows per call: about 2^22 normals of q and keys, so memory stays bounded.
    const std::int64_t chunk = std::max<std::int64_t>(
        1, (std::int64_t{1} << 22) / static_cast<std::int64_t>(p.normals_per_row()));
    std::vector<double> stats;
    Moments m[saturation::kStats];
    std::int64_t non_finite = 0;  // rows with a non-finite measure: counted, left out
    // Calls of about 0.1 s (each row is independent: same result whatever the chunks).
    ChunkPacer pacer(64, 1, static_cast<std::uint64_t>(chunk));
    for (std::uint64_t r0 = 0, done = 0; r0 < rows; r0 += done) {
      progress.checkpoint();
      done = pacer.next(rows - r0);
      const auto count = static_cast<std::int64_t>(done);
      stats.resize(static_cast<std::size_t>(count) * saturation::kStats);
      ctx.backend.saturation_rows(p, r0, count, stats.data());
      pacer.done();
      for (std::int64_t r = 0; r < count; ++r) {
        const double* row = &stats[r * saturation::kStats];
        bool finite = true;
        for (int s = 0; s < saturation::kStats; ++s) finite = finite && std::isfinite(row[s]);
        if (!finite) {
          ++non_finite;
          continue;
        }
        for (int s = 0; s < saturation::kStats; ++s) m[s].push(row[s]);
      }
      progress.advance(static_cast<double>(count) * p.normals_per_row());
    }
    auto mean = [&](int s) { return m[s].n > 0 ? Cell(m[s].mean) : Cell(); };
    t.add_row({d, std::int64_t{keys}, static_cast<std::int64_t>(rows), non_finite, mean(0), mean(3),
               mean(1), mean(4), mean(2), mean(5)});
    if (non_finite > 0) any_non_finite = true;
    if (m[0].n == 0)
      t.notes.push_back("d_k " + std::to_string(d) +
                        ": every row had a non-finite measure: no means");
  }
  if (any_non_finite)
    t.notes.push_back(
        "non_finite: rows with a non-finite max weight, entropy or ||J||_F, counted and left out "
        "of the means (which are over samples - non_finite rows)");
  progress.finish();
  const double n = keys;
  t.notes.push_back("equal scores would give max weight 1/n = " + human_number(1 / n) +
                    ", entropy ln n = " + human_number(std::log(n)) +
                    ", ||J||_F = sqrt(n-1)/n = " + human_number(std::sqrt(n - 1) / n));
  t.run = {{"generator", "Philox4x32-10 + Box-Muller (float32), counter (block, 2^31 | d_k, row)"},
           {"seed", seed},
           {"samples", rows},
           {"keys", keys}};
  return {t};
}

}  // namespace

const Experiment& softmax_saturation_experiment() {
  static const Experiment e{
      "softmax-saturation",
      "max weight, entropy, Jacobian norm vs d_k, scaled or not (beyond)",
      false,
      Runs::backend,
      {param::int_list("--dk", "1,2,4,8,16,32,64,128,256,512,1024", "d_k values", 1, 1 << 20),
       param::count("--samples", "10000", "Rows (one query and its keys) per d_k"),
       param::integer("--keys", "3", "Keys per row", 1, 65536),
       param::u64("--seed", "0", "Seed of the generator")},
      {{"softmax-saturation", true, figure_script}},
      {"demo --table softmax-saturation --keys 8"},
      run};
  return e;
}

}  // namespace attn
