// test_head.cpp (test_kernels): the general head's math (kernels/head.hpp), on the CPU.
// - The analytic gradient (softmax Jacobian) against central differences, on random shapes
//   n <= 16, d <= 32, at 1e-6 relative; one training step (both schedules) against the same.
// - The CPU's training honours a stop within a step, and watching it changes no bit; its lane
//   packs give the bits of one seed trained in plain doubles.
// The table built on it, `demo --table attention-sweep`, is test_attention_sweep.cpp's.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "head.hpp"
#include "monitor.hpp"

namespace attn {
namespace {

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

// The CPU's lane packs (head_cpu.cpp, head_pack.hpp: blocked products, whole-pack max, 1/√d_k
// where exact) against head.hpp's training of one seed in plain doubles, the GPU's arithmetic:
// every result bit for bit, on random shapes (d_k a power of two or not, loss rows from 0 or
// later, tails of every block size), both schedules, --train qk, both gradients, and an X with
// zeros and signed weights (products of −0). 11 seeds: a full lane group and a short one.
TEST(HeadTraining, CpuLanePacksEqualOneSeedInDoublesBitForBit) {
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 40; ++trial) {
    Case c = random_case(rng);
    std::uniform_int_distribution<int> words(1, 11), dims(1, 19);
    c.m.n = trial == 0 ? 8 : words(rng);
    c.m.d_model = trial == 0 ? 16 : dims(rng);
    const int powers[] = {1, 4, 16};
    c.m.d_k = trial == 0 ? 16 : trial % 3 == 0 ? powers[trial % 9 / 3] : dims(rng);
    c.m.d_v = trial == 0 ? 16 : dims(rng);
    c.m.r0 = trial % 2 ? 0 : std::uniform_int_distribution<int>(0, c.m.n - 1)(rng);
    c.m.schedule = trial % 4 < 2 ? head::Schedule::sequential : head::Schedule::simultaneous;
    c.m.train_values = trial % 5 != 4;
    if (!c.m.train_values) c.m.d_v = c.m.d_model;
    c.m.grad = trial % 8 == 7 ? head::Grad::numeric : head::Grad::analytic;
    c.m.steps = c.m.grad == head::Grad::numeric ? 2 : 7;
    c.m.lr = 0.1;
    c.m.init_scale = 0.5;
    std::normal_distribution<double> normal;
    c.x.resize(c.m.n * c.m.d_model);
    c.y.resize(c.m.n * c.m.d_v);
    for (double& v : c.x) v = trial % 6 == 5 ? (rng() % 3 == 0 ? 1.0 : 0.0) : normal(rng);
    for (double& v : c.y) v = normal(rng);
    c.m.x = c.x.data();
    c.m.y = c.y.data();
    SCOPED_TRACE("trial " + std::to_string(trial) + ": n " + std::to_string(c.m.n) + " d_model " +
                 std::to_string(c.m.d_model) + " d_k " + std::to_string(c.m.d_k) + " d_v " +
                 std::to_string(c.m.d_v) + " r0 " + std::to_string(c.m.r0));
    const std::int64_t count = 11, size = head::result_size(c.m);
    std::vector<std::uint64_t> seeds(count);
    for (std::int64_t i = 0; i < count; ++i) seeds[i] = 100 + 7 * i;
    std::vector<double> packs(count * size);
    head::train_seeds_cpu(c.m, seeds.data(), count, packs.data());
    for (std::int64_t i = 0; i < count; ++i) {
      std::vector<double> ws(head::layout(c.m).total), one(size);
      auto store = [&ws](std::int64_t at, double v) { ws[at] = v; };
      head::initial_weights(c.m, seeds[i], store);
      head::train<double>(c.m, ws.data());
      auto get = [&ws](std::int64_t at) { return ws[at]; };
      head::write_result(c.m, get, one.data());
      ASSERT_EQ(std::memcmp(one.data(), packs.data() + i * size, sizeof(double) * size), 0)
          << "seed " << seeds[i];
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

}  // namespace
}  // namespace attn
