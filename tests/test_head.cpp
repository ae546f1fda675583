// test_head.cpp (test_kernels): the general head's math (kernels/head.hpp), on the CPU.
// - The analytic gradient (softmax Jacobian) against central differences, on random shapes
//   n <= 16, d <= 32, at 1e-6 relative; one training step (both schedules) against the same.
// - Many inputs: the loss and the gradient are the mean of the inputs' (against each input
//   alone), the analytic gradient against central differences.
// - The CPU's training honours a stop within a step, and watching it changes no bit; its lane
//   packs give the bits of one seed trained in plain doubles, one input or many.
// - The measurement (evaluate_inputs, evaluate_seeds_cpu) from the final weights: the
//   training's own loss and maps on the training inputs, bit for bit; a replaced map's output.
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

// The change of the weights (the first start.size() elements of ws) from start.
std::vector<double> changes(const std::vector<double>& ws, const std::vector<double>& start) {
  std::vector<double> d(start.size());
  for (std::size_t e = 0; e < start.size(); ++e) d[e] = ws[e] - start[e];
  return d;
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

// The case with `inputs` inputs: X and Y drawn again for all of them (stacked rows).
void with_inputs(Case& c, std::mt19937_64& rng, int inputs) {
  std::normal_distribution<double> normal;
  c.m.inputs = inputs;
  c.x.resize(static_cast<std::size_t>(inputs) * c.m.n * c.m.d_model);
  c.y.resize(static_cast<std::size_t>(inputs) * c.m.n * c.m.d_out());
  for (double& v : c.x) v = normal(rng);
  for (double& v : c.y) v = normal(rng);
  c.m.x = c.x.data();
  c.m.y = c.y.data();
  const std::vector<double> weights(c.ws.begin(), c.ws.begin() + head::layout(c.m).q);
  c.ws.assign(head::layout(c.m).total, 0.0);
  std::copy(weights.begin(), weights.end(), c.ws.begin());
}

// The version-2 options on a case (spec "Version 2"), varied with the trial: 1 to 3 heads (the
// widths made multiples of it), causal or not, the three scales, --train qkvo (W_O, and targets
// d_model wide) on some trials; X, Y and the weights drawn again for the new shapes.
void vary(Case& c, std::mt19937_64& rng, int trial) {
  std::uniform_int_distribution<int> heads(1, 3), width(1, 5);
  std::normal_distribution<double> normal;
  head::Model& m = c.m;
  m.heads = heads(rng);
  m.d_k = m.heads * width(rng);
  m.d_v = m.heads * width(rng);
  m.causal = trial % 2 == 1;
  m.scale = trial % 3 == 0   ? head::Scale::sqrt
            : trial % 3 == 1 ? head::Scale::none
                             : head::Scale::factor;
  m.scale_factor = 0.7;
  m.train_values = true;
  m.train_output = trial % 4 >= 2;
  c.x.resize(m.n * m.d_model);
  c.y.resize(m.n * m.d_out());
  for (double& v : c.x) v = normal(rng);
  for (double& v : c.y) v = normal(rng);
  m.x = c.x.data();
  m.y = c.y.data();
  const head::Layout l = head::layout(m);
  c.ws.assign(l.total, 0.0);
  for (std::int64_t e = 0; e < l.q; ++e) c.ws[e] = 0.5 * normal(rng);  // W_Q, W_K, W_V, W_O
}

std::string describe(const head::Model& m) {
  return "inputs " + std::to_string(m.inputs) + " n " + std::to_string(m.n) + " d_model " +
         std::to_string(m.d_model) + " d_k " + std::to_string(m.d_k) + " d_v " +
         std::to_string(m.d_v) + " r0 " + std::to_string(m.r0) + " heads " +
         std::to_string(m.heads) + (m.causal ? " causal" : "") + " scale " +
         std::to_string(static_cast<int>(m.scale)) + (m.train_output ? " qkvo" : "");
}

// The analytic gradient of every trained matrix at the weights in c.ws, in their order in
// [0, layout.q) (W_Q, W_K, W_V, then W_O): head.hpp's own steps in Adam's mode, where each
// gradient is stored in the gradient array instead of applied.
std::vector<double> analytic_gradient(const Case& c) {
  head::Model m = c.m;
  m.optimizer = head::Optimizer::adam;
  const head::Layout l = head::layout(m);
  std::vector<double> ws(l.total, 0.0);
  std::copy(c.ws.begin(), c.ws.begin() + l.q, ws.begin());
  head::forward<double>(m, l, ws.data());
  head::backward_outputs<double>(m, l, ws.data());
  head::backward_scores<double>(m, l, ws.data());
  for (int which = 0; which < m.trained(); ++which)
    head::descend_of<double>(m, l, ws.data(), which);
  return std::vector<double>(ws.begin() + l.g, ws.begin() + l.g + head::trained_weights(m));
}

TEST(HeadGradient, AnalyticMatchesCentralDifferencesOnRandomShapes) {
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 40; ++trial) {
    Case c = random_case(rng);
    const std::vector<double> numeric = numeric_gradient(c, 1e-5);
    EXPECT_LT(rel_norm(analytic_gradient(c), numeric), 1e-6) << describe(c.m);
  }
}

