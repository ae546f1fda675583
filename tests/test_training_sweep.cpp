// test_training_sweep.cpp (test_tables): `demo --table training-sweep`: the summary's columns
// and numbers against the per-seed rows it writes, each per-seed row against the single-run
// table and numpy's oracle data, the histogram, and bounded memory for 10^7 seeds; diverged runs
// (and the training table's note of them), binned quantiles, repeated seeds and requests too
// large; the quantiles and the SweepSummary it is built on.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "experiments/sweep_summary.hpp"
#include "helpers.hpp"
#include "quantiles.hpp"
#include "table_helpers.hpp"

namespace attn {
namespace {

struct Row {
  std::string config;
  std::uint64_t seed;
  double weight, out_x, out_y, loss;
};

// The per-seed rows of a run that diverged nowhere (every number finite), and the header.
std::vector<Row> read_per_seed(const std::string& path, std::string& header) {
  const test::Csv csv = test::read_csv(path);
  header.clear();
  for (const std::string& name : csv.names) header += (header.empty() ? "" : ",") + name;
  const std::vector<double> weight = csv.numbers("weight_on_apple"), out_x = csv.numbers("out_x"),
                            out_y = csv.numbers("out_y"), loss = csv.numbers("loss");
  std::vector<Row> rows;
  for (std::size_t i = 0; i < csv.rows.size(); ++i)
    rows.push_back({csv.rows[i].at(csv.index("config")),
                    std::stoull(csv.rows[i].at(csv.index("seed"))), weight[i], out_x[i], out_y[i],
                    loss[i]});
  return rows;
}

double quantile(std::vector<double> v, double p) {  // numpy's default (linear)
  std::sort(v.begin(), v.end());
  const double h = (v.size() - 1) * p;
  const std::size_t lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - std::floor(h)) * (v[hi] - v[lo]);
}

TEST(TrainingSweep, SummaryAgreesWithItsPerSeedRows) {
  const test::TempDir dir;
  const std::string per_seed = dir.file("runs.csv");
  const auto r = test::run_demo(
      "--table training-sweep --seeds 3:403 --steps 300 --grad analytic "
      "--format json -q --per-seed " +
      per_seed);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& t = doc["tables"][0];
  EXPECT_EQ(t["columns"],
            nlohmann::json({"config", "seeds", "diverged", "mean", "std", "min", "p05", "p25",
                            "p50", "p75", "p95", "max", "converged", "quantiles"}));
  std::string header;
  const auto rows = read_per_seed(per_seed, header);
  EXPECT_EQ(header, "config,seed,weight_on_apple,out_x,out_y,loss");
  ASSERT_EQ(rows.size(), 800u);  // 400 seeds x {all-random, qk-random}
  for (const auto& summary : t["rows"]) {
    const std::string config = summary["config"];
    std::vector<double> w;
    int converged = 0;
    for (const auto& row : rows)
      if (row.config == config) {
        w.push_back(row.weight);
        converged += row.loss < 1e-4;
      }
    ASSERT_EQ(w.size(), 400u) << config;
    double mean = 0;
    for (double x : w) mean += x;
    mean /= w.size();
    double var = 0;
    for (double x : w) var += (x - mean) * (x - mean);
    EXPECT_EQ(summary["seeds"], 400);
    EXPECT_EQ(summary["diverged"], 0);
    EXPECT_EQ(summary["quantiles"], "exact");
    EXPECT_NEAR(summary["mean"].get<double>(), mean, 1e-12);
    EXPECT_NEAR(summary["std"].get<double>(), std::sqrt(var / w.size()), 1e-12);
    EXPECT_EQ(summary["min"].get<double>(), *std::min_element(w.begin(), w.end()));
    EXPECT_EQ(summary["max"].get<double>(), *std::max_element(w.begin(), w.end()));
    const char* names[] = {"p05", "p25", "p50", "p75", "p95"};
    const double probs[] = {0.05, 0.25, 0.5, 0.75, 0.95};
    for (int i = 0; i < 5; ++i)
      EXPECT_NEAR(summary[names[i]].get<double>(), quantile(w, probs[i]), 1e-15) << names[i];
    EXPECT_NEAR(summary["converged"].get<double>(), converged / 400.0, 1e-15);
    // The histogram: 20 bins on [0, 1], counts summing to the seeds.
    const auto& counts = t["histogram"]["counts"][config];
    ASSERT_EQ(counts.size(), 20u);
    std::vector<int> mine(20, 0);
    for (double x : w) mine[std::min(19, static_cast<int>(x * 20))]++;
    for (int b = 0; b < 20; ++b) EXPECT_EQ(counts[b].get<int>(), mine[b]) << "bin " << b;
  }
}

// Every per-seed row is the single training run of that seed (same code, chunked).
TEST(TrainingSweep, PerSeedRowsEqualTheTrainingTable) {
  const test::TempDir dir;
  const std::string file = dir.file("rows.csv");
  ASSERT_EQ(test::run_demo("--table training-sweep --seeds 0,1,99999 --configs all-random -q "
                           "--per-seed " +
                           file)
                .exit_code,
            0);
  const auto t =
      test::run_demo("--table training --configs all-random --seeds 0,1,99999 --format json -q");
  ASSERT_EQ(t.exit_code, 0);
  const auto rows = nlohmann::json::parse(t.out)["tables"][0]["rows"];
  std::string header;
  const auto per_seed = read_per_seed(file, header);
  ASSERT_EQ(per_seed.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(per_seed[i].seed, rows[i]["seed"].get<std::uint64_t>());
    EXPECT_EQ(per_seed[i].weight, rows[i]["weight_on_apple"].get<double>());  // %.17g round trip
  }
  // Seeds 0 and 1 are the lesson's 0.16 and 0.73 (spec/EXPERIMENTS.md).
  EXPECT_NEAR(per_seed[0].weight, 0.16210782312718855, 1e-9);
  EXPECT_NEAR(per_seed[1].weight, 0.7317287020936569, 1e-9);
}

// Peak resident memory (KB) of a demo run, from /usr/bin/time; -1 when time is missing.
long peak_kb(const std::string& args, std::string& out) {
  const auto r = test::run_demo(args, "/usr/bin/time -f 'maxrss_kb %M'");
  if (r.exit_code == 127) return -1;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  out = r.out;
  const auto at = r.err.find("maxrss_kb ");
  return at == std::string::npos ? -1 : std::stol(r.err.substr(at + 10));
}

// 10^7 seeds (one step each, so it is quick): memory grows by about 8 bytes per seed (the
// weights kept for exact quantiles, below the default --quantile-budget of 2^24), not by every
// run's results. Measured against the same
// command with 1000 seeds, so that the libraries' own footprint (CUDA's is large) cancels.
TEST(TrainingSweep, TenMillionSeedsInBoundedMemory) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer keeps freed memory in quarantine: peak RSS measures it";
#endif
  const std::string args =
      " --steps 1 --grad analytic --configs all-random --format csv -q --table training-sweep";
  std::string small_out, big_out;
  const long small = peak_kb("--seeds 0:1000" + args, small_out);
  const long big = peak_kb("--seeds 0:10000000" + args, big_out);
  if (small < 0 || big < 0) GTEST_SKIP() << "/usr/bin/time not installed";
  EXPECT_NE(big_out.find("all-random,10000000,"), std::string::npos) << big_out;
  EXPECT_LT(big - small, 120 * 1024) << "1e7 seeds took " << big << " KB, 1000 seeds " << small;
}

