// test_head.cpp: the general head (kernels/head.hpp) and `demo --table attention-sweep`.
// - The analytic gradient (softmax Jacobian) against central differences, on random shapes
//   n <= 16, d <= 32, at 1e-6 relative; one training step (both schedules) against the same.
// - The lesson case against `training-sweep` seed by seed (1e-9): --train qkv = all-random,
//   --train qk = qk-random (training-sweep's start is checked against numpy in test_training).
// - The table's measures against the per-seed rows it writes, recomputed here from the spec's
//   formulas, and exact cases (identical seeds: JSD 0, agreement 1).
// - Every refusal: one line on stderr, nothing on stdout, no file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include "experiments/attention_sweep.hpp"
#include "experiments/registry.hpp"
#include "head.hpp"
#include "helpers.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// A random model: shapes, task data (normals), loss rows, and random weights in `ws`.
struct Case {
  head::Model m;
  std::vector<double> x, y, ws;
};

Case random_case(std::mt19937_64& rng) {
  Case c;
  std::uniform_int_distribution<int> words(1, 16), dims(1, 32);
  std::normal_distribution<double> normal;
  c.m.n = words(rng);
  c.m.d_model = dims(rng);
  c.m.d_k = dims(rng);
  c.m.d_v = dims(rng);
  c.m.r0 = std::uniform_int_distribution<int>(0, c.m.n - 1)(rng);
  c.x.resize(c.m.n * c.m.d_model);
  c.y.resize(c.m.n * c.m.d_v);
  for (double& v : c.x) v = normal(rng);
  for (double& v : c.y) v = normal(rng);
  c.m.x = c.x.data();
  c.m.y = c.y.data();
  const head::Layout l = head::layout(c.m);
  c.ws.assign(l.total, 0.0);
  for (std::int64_t e = 0; e < l.q; ++e) c.ws[e] = 0.5 * normal(rng);  // W_Q, W_K, W_V
  return c;
}

// ‖a − b‖ / ‖b‖.
double rel_norm(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0, s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (a[i] - b[i]) * (a[i] - b[i]);
    s += b[i] * b[i];
  }
  return std::sqrt(d / s);
}

// Central differences of the loss in every weight of W_Q, W_K, W_V (step h), in plain loops
// from the model's definition: the reference for the analytic gradient.
std::vector<double> numeric_gradient(Case& c, double h) {
  const head::Layout l = head::layout(c.m);
  std::vector<double> g(l.q);
  for (std::int64_t e = 0; e < l.q; ++e) {
    const double keep = c.ws[e];
    c.ws[e] = keep + h;
    const double hi = head::loss<double>(c.m, l, c.ws.data());
    c.ws[e] = keep - h;
    const double lo = head::loss<double>(c.m, l, c.ws.data());
    c.ws[e] = keep;
    g[e] = (hi - lo) / (2 * h);
  }
  return g;
}

TEST(HeadGradient, AnalyticMatchesCentralDifferencesOnRandomShapes) {
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 40; ++trial) {
    Case c = random_case(rng);
    const head::Layout l = head::layout(c.m);
    const std::vector<double> numeric = numeric_gradient(c, 1e-5);
    head::forward<double>(c.m, l, c.ws.data());
    head::backward_scores<double>(c.m, l, c.ws.data());
    for (int which = 0; which < 3; ++which) head::grad_of<double>(c.m, l, c.ws.data(), which);
    // dW = Xᵀ dZ, with the rows that carry a gradient (R for dQ, all for dK and dV).
    std::vector<double> analytic(l.q, 0.0);
    const std::int64_t at[3] = {l.wq, l.wk, l.wv}, from[3] = {l.dq, l.dk, l.dv};
    const int cols[3] = {c.m.d_k, c.m.d_k, c.m.d_v}, first[3] = {c.m.r0, 0, 0};
    for (int which = 0; which < 3; ++which)
      for (int k = 0; k < c.m.d_model; ++k)
        for (int col = 0; col < cols[which]; ++col)
          for (int i = first[which]; i < c.m.n; ++i)
            analytic[at[which] + k * cols[which] + col] +=
                c.x[i * c.m.d_model + k] * c.ws[from[which] + i * cols[which] + col];
    EXPECT_LT(rel_norm(analytic, numeric), 1e-6)
        << "n " << c.m.n << " d_model " << c.m.d_model << " d_k " << c.m.d_k << " d_v " << c.m.d_v
        << " r0 " << c.m.r0;
  }
}

