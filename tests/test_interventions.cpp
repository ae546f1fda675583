// Tests of experiments/interventions.hpp: Kendall's τ_b against a direct O(k²) count, the
// leave-one-out importance against its definition, the permuted rows' generator, the
// adversarial map against exhaustive search on a fine grid of the simplex (n <= 4) and against
// closed forms, and the interventions' measures on heads whose answer is known exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "experiments/interventions.hpp"
#include "kernels/head.hpp"

namespace attn {
namespace {

// τ_b by its definition: every pair counted, concordant, discordant or tied.
double tau_b_direct(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t k = x.size();
  double nc = 0, nd = 0, tx = 0, ty = 0, n0 = 0;
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = i + 1; j < k; ++j) {
      ++n0;
      const double s = (x[i] - x[j]) * (y[i] - y[j]);
      if (x[i] == x[j]) ++tx;
      if (y[i] == y[j]) ++ty;
      if (s > 0) ++nc;
      if (s < 0) ++nd;
    }
  const double den = (n0 - tx) * (n0 - ty);
  return den > 0 ? (nc - nd) / std::sqrt(den) : NAN;
}

TEST(KendallTauB, MatchesTheDirectCountWithTies) {
  std::mt19937_64 g(7);
  int compared = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int k = 2 + static_cast<int>(g() % 40);
    const int levels = 1 + static_cast<int>(g() % 6);  // few levels: many ties
    std::vector<double> x(k), y(k);
    for (int i = 0; i < k; ++i) {
      x[i] = trial % 3 == 0 ? std::ldexp(static_cast<double>(g() >> 11), -53)
                            : static_cast<double>(g() % levels);
      y[i] = static_cast<double>(g() % (levels + 1));
    }
    const double want = tau_b_direct(x, y), got = kendall_tau_b(x.data(), y.data(), k);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "trial " << trial;
      continue;
    }
    ++compared;
    EXPECT_NEAR(got, want, 1e-12) << "trial " << trial << " k " << k;
    EXPECT_LE(std::fabs(got), 1 + 1e-15);
  }
  EXPECT_GT(compared, 2500);
}

TEST(KendallTauB, KnownValues) {
  const double a[] = {1, 2, 3, 4}, up[] = {10, 20, 30, 40}, down[] = {4, 3, 2, 1};
  EXPECT_DOUBLE_EQ(kendall_tau_b(a, up, 4), 1.0);
  EXPECT_DOUBLE_EQ(kendall_tau_b(a, down, 4), -1.0);
  const double c[] = {1, 1, 1};
  EXPECT_TRUE(std::isnan(kendall_tau_b(c, a, 3)));  // a constant variable
  EXPECT_TRUE(std::isnan(kendall_tau_b(a, up, 1)));
  // x = (1, 2, 2, 3), y = (1, 3, 2, 4): nc 5, nd 0, ties in x 1, in y 0: 5 / sqrt(5 * 6).
  const double x[] = {1, 2, 2, 3}, y[] = {1, 3, 2, 4};
  EXPECT_NEAR(kendall_tau_b(x, y, 4), 5 / std::sqrt(30.0), 1e-15);
  // x = (1, 2, 3, 4), y = (2, 1, 1, 3): nc 3, nd 2, ties in y 1: 1 / sqrt(6 * 5).
  const double x2[] = {1, 2, 3, 4}, y2[] = {2, 1, 1, 3};
  EXPECT_NEAR(kendall_tau_b(x2, y2, 4), 1 / std::sqrt(30.0), 1e-15);
}