// The same with heads, a causal mask, the scales and W_O (spec "Version 2").
TEST(HeadGradient, AnalyticMatchesCentralDifferencesWithHeadsMasksAndOutputProjection) {
  std::mt19937_64 rng(21);
  for (int trial = 0; trial < 48; ++trial) {
    Case c = random_case(rng);
    vary(c, rng, trial);
    const std::vector<double> numeric = numeric_gradient(c, 1e-5);
    EXPECT_LT(rel_norm(analytic_gradient(c), numeric), 1e-6) << describe(c.m);
    if (c.m.causal) {  // a masked weight is exactly 0
      head::forward<double>(c.m, head::layout(c.m), c.ws.data());
      const head::Layout l = head::layout(c.m);
      for (int h = 0; h < c.m.heads; ++h)
        for (int i = c.m.r0; i < c.m.n; ++i)
          for (int j = i + 1; j < c.m.n; ++j)
            ASSERT_EQ(c.ws[l.p + (h * c.m.n + i) * c.m.n + j], 0.0) << describe(c.m);
    }
  }
}

// Many inputs (spec "Version 3"): the analytic gradient against central differences of the
// mean loss, with heads, masks, the scales and W_O.
TEST(HeadGradient, AnalyticMatchesCentralDifferencesOverManyInputs) {
  std::mt19937_64 rng(22);
  for (int trial = 0; trial < 24; ++trial) {
    Case c = random_case(rng);
    vary(c, rng, trial);
    with_inputs(c, rng, 2 + trial % 4);
    const std::vector<double> numeric = numeric_gradient(c, 1e-5);
    EXPECT_LT(rel_norm(analytic_gradient(c), numeric), 1e-6) << describe(c.m);
  }
}

// The loss and gradient over B inputs are the mean of each input's alone (one-input models on
// the same weights): the mean's 1/B in the loss and in dF, the sums over the stacked rows.
TEST(HeadGradient, ManyInputsGiveTheMeanOfEachInputsLossAndGradient) {
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 16; ++trial) {
    Case c = random_case(rng);
    vary(c, rng, trial);
    const int inputs = 2 + trial % 5;
    with_inputs(c, rng, inputs);
    const head::Layout l = head::layout(c.m);
    std::vector<double> ws = c.ws;
    const double loss = head::loss<double>(c.m, l, ws.data());
    const std::vector<double> gradient = analytic_gradient(c);
    double mean_loss = 0;
    std::vector<double> mean_gradient(gradient.size(), 0.0);
    for (int b = 0; b < inputs; ++b) {
      Case one = c;
      one.m.inputs = 1;
      one.m.x = c.x.data() + static_cast<std::size_t>(b) * c.m.n * c.m.d_model;
      one.m.y = c.y.data() + static_cast<std::size_t>(b) * c.m.n * c.m.d_out();
      one.ws.assign(head::layout(one.m).total, 0.0);
      std::copy(c.ws.begin(), c.ws.begin() + l.q, one.ws.begin());
      std::vector<double> w1 = one.ws;
      mean_loss += head::loss<double>(one.m, head::layout(one.m), w1.data()) / inputs;
      const std::vector<double> g = analytic_gradient(one);
      for (std::size_t e = 0; e < g.size(); ++e) mean_gradient[e] += g[e] / inputs;
    }
    EXPECT_NEAR(loss, mean_loss, 1e-13 * mean_loss) << describe(c.m);
    EXPECT_LT(rel_norm(gradient, mean_gradient), 1e-13) << describe(c.m);
  }
}