// One training step: the analytic path (incremental recomputation) against the numeric one,
// for both schedules and for --train qk; at 1e-6 relative on the change of the weights.
TEST(HeadGradient, OneStepAnalyticMatchesNumericForBothSchedules) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 12; ++trial) {
    Case c = random_case(rng);
    c.m.steps = 1;
    c.m.lr = 0.05;
    c.m.schedule = trial % 2 ? head::Schedule::simultaneous : head::Schedule::sequential;
    c.m.train_values = trial % 3 != 0;
    const head::Layout l = head::layout(c.m);
    const std::vector<double> start(c.ws.begin(), c.ws.begin() + l.q);
    std::vector<double> after[2];
    for (int g = 0; g < 2; ++g) {
      std::vector<double> ws = c.ws;
      c.m.grad = g ? head::Grad::numeric : head::Grad::analytic;
      head::train<double>(c.m, ws.data());
      after[g].assign(ws.begin(), ws.begin() + l.q);
      for (std::int64_t e = 0; e < l.q; ++e) after[g][e] -= start[e];
    }
    EXPECT_LT(rel_norm(after[0], after[1]), 1e-6) << "trial " << trial;
    if (!c.m.train_values) {  // W_V untouched
      for (std::int64_t e = l.wv; e < l.q; ++e) EXPECT_EQ(after[0][e], 0.0);
    }
  }
}

// The sequential schedule takes W_K's gradient at the new W_Q: one step by hand with the
// numeric reference, matrix by matrix.
TEST(HeadGradient, SequentialScheduleUsesTheUpdatedQueries) {
  std::mt19937_64 rng(3);
  Case c = random_case(rng);
  c.m.steps = 1;
  c.m.lr = 0.1;
  const head::Layout l = head::layout(c.m);
  Case by_hand = c;
  const std::int64_t at[4] = {l.wq, l.wk, l.wv, l.q};
  for (int which = 0; which < 3; ++which) {
    const std::vector<double> g = numeric_gradient(by_hand, 1e-5);
    for (std::int64_t e = at[which]; e < at[which + 1]; ++e) by_hand.ws[e] -= c.m.lr * g[e];
  }
  const std::vector<double> start(c.ws.begin(), c.ws.begin() + l.q);
  head::train<double>(c.m, c.ws.data());
  std::vector<double> a(l.q), b(l.q);  // the changes of the weights
  for (std::int64_t e = 0; e < l.q; ++e) {
    a[e] = c.ws[e] - start[e];
    b[e] = by_hand.ws[e] - start[e];
  }
  EXPECT_LT(rel_norm(a, b), 1e-6);
}

// A monitor that says stop from its `after`-th question on, and counts the questions.
struct StopAfter : Monitor {
  explicit StopAfter(int n) : after(n) {}
  bool stop_requested() const override { return ++asked > after; }
  int after;
  mutable std::atomic<int> asked{0};
};

// The CPU's training honours a stop within a step or a gradient element: it throws Interrupted
// having asked a few times, where running on would ask thousands of times (3000 steps; the
// numeric gradient's 768 elements a step). Shapes above and below the 1e5 FLOPs a step at
// which it asks at every test instead of every 16th; both gradients; 16 seeds, so two or more
// lane groups share the threads.
TEST(HeadTraining, CpuStopsWithinAStepWhenTheMonitorSaysSo) {
  for (const int width : {2, 16}) {
    for (const head::Grad grad : {head::Grad::analytic, head::Grad::numeric}) {
      SCOPED_TRACE("width " + std::to_string(width) +
                   (grad == head::Grad::numeric ? " numeric" : " analytic"));
      std::mt19937_64 rng(5);
      Case c = random_case(rng);
      c.m.n = width;
      c.m.d_model = c.m.d_k = c.m.d_v = width;
      c.m.r0 = 0;
      c.x.assign(c.m.n * c.m.d_model, 0.5);
      c.y.assign(c.m.n * c.m.d_v, 0.25);
      c.m.x = c.x.data();
      c.m.y = c.y.data();
      c.m.steps = 3000;
      c.m.grad = grad;
      std::vector<std::uint64_t> seeds(16);
      for (std::size_t i = 0; i < seeds.size(); ++i) seeds[i] = i;
      std::vector<double> out(seeds.size() * head::result_size(c.m), -7.0);
      StopAfter monitor(3);
      EXPECT_THROW(head::train_seeds_cpu(c.m, seeds.data(), static_cast<std::int64_t>(seeds.size()),
                                         out.data(), monitor),
                   Interrupted);
      EXPECT_LE(monitor.asked.load(), 3 + 2 * static_cast<int>(seeds.size()));
      EXPECT_EQ(std::count(out.begin(), out.end(), -7.0), static_cast<std::ptrdiff_t>(out.size()))
          << "a seed ran to its end and wrote results";
      if (width == 2) {  // and a monitor that never stops changes nothing
        StopAfter never(1 << 30);
        std::vector<double> silent(out.size()), watched(out.size());
        c.m.steps = 20;
        head::train_seeds_cpu(c.m, seeds.data(), 16, silent.data());
        head::train_seeds_cpu(c.m, seeds.data(), 16, watched.data(), never);
        EXPECT_EQ(silent, watched);
        EXPECT_GT(never.asked.load(), 0);
      }
    }
  }
}