// Beyond --quantile-budget (here 0: binned from the start) memory stays bounded whatever the
// number of seeds: the 2^20-bin histogram (8 MiB), not 8 bytes per seed (40 MB here).
TEST(TrainingSweep, BeyondTheBudgetMemoryIsBounded) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer keeps freed memory in quarantine: peak RSS measures it";
#endif
  const std::string args =
      " --steps 1 --grad analytic --configs all-random --format csv -q --quantile-budget 0 "
      "--table training-sweep";
  std::string small_out, big_out;
  const long small = peak_kb("--seeds 0:1000" + args, small_out);
  const long big = peak_kb("--seeds 0:5000000" + args, big_out);
  if (small < 0 || big < 0) GTEST_SKIP() << "/usr/bin/time not installed";
  EXPECT_NE(big_out.find("all-random,5000000,0,"), std::string::npos) << big_out;
  EXPECT_NE(big_out.find(",binned"), std::string::npos) << big_out;
  EXPECT_LT(big - small, 16 * 1024) << "5e6 seeds took " << big << " KB, 1000 seeds " << small;
}

TEST(TrainingSweep, RefusesBadSeedRanges) {
  for (const char* bad : {"--seeds 5:5", "--seeds 7:3", "--seeds -1:4", "--seeds a:b"})
    test::expect_refused(std::string("--table training-sweep ") + bad, 2, {"--seeds"});
}