TEST(LeaveOneOut, IsTheDistanceToTheRenormalisedRow) {
  std::mt19937_64 g(3);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 200; ++trial) {
    const int k = 2 + trial % 6, d = 1 + trial % 4, stride = d + 1;
    std::vector<double> p(k), v(k * stride), got(k);
    double sum = 0;
    for (double& e : p) sum += (e = std::exp(normal(g)));
    for (double& e : p) e /= sum;
    for (double& e : v) e = normal(g);
    leave_one_out(p.data(), v.data(), k, d, stride, got.data());
    for (int j = 0; j < k; ++j) {
      double dist = 0;
      for (int c = 0; c < d; ++c) {
        double full = 0, without = 0;
        for (int i = 0; i < k; ++i) {
          full += p[i] * v[i * stride + c];
          if (i != j) without += p[i] / (1 - p[j]) * v[i * stride + c];
        }
        dist += (full - without) * (full - without);
      }
      EXPECT_NEAR(got[j], std::sqrt(dist), 1e-12 * (1 + std::sqrt(dist)));
    }
  }
  const double one[] = {0, 1, 0}, v[] = {1, 2, 3};
  double got[3];
  leave_one_out(one, v, 3, 1, 1, got);
  EXPECT_TRUE(std::isnan(got[1]));  // p_j = 1: skipped
  EXPECT_DOUBLE_EQ(got[0], 0.0);
}

TEST(PermuteRow, IsAUniformPermutationFixedByItsKey) {
  const double p[] = {0.1, 0.2, 0.3, 0.4};
  double a[4], b[4];
  permute_row(5, 1, 2, 3, p, 4, a);
  permute_row(5, 1, 2, 3, p, 4, b);
  EXPECT_TRUE(std::equal(a, a + 4, b));  // the same every run
  std::vector<double> sorted(a, a + 4);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_TRUE(std::equal(sorted.begin(), sorted.end(), p));  // a permutation
  // Every key field changes it somewhere.
  int differ = 0;
  for (int field = 0; field < 4; ++field)
    for (int t = 1; t < 20; ++t) {
      permute_row(5 + (field == 0 ? t : 0), 1 + (field == 1 ? t : 0), 2 + (field == 2 ? t : 0),
                  3 + (field == 3 ? t : 0), p, 4, b);
      differ += std::equal(a, a + 4, b) ? 0 : 1;
    }
  EXPECT_GT(differ, 60);
  // Uniform over the 6 orders of 3: chi-square with 5 degrees of freedom below 20.5 (p 0.001).
  std::map<std::vector<double>, int> counts;
  const int draws = 60000;
  for (int s = 0; s < draws; ++s) {
    permute_row(static_cast<std::uint64_t>(s) * 0x9E3779B97F4A7C15ull, 0, 0, 0, p, 3, b);
    counts[std::vector<double>(b, b + 3)]++;
  }
  ASSERT_EQ(counts.size(), 6u);
  double chi = 0;
  for (const auto& [order, c] : counts) chi += std::pow(c - draws / 6.0, 2) / (draws / 6.0);
  EXPECT_LT(chi, 20.5);
}

// The largest JSD(x, p) over the grid points x of the simplex (step 1/steps) that keep
// ‖(x − p) V‖ <= epsilon.
double grid_maximum(const std::vector<double>& p, const std::vector<double>& v, int d,
                    double epsilon, int steps) {
  const int k = static_cast<int>(p.size());
  double best = 0;
  std::vector<int> c(k, 0);
  std::vector<double> x(k);
  // Every composition of `steps` into k parts.
  std::function<void(int, int)> walk = [&](int at, int left) {
    if (at == k - 1) {
      c[at] = left;
      double norm = 0;
      for (int j = 0; j < k; ++j) x[j] = static_cast<double>(c[j]) / steps;
      for (int col = 0; col < d; ++col) {
        double s = 0;
        for (int j = 0; j < k; ++j) s += (x[j] - p[j]) * v[j * d + col];
        norm += s * s;
      }
      if (std::sqrt(norm) <= epsilon) best = std::max(best, jsd(x.data(), p.data(), k));
      return;
    }
    for (int t = 0; t <= left; ++t) {
      c[at] = t;
      walk(at + 1, left - t);
    }
  };
  walk(0, steps);
  return best;
}