// The workspace seen through a counter: every read or write of an element is one unit of work.
struct CountingWorkspace {
  double* p;
  std::int64_t* units;
  double& operator[](std::int64_t i) const {
    ++*units;
    return p[i];
  }
};

// The work between two stop tests, in workspace accesses: with a row test (what the CPU uses
// for a large head) it is at most a few rows of one product, about 4 D^2 for D the largest of
// n, d_model, d_k, d_v, for both gradients and schedules; with none (NeverStop, the
// step test alone) a whole step, far too long between two stop tests at n = d = 1024.
TEST(HeadTraining, WorkBetweenTwoStopTestsIsAFewRowsOfAProduct) {
  for (const head::Grad grad : {head::Grad::analytic, head::Grad::numeric})
    for (const head::Schedule schedule :
         {head::Schedule::sequential, head::Schedule::simultaneous}) {
      std::mt19937_64 rng(9);
      Case c = random_case(rng);
      c.m.n = 24;
      c.m.d_model = 20;
      c.m.d_k = 16;
      c.m.d_v = 12;
      c.m.r0 = 1;
      c.x.resize(c.m.n * c.m.d_model, 0.5);
      c.y.resize(c.m.n * c.m.d_v, 0.25);
      c.m.x = c.x.data();
      c.m.y = c.y.data();
      c.ws.resize(head::layout(c.m).total, 0.1);
      c.m.steps = grad == head::Grad::numeric ? 1 : 2;
      c.m.grad = grad;
      c.m.schedule = schedule;
      const std::int64_t d = 24;
      std::int64_t units = 0, last = 0, widest = 0, tests = 0;
      const auto test = [&] {
        widest = std::max(widest, units - last);
        last = units;
        ++tests;
        return false;
      };
      std::vector<double> watched = c.ws, plain = c.ws;
      head::train<double>(c.m, CountingWorkspace{watched.data(), &units}, test, test);
      widest = std::max(widest, units - last);
      SCOPED_TRACE(std::string(grad == head::Grad::numeric ? "numeric" : "analytic") +
                   (schedule == head::Schedule::sequential ? " sequential" : " simultaneous"));
      EXPECT_LE(widest, 4 * d * d) << "of " << units << " units in " << tests << " tests";
      EXPECT_GT(units / c.m.steps, 50 * 4 * d * d) << "a step is far more than the bound";
      // The tests change nothing.
      head::train<double>(c.m, plain.data());
      EXPECT_EQ(watched, plain);
      // The step test alone: a whole step between two tests.
      units = last = widest = 0;
      std::vector<double> again = c.ws;
      head::train<double>(c.m, CountingWorkspace{again.data(), &units}, test);
      widest = std::max(widest, units - last);
      EXPECT_GT(widest, 50 * 4 * d * d);
    }
}