// ---- runs that diverge -----------------------------------------------------------------------

// Every run diverges: the diverged count, no statistics (null in JSON) and a note that says so,
// never mean 0, std nan, min inf, max -inf.
TEST(TrainingSweepDiverged, AllRunsDivergedGiveCountAndNoStatistics) {
  const auto r = test::run_demo(
      "--table training-sweep --lr 50 --steps 200 --grad analytic --configs all-random "
      "--seeds 0:2000 --format json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto t = nlohmann::json::parse(r.out)["tables"][0];
  const auto& row = t["rows"][0];
  EXPECT_EQ(row["seeds"], 2000);
  EXPECT_EQ(row["diverged"], 2000);
  for (const char* c : {"mean", "std", "min", "p05", "p25", "p50", "p75", "p95", "max"})
    EXPECT_TRUE(row[c].is_null()) << c << " = " << row[c];
  EXPECT_EQ(row["converged"], 0.0);
  bool said = false;
  for (const auto& n : t["notes"])
    said = said || n.get<std::string>().find("all 2000 runs diverged") != std::string::npos;
  EXPECT_TRUE(said) << t["notes"];
  // The text table shows no number that contradicts the count.
  const auto text = test::run_demo(
      "--table training-sweep --lr 50 --steps 200 --grad analytic --configs all-random "
      "--seeds 0:2000 -q");
  EXPECT_EQ(text.out.find("nan"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("inf"), std::string::npos) << text.out;
}

// Some runs diverge (lr 5: most all-random runs): the count is the per-seed rows with a
// non-finite weight or loss, and every statistic is over the others, computed here.
TEST(TrainingSweepDiverged, StatisticsOverTheFiniteRunsWithTheirCount) {
  const test::TempDir dir;
  const std::string file = dir.file("rows.csv");
  const auto r = test::run_demo(
      "--table training-sweep --lr 5 --steps 200 --grad analytic --configs all-random "
      "--seeds 0:300 --format json -q --force --per-seed " +
      file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto row = nlohmann::json::parse(r.out)["tables"][0]["rows"][0];
  const test::Csv csv = test::read_csv(file);
  ASSERT_EQ(csv.names, (std::vector<std::string>{"config", "seed", "weight_on_apple", "out_x",
                                                 "out_y", "loss"}));
  const std::vector<double> weight = csv.numbers("weight_on_apple"), loss = csv.numbers("loss");
  std::vector<double> finite;
  int diverged = 0;
  const int rows = static_cast<int>(csv.rows.size());
  for (int i = 0; i < rows; ++i) {
    if (std::isfinite(weight[i]) && std::isfinite(loss[i]))
      finite.push_back(weight[i]);
    else
      ++diverged;
  }
  ASSERT_EQ(rows, 300);
  ASSERT_GT(diverged, 0);
  ASSERT_GT(finite.size(), 10u);
  EXPECT_EQ(row["diverged"], diverged);
  double mean = 0;
  for (double x : finite) mean += x / finite.size();
  EXPECT_NEAR(row["mean"].get<double>(), mean, 1e-12);
  EXPECT_EQ(row["min"].get<double>(), *std::min_element(finite.begin(), finite.end()));
  EXPECT_EQ(row["max"].get<double>(), *std::max_element(finite.begin(), finite.end()));
  EXPECT_NEAR(row["p50"].get<double>(), quantile(finite, 0.5), 1e-15);
}

// The training table itself: a note counts the runs that diverged.
TEST(TrainingDiverged, NoteCountsDivergedRuns) {
  const auto r = test::run_demo(
      "--table training --lr 50 --steps 200 --grad analytic --configs all-random --seeds 0,1,2 "
      "--format json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto notes = nlohmann::json::parse(r.out)["tables"][0]["notes"];
  bool said = false;
  for (const auto& n : notes)
    said = said || n.get<std::string>().find("3 of 3 runs diverged") != std::string::npos;
  EXPECT_TRUE(said) << notes;
}

// Repeated seeds are refused (they would count twice in the statistics), in both tables.
TEST(TrainingSweepSeeds, RepeatedSeedsRefused) {
  for (const char* table : {"training-sweep", "training"})
    test::expect_refused(std::string("--table ") + table + " --seeds 0,0,1", 2,
                         {"seed 0 is given twice"});
}

// softmax-saturation summarizes many rows too: it counts rows with a non-finite measure
// (left out of the means), 0 for normal inputs.
TEST(SaturationNonFinite, CountedInItsOwnColumn) {
  const auto r =
      test::run_demo("--table softmax-saturation --d-k 4,1024 --samples 200 --format json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto t = nlohmann::json::parse(r.out)["tables"][0];
  for (const auto& row : t["rows"]) {
    EXPECT_EQ(row["non_finite"], 0);
    EXPECT_TRUE(row["max_weight_unscaled"].is_number());
  }
}

// Sorting NaN with `<` is undefined: quantiles leave NaN out (and +-inf sort as numbers).
TEST(Quantiles, NaNLeftOutInfOrdered) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> probs = {0, 0.5, 1};
  EXPECT_EQ(quantiles_cpu({nan, 3, 1, nan, 2, nan}, probs), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(quantiles_cpu({3, nan, -inf, 1, 2, inf}, probs), (std::vector<double>{-inf, 2, inf}));
  EXPECT_EQ(quantiles_cpu({nan, 4, 1, nan}, {0.5}), (std::vector<double>{2.5}));
  EXPECT_THROW(quantiles_cpu({nan, nan}, probs), std::invalid_argument);
}

// Finite values of opposite signs beyond half the largest double: their difference overflows, the
// quantile between them does not. Reference: the same interpolation in long double.
TEST(Quantiles, InterpolationBetweenOppositeExtremesStaysFinite) {
  const double big = std::numeric_limits<double>::max();
  // Sorted: -big, -0.75 big, 0.6 big, big; p in (1/3, 2/3) lies across the overflowing pair.
  const std::vector<double> values = {-big, big, -0.75 * big, 0.6 * big};
  const std::vector<double> probs = {0.05, 0.4, 0.5, 0.6, 0.9};
  const std::vector<double> got = quantiles_cpu(values, probs);
  std::vector<long double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < probs.size(); ++i) {
    const long double h = (sorted.size() - 1) * static_cast<long double>(probs[i]);
    const std::size_t lo = static_cast<std::size_t>(h);
    const long double want = sorted[lo] + (h - lo) * (sorted[lo + 1] - sorted[lo]);
    ASSERT_TRUE(std::isfinite(got[i])) << probs[i];
    EXPECT_LE(std::fabs(got[i] - want), 1e-15L * big) << probs[i] << ": " << got[i];
  }
  EXPECT_EQ(quantiles_cpu({big, -big}, {0.5})[0], 0.0);
  // Where the difference is in range, the plain interpolation, bit for bit.
  const double lower = -1.5, upper = 2.25;
  EXPECT_EQ(quantiles_cpu({upper, lower}, {0.3})[0], lower + 0.3 * (upper - lower));
}

// ---- requests too large for the machine -----------------------------------------------------

// Refused before any work (the stop audit would speak of any work begun), with what they would
// need, one line.
TEST(TooLarge, HugeSeedRangesRefusedUpFront) {
  const std::pair<const char*, const char*> cases[] = {
      {"--table training-sweep --seeds 0:18446744073709551615", "at most 2^53"},
      {"--table training --seeds 0:18446744073709551615", "GB for these"},
      {"--table training --seeds 0:1048577", "at most 1048576 seeds"}};
  for (const auto& [args, want] : cases)
    test::expect_refused(args, 2, {want}, test::Refusal().before_any_work());
}

// --threads 4096 is one clear line, not libgomp's abort.
TEST(TooLarge, ThreadsBeyondTheMachineRefused) {
  test::expect_refused("--table knob --threads 4096", 2,
                       {"--threads: expected a whole number from 1 to"},
                       test::Refusal().not_saying("libgomp"));
}

// A run expected to take more than a minute says its estimate as it goes (then it is stopped
// with Ctrl-C, once it said it): the line and a clean stop are asserted, not a time.
TEST(TooLarge, LongRunSaysItsEstimate) {
  const auto r = test::signal_when_ready(
      "--table training-sweep --seeds 0:1000000000 --grad analytic --steps 100 --device cpu",
      "training-sweep: expected to take about", SIGINT);
  EXPECT_TRUE(r.ready) << r.err;
  EXPECT_FALSE(r.hung);
  EXPECT_EQ(r.exit_code, 130) << r.err;
}

// Beyond --quantile-budget the quantiles come from the 2^20-bin histogram: within 4.8e-7 of
// the exact ones, and the table says which.
TEST(TrainingSweepQuantiles, BinnedWithinTheStatedBoundOfExact) {
  const std::string args =
      "--table training-sweep --seeds 0:3000 --steps 300 --grad analytic --format json -q ";
  const auto exact = test::run_demo(args);
  const auto binned = test::run_demo(args + "--quantile-budget 1000");
  ASSERT_EQ(exact.exit_code, 0) << exact.err;
  ASSERT_EQ(binned.exit_code, 0) << binned.err;
  const auto e = nlohmann::json::parse(exact.out)["tables"][0];
  const auto b = nlohmann::json::parse(binned.out)["tables"][0];
  ASSERT_EQ(e["rows"].size(), b["rows"].size());
  for (std::size_t i = 0; i < e["rows"].size(); ++i) {
    EXPECT_EQ(e["rows"][i]["quantiles"], "exact");
    EXPECT_EQ(b["rows"][i]["quantiles"], "binned");
    for (const char* c : {"p05", "p25", "p50", "p75", "p95"})
      EXPECT_NEAR(b["rows"][i][c].get<double>(), e["rows"][i][c].get<double>(),
                  SweepSummary::kQuantileErrorBound)
          << c;
    for (const char* c : {"seeds", "diverged", "min", "max", "converged"})
      EXPECT_EQ(b["rows"][i][c], e["rows"][i][c]) << c;
    EXPECT_NEAR(b["rows"][i]["mean"].get<double>(), e["rows"][i]["mean"].get<double>(), 1e-15);
  }
  bool named = false;
  for (const auto& n : b["notes"])
    named = named || n.get<std::string>().find("2^20-bin histogram") != std::string::npos;
  EXPECT_TRUE(named) << b["notes"];
  test::expect_refused("--table training-sweep --quantile-budget 1e12", 2, {"--quantile-budget"});
}

// ---- SweepSummary: push, merge, finish ----------------------------------------------------

// Values in [0, 1] with ties, clusters and both ends (a fixed LCG, so the test is exact).
std::vector<double> test_weights(std::size_t n) {
  std::vector<double> v;
  std::uint64_t x = 12345;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(x >> 11) / 9007199254740992.0;
    v.push_back(i % 7 == 0 ? 0.5 : i % 11 == 0 ? 1.0 : i % 13 == 0 ? 0.0 : u * u * u);
  }
  return v;
}

const std::vector<double> kP = {0, 0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99, 1};

TEST(SweepSummary, BinnedQuantilesWithinHalfABinOfExact) {
  const Backend& cpu = test::cpu_backend();
  const auto w = test_weights(100003);
  SweepSummary binned(0, 1e-4);
  for (double x : w) binned.push(x, 1.0);
  const SweepSummary::Row r = binned.finish(kP, cpu);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(SweepSummary::kQuantileErrorBound, std::ldexp(1.0, -21));
  for (std::size_t i = 0; i < kP.size(); ++i)
    EXPECT_LE(std::fabs(*r.quantiles[i] - quantile(w, kP[i])), SweepSummary::kQuantileErrorBound)
        << kP[i];
  EXPECT_EQ(*r.min, 0.0);
  EXPECT_EQ(*r.max, 1.0);
}

TEST(SweepSummary, MergeEqualsOneStateExactAndBinned) {
  const Backend& cpu = test::cpu_backend();
  const auto w = test_weights(30000);
  for (std::uint64_t budget : {std::uint64_t{0}, std::uint64_t{12000}, std::uint64_t{100000}}) {
    SCOPED_TRACE(budget);
    SweepSummary whole(budget, 0.3), a(budget, 0.3), b(budget, 0.3), c(budget, 0.3);
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double loss = i % 5 == 0 ? NAN : w[i];  // every fifth run diverged
      whole.push(w[i], loss);
      (i < 10000 ? a : i < 20000 ? b : c).push(w[i], loss);
    }
    a.merge(b);
    a.merge(c);
    const auto x = whole.finish(kP, cpu), y = a.finish(kP, cpu);
    EXPECT_EQ(x.exact, budget >= 24000);  // 24000 finite runs
    EXPECT_EQ(y.exact, x.exact);
    EXPECT_EQ(x.runs, 30000);
    EXPECT_EQ(x.diverged, 6000);
    EXPECT_EQ(x.used, 24000);
    EXPECT_EQ(y.runs, x.runs);
    EXPECT_EQ(y.diverged, x.diverged);
    EXPECT_EQ(y.quantiles, x.quantiles);  // exact: same values; binned: same counts
    EXPECT_EQ(y.histogram, x.histogram);
    EXPECT_EQ(*y.min, *x.min);
    EXPECT_EQ(*y.max, *x.max);
    EXPECT_NEAR(*y.mean, *x.mean, 1e-15);
    EXPECT_NEAR(*y.std, *x.std, 1e-15);
    EXPECT_DOUBLE_EQ(y.converged, x.converged);
    std::vector<double> finite;
    for (std::size_t i = 0; i < w.size(); ++i)
      if (i % 5 != 0) finite.push_back(w[i]);
    if (x.exact) {
      for (std::size_t i = 0; i < kP.size(); ++i)
        EXPECT_EQ(*x.quantiles[i], quantile(finite, kP[i]));
    }
  }
}

TEST(SweepSummary, NonFiniteRunsCountedAndLeftOut) {
  const Backend& cpu = test::cpu_backend();
  const double inf = std::numeric_limits<double>::infinity();
  SweepSummary s(100, 1e-4);
  s.push(NAN, 1.0);
  s.push(0.25, inf);
  s.push(inf, 0.0);
  auto none = s.finish(kP, cpu);
  EXPECT_EQ(none.diverged, 3);
  EXPECT_EQ(none.used, 0);
  EXPECT_FALSE(none.mean || none.std || none.min || none.max);
  for (const auto& q : none.quantiles) EXPECT_FALSE(q);
  s.push(0.5, 0.0);
  s.push(0.75, 1e-5);
  const auto r = s.finish(kP, cpu);
  EXPECT_EQ(r.runs, 5);
  EXPECT_EQ(r.diverged, 3);
  EXPECT_EQ(r.used, 2);
  EXPECT_EQ(*r.mean, 0.625);
  EXPECT_EQ(*r.std, 0.125);
  EXPECT_EQ(*r.min, 0.5);
  EXPECT_EQ(*r.max, 0.75);
  EXPECT_EQ(*r.quantiles[4], 0.625);       // p50 of {0.5, 0.75}
  EXPECT_DOUBLE_EQ(r.converged, 2.0 / 5);  // losses 0 and 1e-5; a diverged run never converged
}

}  // namespace
}  // namespace attn