double feasibility(const std::vector<double>& p, const std::vector<double>& x,
                   const std::vector<double>& v, int d) {
  double norm = 0;
  for (int col = 0; col < d; ++col) {
    double s = 0;
    for (std::size_t j = 0; j < p.size(); ++j) s += (x[j] - p[j]) * v[j * d + col];
    norm += s * s;
  }
  return std::sqrt(norm);
}

TEST(AdversarialRow, ReachesTheExhaustiveGridMaximum) {
  std::mt19937_64 g(11);
  std::normal_distribution<double> normal;
  double worst = -1, above = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int k = 2 + trial % 3, d = 1 + (trial / 3) % 3;
    const double epsilon = trial % 4 == 0 ? 0.01 : trial % 4 == 1 ? 0.1 : trial % 4 == 2 ? 0.3 : 1;
    const int steps = k == 2 ? 20000 : k == 3 ? 600 : 120;
    std::vector<double> p(k), v(k * d), x(k);
    double sum = 0;
    for (double& e : p) sum += (e = std::exp(1.5 * normal(g)));
    for (double& e : p) e /= sum;
    for (double& e : v) e = normal(g);
    const double mine = adversarial_row(p.data(), v.data(), k, d, d, epsilon, x.data());
    // Feasible: on the simplex, within epsilon, and the JSD returned is x's.
    double total = 0;
    for (double e : x) {
      EXPECT_GE(e, 0.0);
      total += e;
    }
    EXPECT_NEAR(total, 1.0, 1e-12);
    EXPECT_LE(feasibility(p, x, v, d), epsilon * (1 + 1e-12)) << "trial " << trial;
    EXPECT_DOUBLE_EQ(mine, jsd(x.data(), p.data(), k));
    const double grid = grid_maximum(p, v, d, epsilon, steps);
    // The grid's maximum is a feasible value: ours at least it, less the grid's resolution.
    const double resolution = k == 2 ? 2e-4 : k == 3 ? 3e-3 : 1.5e-2;
    EXPECT_GE(mine, grid - resolution) << "trial " << trial << " k " << k << " d " << d;
    worst = std::max(worst, grid - mine);
    above = std::max(above, mine - grid);
  }
  std::printf("adversary vs the grid: grid - ours at most %.3g, ours - grid at most %.3g\n", worst,
              above);
}

// The search asks its monitor for a stop at every step, so that a row of many keys (hours at
// a thousand keys) ends within a step of Ctrl-C: a monitor that says stop after its first
// questions ends the search with NaN after a few more, where the whole search asks thousands.
TEST(AdversarialRow, AStopAskedForEndsTheSearchWithinAStep) {
  struct Counting : Monitor {
    mutable long asked = 0;
    long stop_after = -1;  // never
    bool stop_requested() const override {
      ++asked;
      return stop_after >= 0 && asked > stop_after;
    }
  };
  std::mt19937_64 g(5);
  std::normal_distribution<double> normal;
  const int k = 48, d = 4;
  std::vector<double> p(k), v(k * d), x(k);
  double sum = 0;
  for (double& e : p) sum += (e = std::exp(normal(g)));
  for (double& e : p) e /= sum;
  for (double& e : v) e = normal(g);
  Counting whole;
  const double reached = adversarial_row(p.data(), v.data(), k, d, d, 0.1, x.data(), whole);
  EXPECT_GT(reached, 0.0);
  EXPECT_EQ(reached, adversarial_row(p.data(), v.data(), k, d, d, 0.1));  // asking changes nothing
  EXPECT_GT(whole.asked, 1000) << "a search of " << k << " keys asks at every step";
  for (const long after : {0L, 5L, 200L}) {
    Counting stopping;
    stopping.stop_after = after;
    EXPECT_TRUE(std::isnan(adversarial_row(p.data(), v.data(), k, d, d, 0.1, x.data(), stopping)));
    EXPECT_TRUE(std::isnan(x[0]));
    // Once told, the search asks again only on its way out: a few loops' ends, no more work.
    EXPECT_LE(stopping.asked - after, 16) << after;
  }
}