// A head large enough that the CPU tests before each row (a step of 1e7 FLOPs or more): a stop
// is honoured within a step, and a monitor that never stops changes no bit.
TEST(HeadTraining, LargeHeadStopsWithinAStepAndWatchingChangesNothing) {
  std::mt19937_64 rng(4);
  Case c = random_case(rng);
  c.m.n = c.m.d_model = c.m.d_k = c.m.d_v = 96;
  c.m.r0 = 0;
  c.x.assign(c.m.n * c.m.d_model, 0.01);
  c.y.assign(c.m.n * c.m.d_v, 0.02);
  c.m.x = c.x.data();
  c.m.y = c.y.data();
  ASSERT_GE(head::flops_per_step(c.m), 1e7);
  c.m.steps = 1000;
  std::vector<std::uint64_t> seeds = {0, 1};
  std::vector<double> out(2 * head::result_size(c.m), -7.0);
  StopAfter monitor(3);
  EXPECT_THROW(head::train_seeds_cpu(c.m, seeds.data(), 2, out.data(), monitor), Interrupted);
  EXPECT_LE(monitor.asked.load(), 3 + 2 * 2);
  EXPECT_EQ(std::count(out.begin(), out.end(), -7.0), static_cast<std::ptrdiff_t>(out.size()));
  c.m.steps = 2;
  StopAfter never(1 << 30);
  std::vector<double> silent(out.size()), watched(out.size());
  head::train_seeds_cpu(c.m, seeds.data(), 2, silent.data());
  head::train_seeds_cpu(c.m, seeds.data(), 2, watched.data(), never);
  EXPECT_EQ(silent, watched);
  EXPECT_GT(never.asked.load(), 2 * 96);
}

// Per-seed CSV rows: column name -> values, in file order.
std::map<std::string, std::vector<double>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> names;
  std::stringstream h(line);
  for (std::string n; std::getline(h, n, ',');) names.push_back(n);
  std::map<std::string, std::vector<double>> cols;
  while (std::getline(in, line)) {
    std::stringstream s(line);
    std::string v;
    for (std::size_t i = 0; i < names.size() && std::getline(s, v, ','); ++i)
      cols[names[i]].push_back(std::stod(v));
  }
  return cols;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("attn-head-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  static inline int counter = 0;
};

const Backend& cpu() {
  static const Backend b = Backend::select("cpu", 0);
  return b;
}

Table run_table(const std::string& name, const std::map<std::string, std::string>& flags) {
  Options o;
  o.quiet = true;
  return run_experiment(*find_experiment(name), o, flags, cpu()).at(0);
}

// The lesson's 2-word model, seed by seed, against training-sweep.
void expect_lesson_matches(const std::string& train, const std::string& config) {
  TempDir dir;
  const std::string mine = dir.file("head.csv"), theirs = dir.file("sweep.csv");
  run_table("attention-sweep", {{"--task", "lesson"},
                                {"--words", "2"},
                                {"--d-model", "2"},
                                {"--d-k", "2"},
                                {"--train", train},
                                {"--seeds", "0:300"},
                                {"--per-seed", mine}});
  run_table("training-sweep", {{"--configs", config},
                               {"--seeds", "0:300"},
                               {"--grad", "analytic"},
                               {"--per-seed", theirs}});
  const auto a = read_csv(mine);
  std::ifstream in(theirs);
  std::string line;
  std::getline(in, line);
  std::vector<double> weights;
  while (std::getline(in, line)) {
    std::stringstream s(line);
    std::string field;
    for (int i = 0; i < 3; ++i) std::getline(s, field, ',');
    weights.push_back(std::stod(field));  // config,seed,weight_on_apple,...
  }
  ASSERT_EQ(a.at("p_1_0").size(), 300u);
  ASSERT_EQ(weights.size(), 300u);
  double worst = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    EXPECT_EQ(a.at("seed")[i], static_cast<double>(i));
    worst = std::max(worst, std::fabs(a.at("p_1_0")[i] - weights[i]));
  }
  EXPECT_LT(worst, 1e-9) << train << " vs " << config;
}

TEST(AttentionSweep, LessonQkvEqualsTrainingSweepAllRandom) {
  expect_lesson_matches("qkv", "all-random");
}
TEST(AttentionSweep, LessonQkEqualsTrainingSweepQkRandom) {
  expect_lesson_matches("qk", "qk-random");
}

// JSD from the spec, written out again here: ½ KL(p‖m) + ½ KL(q‖m), 0 ln 0 = 0.
double jsd_reference(const std::vector<double>& p, const std::vector<double>& q) {
  double s = 0;
  for (std::size_t j = 0; j < p.size(); ++j) {
    const double m = (p[j] + q[j]) / 2;
    if (p[j] > 0) s += p[j] * std::log(p[j] / m) / 2;
    if (q[j] > 0) s += q[j] * std::log(q[j] / m) / 2;
  }
  return s;
}