// Adam against its definition by hand (spec "Optimizer"): two sequential steps, each matrix's
// gradient (analytic_gradient, checked against central differences above) at the newest
// weights, m, v and the bias corrections with std::pow, on random shapes with heads and W_O.
TEST(HeadAdam, TwoStepsEqualAHandComputation) {
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 8; ++trial) {
    Case c = random_case(rng);
    vary(c, rng, trial);
    c.m.optimizer = head::Optimizer::adam;
    c.m.steps = 2;
    c.m.lr = 0.01;
    const head::Layout l = head::layout(c.m);
    c.ws.resize(l.total, 0.0);
    Case by_hand = c;
    const std::int64_t weights = head::trained_weights(c.m);
    std::vector<double> m1(weights, 0.0), v1(weights, 0.0);
    for (int t = 1; t <= 2; ++t)
      for (int which = 0; which < c.m.trained(); ++which) {
        const std::vector<double> g = analytic_gradient(by_hand);
        const std::int64_t first = head::gradient_at(c.m, which);
        const std::int64_t last = first + static_cast<std::int64_t>(head::matrix_rows(c.m, which)) *
                                              head::matrix_cols(c.m, which);
        for (std::int64_t e = first; e < last; ++e) {
          m1[e] = 0.9 * m1[e] + (1 - 0.9) * g[e];
          v1[e] = 0.999 * v1[e] + (1 - 0.999) * g[e] * g[e];
          const double mh = m1[e] / (1 - std::pow(0.9, t)), vh = v1[e] / (1 - std::pow(0.999, t));
          by_hand.ws[e] -= 0.01 * mh / (std::sqrt(vh) + 1e-8);
        }
      }
    const std::vector<double> start(c.ws.begin(), c.ws.begin() + l.q);
    head::train<double>(c.m, c.ws.data());
    EXPECT_LT(rel_norm(changes(c.ws, start), changes(by_hand.ws, start)), 1e-12) << describe(c.m);
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
      ws.resize(head::layout(c.m).total, 0.0);  // the numeric gradient's array
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
  EXPECT_LT(rel_norm(changes(c.ws, start), changes(by_hand.ws, start)), 1e-6);
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
// zeros and signed weights (products of −0); from trial 20 on also heads, causal masks, the three
// scales, W_O and Adam; from trial 8 on many inputs every other trial. 11 seeds: a full lane
// group and a short one.
TEST(HeadTraining, CpuLanePacksEqualOneSeedInDoublesBitForBit) {
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 64; ++trial) {
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
    if (trial >= 20) {  // version 2: heads, masks, scales, W_O, Adam
      c.m.heads = 1 + trial % 3;
      c.m.d_k = c.m.heads * (1 + c.m.d_k % 6);
      c.m.d_v = c.m.heads * (1 + c.m.d_v % 6);
      c.m.d_model = c.m.train_values ? c.m.d_model : c.m.d_v;
      c.m.causal = trial % 2 == 0;
      c.m.scale = trial % 5 < 2   ? head::Scale::sqrt
                  : trial % 5 < 4 ? head::Scale::none
                                  : head::Scale::factor;
      c.m.scale_factor = 0.3;
      c.m.train_output = c.m.train_values && trial % 4 != 1;
      c.m.optimizer = trial % 3 == 2 ? head::Optimizer::adam : head::Optimizer::sgd;
      c.m.lr = c.m.optimizer == head::Optimizer::adam ? 0.01 : 0.05;
    }
    // Many inputs (version 3) from trial 8 on, every other trial: the stacked products, and
    // with loss rows from r0 > 0 the Xᵀ and Oᵀ chains carried from input to input.
    c.m.inputs = trial >= 8 && trial % 2 == 0 ? 2 + trial % 5 : 1;
    std::normal_distribution<double> normal;
    c.x.resize(static_cast<std::size_t>(c.m.inputs) * c.m.n * c.m.d_model);
    c.y.resize(static_cast<std::size_t>(c.m.inputs) * c.m.n * c.m.d_out());
    for (double& v : c.x) v = trial % 6 == 5 ? (rng() % 3 == 0 ? 1.0 : 0.0) : normal(rng);
    for (double& v : c.y) v = normal(rng);
    c.m.x = c.x.data();
    c.m.y = c.y.data();
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + describe(c.m));
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

// Frozen maps (spec "Version 3", "Frozen maps"): the lane packs give one seed's bits in doubles;
// W_Q and W_K stay the starting draws bit for bit; every map on the rows of R is the frozen one
// (1/k on the k visible keys, or the given map's visible entries, 0 at the masked keys whatever
// the given map holds there); the measurement from the final weights gives the training's loss
// and those maps. On random shapes: 1 to 3 heads, causal or not, qkv and qkvo, both schedules,
// SGD and Adam, analytic and numeric gradients, one input or many, loss rows from r0 >= 0.
TEST(HeadTraining, CpuLanePacksTrainTheValuesAloneUnderAFrozenMap) {
  std::mt19937_64 rng(29);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 24; ++trial) {
    Case c = random_case(rng);
    head::Model& m = c.m;
    m.n = 1 + static_cast<int>(rng() % 7);
    m.d_model = 1 + static_cast<int>(rng() % 9);
    m.r0 = static_cast<int>(rng() % m.n);
    m.heads = 1 + trial % 3;
    m.d_k = m.heads * (1 + static_cast<int>(rng() % 4));
    m.d_v = m.heads * (1 + static_cast<int>(rng() % 4));
    m.causal = trial % 2 == 0;
    m.train_values = true;
    m.train_output = trial % 4 >= 2;
    m.schedule = trial % 8 < 4 ? head::Schedule::sequential : head::Schedule::simultaneous;
    m.optimizer = trial % 3 == 1 ? head::Optimizer::adam : head::Optimizer::sgd;
    m.grad = trial % 6 == 5 ? head::Grad::numeric : head::Grad::analytic;
    m.lr = m.optimizer == head::Optimizer::adam ? 0.01 : 0.02;
    m.init_scale = 0.5;
    m.steps = m.grad == head::Grad::numeric ? 2 : 6;
    m.inputs = 1 + trial % 4;
    m.map = trial % 2 == 0 ? head::MapMode::uniform : head::MapMode::known;
    const int rows = m.rows();
    c.x.resize(static_cast<std::size_t>(m.inputs) * m.n * m.d_model);
    c.y.resize(static_cast<std::size_t>(m.inputs) * m.n * m.d_out());
    for (double& v : c.x) v = normal(rng);
    for (double& v : c.y) v = normal(rng);
    m.x = c.x.data();
    m.y = c.y.data();
    // A known map: each visible row a random distribution; 7 at the masked keys, never read.
    std::vector<double> known;
    if (m.map == head::MapMode::known) {
      known.assign(static_cast<std::size_t>(m.inputs) * m.heads * rows * m.n, 7.0);
      for (std::size_t row = 0; row < known.size() / m.n; ++row) {
        const int keys = m.last_key(m.r0 + static_cast<int>(row % rows)) + 1;
        double sum = 0;
        for (int j = 0; j < keys; ++j) sum += known[row * m.n + j] = std::fabs(normal(rng)) + 0.1;
        for (int j = 0; j < keys; ++j) known[row * m.n + j] /= sum;
      }
      m.known = known.data();
    }
    const auto frozen = [&](int b, int h, int i, int j) {
      const int keys = m.last_key(i) + 1;
      if (j >= keys) return 0.0;
      if (m.map == head::MapMode::uniform) return 1.0 / keys;
      return known[((static_cast<std::size_t>(b) * m.heads + h) * rows + (i - m.r0)) * m.n + j];
    };
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + describe(m) +
                 (m.map == head::MapMode::known ? " known" : " uniform") +
                 (m.grad == head::Grad::numeric ? " numeric" : ""));
    const std::int64_t count = 9, size = head::result_size(m);
    const std::int64_t query_key = 2 * static_cast<std::int64_t>(m.d_model) * m.d_k;
    std::vector<std::uint64_t> seeds(count);
    for (std::int64_t i = 0; i < count; ++i) seeds[i] = 40 + 3 * i;
    std::vector<double> packs(count * size);
    head::train_seeds_cpu(m, seeds.data(), count, packs.data());
    const std::int64_t eval = head::evaluation_size(m, m.inputs);
    std::vector<double> measured(count * eval);
    head::evaluate_seeds_cpu(m, packs.data() + 2, size, count, m.x, m.y, m.known, m.inputs,
                             measured.data());
    for (std::int64_t i = 0; i < count; ++i) {
      const head::Layout l = head::layout(m);
      std::vector<double> ws(l.total), one(size), start(head::weights_size(m));
      auto store = [&ws](std::int64_t at, double v) { ws[at] = v; };
      head::initial_weights(m, seeds[i], store);
      std::copy_n(ws.begin(), start.size(), start.begin());
      head::train<double>(m, ws.data());
      auto get = [&ws](std::int64_t at) { return ws[at]; };
      head::write_result(m, get, one.data());
      const double* result = packs.data() + i * size;
      ASSERT_EQ(std::memcmp(one.data(), result, sizeof(double) * size), 0) << "seed " << seeds[i];
      EXPECT_EQ(std::memcmp(result + 2, start.data(), sizeof(double) * query_key), 0)
          << "W_Q, W_K of seed " << seeds[i];
      EXPECT_NE(std::memcmp(result + 2 + query_key, start.data() + query_key,
                            sizeof(double) * (start.size() - query_key)),
                0)
          << "W_V (W_O) of seed " << seeds[i];
      EXPECT_TRUE(std::isfinite(result[0]) && result[0] < result[1]) << "the loss falls";
      const double* e = measured.data() + i * eval;
      EXPECT_EQ(std::memcmp(&e[0], result, 8), 0) << "the measured loss, seed " << seeds[i];
      for (int b = 0; b < m.inputs; ++b)
        for (int h = 0; h < m.heads; ++h)
          for (int i_ = m.r0; i_ < m.n; ++i_)
            for (int j = 0; j < m.n; ++j) {
              const double want = frozen(b, h, i_, j);
              ASSERT_EQ(ws[head::map_at(m, l.p, b, h) + i_ * m.n + j], want);
              ASSERT_EQ(e[1 + ((b * m.heads + h) * rows + (i_ - m.r0)) * m.n + j], want);
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
      c.m.steps = grad == head::Grad::numeric ? 1 : 2;
      c.m.grad = grad;
      c.m.schedule = schedule;
      c.ws.resize(head::layout(c.m).total, 0.1);
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

// The measurement from the final weights (evaluate_inputs, evaluate_seeds_cpu). On the training
// inputs it gives the training's own loss and, for each input, the maps and outputs the
// training's workspace holds, bit for bit; the CPU's lane packs give what each seed alone gives
// in doubles; maps given to replace the computed ones are what the outputs are computed from.
TEST(HeadEvaluation, FinalWeightsOnTheTrainingInputsGiveTheTrainingsOwnNumbers) {
  std::mt19937_64 rng(41);
  for (int trial = 0; trial < 12; ++trial) {
    Case c = random_case(rng);
    vary(c, rng, trial);
    c.m.n = std::min(c.m.n, 6);
    c.m.r0 = std::min(c.m.r0, c.m.n - 1);
    c.m.steps = 5;
    c.m.lr = 0.002;
    c.m.init_scale = 0.5;
    c.m.optimizer = trial % 3 == 0 ? head::Optimizer::adam : head::Optimizer::sgd;
    with_inputs(c, rng, 1 + trial % 4);
    SCOPED_TRACE(describe(c.m));
    const head::Model& m = c.m;
    const std::int64_t count = 9, size = head::result_size(m);
    std::vector<std::uint64_t> seeds(count);
    for (std::int64_t i = 0; i < count; ++i) seeds[i] = 3 + 5 * i;
    std::vector<double> trained(count * size);
    head::train_seeds_cpu(m, seeds.data(), count, trained.data());
    const int inputs = m.inputs;
    const std::int64_t eval = head::evaluation_size(m, inputs);
    std::vector<double> measured(count * eval);
    head::evaluate_seeds_cpu(m, trained.data() + 2, size, count, m.x, m.y, nullptr, inputs,
                             measured.data());
    const int rows = m.rows(), n = m.n, d = m.d_out();
    const std::int64_t maps = static_cast<std::int64_t>(inputs) * m.heads * rows * n;
    for (std::int64_t i = 0; i < count; ++i) {
      // The training in doubles, its workspace after the last step.
      const head::Layout l = head::layout(m);
      std::vector<double> ws(l.total);
      auto store = [&ws](std::int64_t at, double v) { ws[at] = v; };
      head::initial_weights(m, seeds[i], store);
      head::train<double>(m, ws.data());
      const double* e = measured.data() + i * eval;
      EXPECT_EQ(std::memcmp(&e[0], &trained[i * size], 8), 0) << "loss, seed " << seeds[i];
      for (int b = 0; b < inputs; ++b)
        for (int h = 0; h < m.heads; ++h)
          for (int r = 0; r < rows; ++r)
            for (int j = 0; j < n; ++j)
              ASSERT_EQ(std::memcmp(&e[1 + ((b * m.heads + h) * rows + r) * n + j],
                                    &ws[head::map_at(m, l.p, b, h) + (m.r0 + r) * n + j], 8),
                        0);
      for (int b = 0; b < inputs; ++b)
        for (int r = 0; r < rows; ++r)
          for (int k = 0; k < d; ++k)
            ASSERT_EQ(
                std::memcmp(&e[1 + maps + (b * rows + r) * d + k],
                            &ws[l.f + (static_cast<std::int64_t>(b) * n + m.r0 + r) * d + k], 8),
                0);
      // evaluate_inputs in doubles on this seed alone: the packs' bits.
      std::vector<double> one(head::layout(head::one_input(m)).total);
      std::copy(trained.begin() + i * size + 2, trained.begin() + (i + 1) * size, one.begin());
      head::KeepMaps keep;
      auto nothing = [](const head::Model&, const head::Layout&, double*, int) {};
      const double loss =
          head::evaluate_inputs<double>(m, one.data(), m.x, m.y, nullptr, inputs, keep, nothing);
      EXPECT_EQ(std::memcmp(&loss, &e[0], 8), 0);
    }
    // Replacing every map by the computed one changes nothing; by the uniform map over the
    // visible keys gives each output row the mean of the visible value rows (times W_O).
    std::vector<double> again(count * eval);
    std::vector<double> same(count * maps);
    for (std::int64_t i = 0; i < count; ++i)
      std::copy(measured.begin() + i * eval + 1, measured.begin() + i * eval + 1 + maps,
                same.begin() + i * maps);
    head::evaluate_seeds_cpu(m, trained.data() + 2, size, count, m.x, m.y, nullptr, inputs,
                             again.data(), same.data());
    EXPECT_EQ(std::memcmp(again.data(), measured.data(), 8 * again.size()), 0);
    for (double v : measured) ASSERT_TRUE(std::isfinite(v)) << "a case that diverged";
    std::vector<double> uniform(count * maps);
    for (std::int64_t i = 0; i < count; ++i)
      for (int b = 0; b < inputs; ++b)
        for (int h = 0; h < m.heads; ++h)
          for (int r = 0; r < rows; ++r) {
            const int k = m.last_key(m.r0 + r) + 1;
            for (int j = 0; j < n; ++j)
              uniform[i * maps + ((b * m.heads + h) * rows + r) * n + j] = j < k ? 1.0 / k : 0.0;
          }
    head::evaluate_seeds_cpu(m, trained.data() + 2, size, count, m.x, m.y, nullptr, inputs,
                             again.data(), uniform.data());
    for (std::int64_t i = 0; i < count; ++i) {
      const double* w = trained.data() + i * size + 2;
      const head::Layout l = head::layout(m);
      for (int b = 0; b < inputs; ++b)
        for (int r = 0; r < rows; ++r) {
          const int k = m.last_key(m.r0 + r) + 1;
          std::vector<double> o(m.d_v, 0.0);  // mean of V's visible rows: X W_V averaged
          for (int j = 0; j < k; ++j)
            for (int t = 0; t < m.d_v; ++t)
              for (int a = 0; a < m.d_model; ++a)
                o[t] += m.x[(static_cast<std::int64_t>(b) * n + j) * m.d_model + a] *
                        w[l.wv + a * m.d_v + t] / k;
          for (int col = 0; col < d; ++col) {
            double want = 0;
            if (m.train_output)
              for (int t = 0; t < m.d_v; ++t) want += o[t] * w[l.wo + t * m.d_model + col];
            else
              want = o[col];
            EXPECT_NEAR(again[i * eval + 1 + maps + (b * rows + r) * d + col], want,
                        1e-12 * (1 + std::fabs(want)));
          }
        }
    }
  }
}

// --nudge's second run starts from W_Q[0][0] one ulp up (towards +inf), every other weight the
// same draw.
TEST(HeadStart, NudgeMovesTheFirstQueryWeightOneUlpUp) {
  head::Model m;
  m.n = 3;
  m.d_model = 4;
  m.d_k = 2;
  m.d_v = 3;
  m.train_output = true;
  for (std::uint64_t seed : {0ull, 7ull, 123456789ull}) {
    std::vector<double> plain(head::weights_size(m)), nudged(plain.size());
    head::start_weights(m, seed, plain.data());
    m.nudge = true;
    head::start_weights(m, seed, nudged.data());
    m.nudge = false;
    EXPECT_EQ(nudged[0], std::nextafter(plain[0], INFINITY));
    EXPECT_GT(nudged[0], plain[0]);
    for (std::size_t e = 1; e < plain.size(); ++e) EXPECT_EQ(nudged[e], plain[e]) << e;
  }
}

}  // namespace
}  // namespace attn