TEST(AdversarialRow, ClosedForms) {
  // Every key's value the same: every map keeps the output, so the maximum is at a vertex,
  // max_j JSD(e_j, p).
  const std::vector<double> p = {0.5, 0.3, 0.15, 0.05};
  const std::vector<double> same = {1, 2, 1, 2, 1, 2, 1, 2};  // d = 2
  double want = 0;
  for (int j = 0; j < 4; ++j) {
    std::vector<double> e(4, 0.0);
    e[j] = 1;
    want = std::max(want, jsd(e.data(), p.data(), 4));
  }
  EXPECT_NEAR(adversarial_row(p.data(), same.data(), 4, 2, 2, 1e-9), want, 1e-9);
  // Keys 0 and 1 share a value, key 2's is far: with epsilon tiny, the maps that keep the
  // output move mass between keys 0 and 1 only (a segment: k − 1 − rank = 1 dimension), so the
  // maximum is at one of its ends, (p0 + p1, 0, p2) or (0, p0 + p1, p2).
  const std::vector<double> q = {0.2, 0.5, 0.3}, v = {1, 0, 1, 0, -3, 4};  // d = 2
  const std::vector<double> a = {0.7, 0, 0.3}, b = {0, 0.7, 0.3};
  const double ends = std::max(jsd(a.data(), q.data(), 3), jsd(b.data(), q.data(), 3));
  EXPECT_NEAR(adversarial_row(q.data(), v.data(), 3, 2, 2, 1e-10), ends, 1e-8);
  // Values of full rank (d >= k − 1, here independent) and epsilon 0: only p itself.
  const std::vector<double> full = {1, 0, 0, 1, 1, 1};
  EXPECT_NEAR(adversarial_row(q.data(), full.data(), 3, 2, 2, 0.0), 0.0, 1e-12);
  // One visible key: nothing to move.
  const double one[] = {1}, v1[] = {3};
  EXPECT_EQ(adversarial_row(one, v1, 1, 1, 1, 0.5), 0.0);
}

// For small epsilon the maximum is the quadratic form's: JSD(p + δ, p) = ⅛ Σ δ_i² / p_i + O(δ³),
// so the maximum over the sum-zero δ with ‖δ V‖ = ε is ⅛ ε² λ, λ the largest value of
// Σ (δ_i² / p_i) / ‖δ V‖² there: here found by a scan of the sum-zero circle (k = 3).
TEST(AdversarialRow, SmallEpsilonReachesTheQuadraticForm) {
  std::mt19937_64 g(3);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 10; ++trial) {
    const int k = 3, d = 2;
    std::vector<double> p(k), v(k * d);
    double sum = 0;
    for (double& e : p) sum += (e = std::exp(0.5 * normal(g)));
    for (double& e : p) e /= sum;
    for (double& e : v) e = normal(g);
    // The sum-zero plane's orthonormal basis (1, −1, 0)/√2, (1, 1, −2)/√6.
    const double b1[] = {1 / std::sqrt(2.0), -1 / std::sqrt(2.0), 0};
    const double b2[] = {1 / std::sqrt(6.0), 1 / std::sqrt(6.0), -2 / std::sqrt(6.0)};
    double lambda = 0;
    for (int t = 0; t < 200000; ++t) {
      const double angle = M_PI * t / 200000;
      double delta[3], quad = 0, out2 = 0;
      for (int i = 0; i < k; ++i) delta[i] = std::cos(angle) * b1[i] + std::sin(angle) * b2[i];
      for (int i = 0; i < k; ++i) quad += delta[i] * delta[i] / p[i];
      for (int c = 0; c < d; ++c) {
        double o = 0;
        for (int i = 0; i < k; ++i) o += delta[i] * v[i * d + c];
        out2 += o * o;
      }
      lambda = std::max(lambda, quad / out2);
    }
    const double epsilon = 1e-6, want = epsilon * epsilon * lambda / 8;
    EXPECT_NEAR(adversarial_row(p.data(), v.data(), k, d, d, epsilon), want, 1e-3 * want)
        << "trial " << trial;
  }
}