double cell(const Table& t, const std::string& quantity, const std::string& column) {
  for (const auto& row : t.rows)
    if (std::get<std::string>(row[0]) == quantity) {
      const Cell& c = row[t.column(column)];
      if (const double* d = std::get_if<double>(&c)) return *d;
      if (const std::int64_t* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
    }
  ADD_FAILURE() << "no " << quantity << " / " << column;
  return NAN;
}

TEST(AttentionSweep, MeasuresAgreeWithThePerSeedRows) {
  TempDir dir;
  const std::string rows = dir.file("rows.csv");
  const int n = 4, seeds = 64;
  const Table t = run_table("attention-sweep", {{"--task", "random"},
                                                {"--words", std::to_string(n)},
                                                {"--d-model", "3"},
                                                {"--d-k", "2"},
                                                {"--seeds", "10:74"},
                                                {"--steps", "200"},
                                                {"--lr", "0.05"},
                                                {"--per-seed", rows}});
  const auto c = read_csv(rows);
  ASSERT_EQ(c.at("seed").size(), static_cast<std::size_t>(seeds));
  // Each seed's map (all n rows for the random task), the mean map, JSDs.
  std::vector<std::vector<double>> maps(seeds, std::vector<double>(n * n));
  std::vector<double> mean(n * n, 0.0);
  for (int s = 0; s < seeds; ++s)
    for (int e = 0; e < n * n; ++e) {
      maps[s][e] = c.at("p_" + std::to_string(e / n) + "_" + std::to_string(e % n))[s];
      mean[e] += maps[s][e] / seeds;
    }
  auto map_jsd = [&](const std::vector<double>& a, const std::vector<double>& b) {
    double sum = 0;
    for (int r = 0; r < n; ++r)
      sum += jsd_reference({a.begin() + r * n, a.begin() + (r + 1) * n},
                           {b.begin() + r * n, b.begin() + (r + 1) * n});
    return sum / n;
  };
  double to_mean = 0, pairs = 0;
  for (int s = 0; s < seeds; ++s) {
    const double j = map_jsd(maps[s], mean);
    EXPECT_NEAR(c.at("jsd_to_mean")[s], j, 1e-12);
    to_mean += j / seeds;
  }
  for (int s = 0; s + 1 < seeds; s += 2) pairs += map_jsd(maps[s], maps[s + 1]) / (seeds / 2);
  EXPECT_NEAR(cell(t, "JSD to the mean map", "mean"), to_mean, 1e-12);
  EXPECT_NEAR(cell(t, "JSD between pairs of seeds", "mean"), pairs, 1e-12);
  EXPECT_EQ(cell(t, "JSD between pairs of seeds", "seeds"), seeds / 2);
  // Argmax agreement, per row, the most common argmax (lowest index on a tie).
  double agree = 0;
  for (int r = 0; r < n; ++r) {
    std::vector<int> counts(n, 0);
    for (int s = 0; s < seeds; ++s) {
      int best = 0;
      for (int j = 1; j < n; ++j)
        if (maps[s][r * n + j] > maps[s][r * n + best]) best = j;
      counts[best]++;
    }
    agree += static_cast<double>(*std::max_element(counts.begin(), counts.end())) / seeds / n;
  }
  EXPECT_NEAR(cell(t, "argmax agreement", "mean"), agree, 1e-12);
  // Entry mean and the loss median (numpy's linear quantile).
  EXPECT_NEAR(cell(t, "P[2][1]", "mean"), mean[2 * n + 1], 1e-12);
  std::vector<double> loss = c.at("loss");
  std::sort(loss.begin(), loss.end());
  EXPECT_NEAR(cell(t, "final loss", "p50"), (loss[31] + loss[32]) / 2, 1e-12 * loss[32]);
  // JSD bounds: between 0 and ln 2.
  EXPECT_GE(cell(t, "JSD between pairs of seeds", "min"), 0.0);
  EXPECT_LE(cell(t, "JSD between pairs of seeds", "max"), std::log(2.0));
}

// Exact cases: one seed repeated gives one map: JSD 0, agreement 1, output distance 0; the
// lesson task with W_V trained reaches its target everywhere, so the outputs agree.
// Identical maps give zero distances. Repeated seeds are refused (each seed is one run), so the
// seeds are made identical instead: W_V = I fixed and a start scaled by 1e-300, whose scores
// underflow to exactly 0, so every seed's map stays exactly uniform.
TEST(AttentionSweep, IdenticalSeedsGiveZeroDistances) {
  const Table t = run_table("attention-sweep", {{"--task", "random"},
                                                {"--words", "3"},
                                                {"--d-model", "4"},
                                                {"--d-k", "2"},
                                                {"--seeds", "0:6"},
                                                {"--steps", "50"},
                                                {"--train", "qk"},
                                                {"--init-scale", "1e-300"},
                                                {"--lr", "0.05"}});
  EXPECT_EQ(cell(t, "JSD to the mean map", "max"), 0.0);
  EXPECT_EQ(cell(t, "JSD between pairs of seeds", "max"), 0.0);
  EXPECT_EQ(cell(t, "output distance between pairs", "max"), 0.0);
  EXPECT_EQ(cell(t, "argmax agreement", "mean"), 1.0);
  EXPECT_EQ(cell(t, "P[1][2]", "std"), 0.0);
  // --lr and --init-scale "auto" on the random task: the peers' 0.01 and 0.25.
  EXPECT_EQ(t.run["lr"], 0.05);  // given
  const Table a =
      run_table("attention-sweep",
                {{"--task", "random"}, {"--seeds", "0:2"}, {"--steps", "1"}, {"--lr", "auto"}});
  EXPECT_EQ(a.run["lr"], 0.01);
  EXPECT_EQ(a.run["init_scale"], 0.25);
}

TEST(AttentionSweep, LessonSeedsReachTheSameOutputWithDifferentMaps) {
  const Table t = run_table("attention-sweep", {{"--task", "lesson"}, {"--seeds", "0:200"}});
  EXPECT_EQ(cell(t, "converged (fraction)", "mean"), 1.0);
  EXPECT_LT(cell(t, "output distance between pairs", "max"), 2 * std::sqrt(1e-4));
  EXPECT_GT(cell(t, "JSD between pairs of seeds", "mean"), 0.01);  // the maps differ
  EXPECT_EQ(t.run["lr"], 0.5);  // "auto" on the lesson's task: the lesson's values
  EXPECT_EQ(t.run["init_scale"], 1.0);
}

// Bad input: refused before any work with one line, nothing on stdout, no file.
TEST(AttentionSweep, RefusesBadInputWithOneLine) {
  TempDir dir;
  const std::string file = dir.file("never.csv");
  const std::string base = "--table attention-sweep -q --per-seed " + file + " ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--d-k 0", "--d-k"},
      {"--d-v 0", "--d-v"},
      {"--task random --words 3 --d-model 4 --d-v 3 --train qk", "--d-v must equal --d-model"},
      {"--task lesson --words 1 --d-model 1 --d-k 1", "--words 2 or more"},
      {"--task lesson --words 3 --d-model 2", "--d-model must equal --words"},
      {"--task lesson --words 3 --d-model 3 --d-v 2", "--d-v must equal --words"},
      {"--task random --words 1 --d-model 1 --d-k 1 --seeds 0:1000000000000000",
       "free on that disk"},
      {"--words 0", "--words"},
      {"--lr nan", "--lr"},
  };
  for (const auto& [args, says] : cases) {
    const auto r = test::run_demo(base + args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_FALSE(fs::exists(file)) << args;
  }
  // Memory (no --per-seed): a sweep whose maps would not fit, refused before work (exit 2).
  const auto r = test::run_demo(
      "--table attention-sweep -q --task random --words 64 --d-model 4 --d-k 4 --seeds "
      "0:1000000000000");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("of memory"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// Runs that blow up (losses up to 4.5e307, every one finite): the final loss's mean and std are
// finite and those of the per-seed losses. numpy's np.std gives inf on them (it squares the
// deviations, 1e614), so the reference is exact rational arithmetic in Python, the std rounded
// from 50 digits; and np.std of the losses divided by 2^1000 (exact), times 2^1000.
TEST(AttentionSweep, DivergingRunsGiveAFiniteLossMeanAndStd) {
  if (!test::have_numpy()) GTEST_SKIP() << "python3-numpy not installed";
  TempDir dir;
  const std::string rows = dir.file("rows.csv");
  const Table t = run_table("attention-sweep", {{"--task", "random"},
                                                {"--task-seed", "4"},
                                                {"--words", "5"},
                                                {"--d-model", "6"},
                                                {"--d-k", "4"},
                                                {"--d-v", "6"},
                                                {"--seeds", "0:400"},
                                                {"--steps", "300"},
                                                {"--lr", "0.05"},
                                                {"--init-scale", "0.5"},
                                                {"--per-seed", rows}});
  const auto lines = test::lines_of(
      test::run_python("import csv, math, numpy as np\n"
                       "from fractions import Fraction\n"
                       "from decimal import Decimal, getcontext\n"
                       "rows = list(csv.DictReader(open('" +
                       rows +
                       "')))\n"
                       "used = [float(r['loss']) for r in rows\n"
                       "        if all(math.isfinite(float(v)) for k, v in r.items()\n"
                       "               if k == 'loss' or k.startswith('p_'))]\n"
                       "x = [Fraction(v) for v in used]\n"
                       "m = sum(x) / len(x)\n"
                       "var = sum((v - m) ** 2 for v in x) / len(x)\n"
                       "getcontext().prec = 50\n"
                       "sd = (Decimal(var.numerator) / Decimal(var.denominator)).sqrt()\n"
                       "a = np.array(used)\n"
                       "print(len(used), max(used))\n"
                       "print(repr(float(m)), repr(float(sd)))\n"
                       "print(repr(float(np.std(a / 2.0**1000) * 2.0**1000)))\n"));
  ASSERT_EQ(lines.size(), 3u);
  std::istringstream first(lines[0]), exact(lines[1]);
  double used, largest, mean, sd;
  first >> used >> largest;
  exact >> mean >> sd;
  const double np_std = std::stod(lines[2]);
  EXPECT_GT(largest, 1e307);  // the blow-up this checks
  EXPECT_EQ(cell(t, "final loss", "seeds"), used);
  const double got_mean = cell(t, "final loss", "mean"), got_sd = cell(t, "final loss", "std");
  ASSERT_TRUE(std::isfinite(got_mean) && std::isfinite(got_sd)) << got_mean << " " << got_sd;
  EXPECT_LE(std::fabs(got_mean - mean), 1e-13 * mean);
  EXPECT_LE(std::fabs(got_sd - sd), 1e-13 * sd);
  EXPECT_LE(std::fabs(got_sd - np_std), 1e-13 * sd);
}

// The output distance of two runs far out on opposite sides: every difference finite, the sum of
// their squares (4e308) not. Reference: the same sum in long double (range beyond 1e4900).
TEST(AttentionSweep, OutputDistanceOfHugeOutputsIsFinite) {
  const std::vector<double> a = {1e154, 1.2e154, -3.0, 0.0, 7e153, -1e154};
  const std::vector<double> b = {-1e154, -1.1e154, 5.0, 1e150, -6e153, 1.3e154};
  const int rows = 2;
  long double sq = 0;
  for (std::size_t e = 0; e < a.size(); ++e) {
    const long double d = static_cast<long double>(a[e]) - b[e];
    sq += d * d;
  }
  ASSERT_GT(sq, static_cast<long double>(std::numeric_limits<double>::max()));
  const double want = static_cast<double>(std::sqrt(sq / rows));
  const double got = rms_distance(a.data(), b.data(), static_cast<int>(a.size()), rows);
  EXPECT_LE(std::fabs(got - want), 1e-15 * want) << got << " vs " << want;
  // Ordinary outputs: the plain sum of squares, bit for bit.
  const std::vector<double> c = {0.25, -1.5, 3.0}, d = {0.5, 2.0, -1.0};
  double plain = 0;
  for (int e = 0; e < 3; ++e) plain += (c[e] - d[e]) * (c[e] - d[e]);
  EXPECT_EQ(rms_distance(c.data(), d.data(), 3, 2), std::sqrt(plain / 2));
  // A non-finite output stays non-finite.
  const std::vector<double> bad = {NAN, 0.0, 0.0};
  EXPECT_TRUE(std::isnan(rms_distance(bad.data(), d.data(), 3, 2)));
}

}  // namespace
}  // namespace attn