// F is the same with V and epsilon scaled together: values of 1e200 or 1e-200 (whose V Vᵀ would
// overflow or underflow) reach what values of 1 reach. A value not finite: NaN.
TEST(AdversarialRow, ScalesWithTheValues) {
  const std::vector<double> p = {0.2, 0.5, 0.3}, v = {1, 0.5, -0.25, 2, 0.75, -1};  // d = 2
  const double base = adversarial_row(p.data(), v.data(), 3, 2, 2, 0.3);
  EXPECT_GT(base, 0.0);
  for (const double scale : {0x1p664, 0x1p-664}) {  // powers of 2: F exactly the same
    std::vector<double> w = v;
    for (double& e : w) e *= scale;
    EXPECT_EQ(adversarial_row(p.data(), w.data(), 3, 2, 2, 0.3 * scale), base) << scale;
  }
  std::vector<double> bad = v;
  bad[3] = INFINITY;
  EXPECT_TRUE(std::isnan(adversarial_row(p.data(), bad.data(), 3, 2, 2, 0.3)));
  bad[3] = NAN;
  EXPECT_TRUE(std::isnan(adversarial_row(p.data(), bad.data(), 3, 2, 2, 0.3)));
}

// A head whose W_Q and W_K are 0 has uniform maps (every score 0): the uniform and permuted
// interventions change nothing, and patching in a partner of the same weights neither.
TEST(MeasureInterventions, UniformHeadsAreUnchangedByUniformMaps) {
  head::Model m;
  m.n = 4;
  m.d_model = 3;
  m.d_k = 2;
  m.d_v = 2;
  m.heads = 2;
  m.r0 = 1;
  const int inputs = 2;
  std::vector<double> x(inputs * m.n * m.d_model), y(inputs * m.n * m.d_v);
  std::mt19937_64 g(5);
  std::normal_distribution<double> normal;
  for (double& e : x) e = normal(g);
  for (double& e : y) e = normal(g);
  const std::int64_t ws = head::weights_size(m);
  std::vector<double> w(2 * ws, 0.0);
  for (int s = 0; s < 2; ++s)
    for (std::int64_t e = head::layout(m).wv; e < ws; ++e) w[s * ws + e] = 0.5 + e;
  const std::int64_t eval = head::evaluation_size(m, inputs);
  std::vector<double> ev(2 * eval);
  head::evaluate_seeds_cpu(m, w.data(), ws, 2, x.data(), y.data(), nullptr, inputs, ev.data());
  SeedResults shape;
  shape.rows = m.rows();
  shape.n = m.n;
  shape.d_out = m.d_out();
  shape.heads = m.heads;
  shape.inputs = inputs;
  std::vector<double> results(2 * shape.size());
  for (int s = 0; s < 2; ++s) {
    results[s * shape.size()] = ev[s * eval];
    results[s * shape.size() + 1] = 1.0;
    std::copy_n(ev.data() + s * eval, eval, results.data() + s * shape.size() + 2);
  }
  InterventionTask task{m, x.data(), y.data(), inputs, shape, {}, 0.01};
  const std::uint64_t seeds[2] = {1, 2};
  std::vector<double> out(2 * kInterventionFields);
  measure_interventions(task, w.data(), ws, results.data(), seeds, 2, out.data());
  for (int s = 0; s < 2; ++s) {
    const double* o = out.data() + s * kInterventionFields;
    for (int f :
         {kUniformLoss, kUniformOut, kPermutedLoss, kPermutedOut, kPatchedLoss, kPatchedOut})
      EXPECT_EQ(o[f], 0.0) << kInterventionColumns[f];
    EXPECT_TRUE(std::isnan(o[kKnownLoss]));  // no known map
    EXPECT_GE(o[kAdversarialJsd], 0.0);
    EXPECT_TRUE(std::isnan(o[kTauB]));  // uniform weights: every weight tied
  }
}

}  // namespace
}  // namespace attn
