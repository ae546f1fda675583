// test_saturation.cpp: the softmax-saturation pipeline's CPU twin (saturation.hpp).
//
// What is checked, and against what:
// - each row's six statistics lie in the ranges the mathematics allows;
// - a few rows recomputed from the documented layout (q first, then the keys, from normals4 with
//   stream kStreamTag | d_k and item = row), with softmax and the Jacobian built explicitly in
//   long double;
// - the distribution of the row statistics against an independent Monte Carlo of the same model
//   (q, k_j i.i.d. N(0, 1) from std::mt19937_64), within 5 standard errors;
// - the limits: without scaling, scores have standard deviation sqrt(d_k), so the gap between
//   the two largest of 3 scores is O(sqrt(d_k)) and the weights go one-hot as d_k grows;
// - determinism and independence of how rows are split into calls (exact bits).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "helpers.hpp"
#include "philox.hpp"
#include "saturation.hpp"

namespace attn {
namespace {

using saturation::kStats;
using saturation::Params;

std::vector<double> run(const Params& p, std::uint64_t first, std::int64_t rows) {
  std::vector<double> out(static_cast<std::size_t>(rows) * kStats, -1.0);
  saturation::row_stats_cpu(p, first, rows, out.data());
  return out;
}

Params params(std::uint32_t d_k, int keys = 3, std::uint64_t seed = 0) {
  Params p;
  p.seed = seed;
  p.d_k = d_k;
  p.keys = keys;
  return p;
}

struct MeanSe {
  double mean = 0, se = 0;
};

// Mean and standard error of statistic `stat` over rows.
MeanSe mean_se(const std::vector<double>& out, int stat) {
  const std::size_t rows = out.size() / kStats;
  long double s = 0, s2 = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const long double v = out[r * kStats + stat];
    s += v;
    s2 += v * v;
  }
  const long double m = s / rows, var = s2 / rows - m * m;
  return {static_cast<double>(m), static_cast<double>(std::sqrt(std::fmax(0.0L, var) / rows))};
}

// Softmax statistics of a row of scores, explicitly, in long double: largest weight, entropy and
// the Frobenius norm of J = diag(p) - p p^T built entry by entry.
std::array<double, 3> explicit_stats(const std::vector<long double>& s, long double scale) {
  const int n = static_cast<int>(s.size());
  long double m = -INFINITY;
  for (auto v : s) m = std::fmax(m, scale * v);
  std::vector<long double> p(n);
  long double total = 0;
  for (int j = 0; j < n; ++j) total += p[j] = std::exp(scale * s[j] - m);
  long double mx = 0, ent = 0, f2 = 0;
  for (int i = 0; i < n; ++i) {
    p[i] /= total;
    mx = std::fmax(mx, p[i]);
    if (p[i] > 0) ent -= p[i] * std::log(p[i]);
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const long double v = (i == j ? p[i] : 0.0L) - p[i] * p[j];
      f2 += v * v;
    }
  return {static_cast<double>(mx), static_cast<double>(ent), static_cast<double>(std::sqrt(f2))};
}

// The statistics of one row of the model from an independent generator.
std::array<double, kStats> model_row(std::mt19937_64& gen, int d, int keys) {
  std::normal_distribution<double> no(0.0, 1.0);
  std::vector<long double> q(d), s(keys, 0.0L);
  for (auto& v : q) v = no(gen);
  for (int j = 0; j < keys; ++j)
    for (int c = 0; c < d; ++c) s[j] += q[c] * no(gen);
  const auto u = explicit_stats(s, 1.0L), sc = explicit_stats(s, 1.0L / std::sqrt((long double)d));
  return {u[0], u[1], u[2], sc[0], sc[1], sc[2]};
}

// ---- Ranges ---------------------------------------------------------------------------------

// Max weight in [1/n, 1]; entropy in [0, ln n]; ||J||_F in [0, 1/2] (||J||_F^2 =
// sum p^2 - 2 sum p^3 + (sum p^2)^2 <= sum p^2 - sum p^3 = sum p^2 (1 - p) <= 1/4 sum p,
// using (sum p^2)^2 <= sum p sum p^3 by Cauchy-Schwarz).
TEST(Saturation, StatisticsLieInTheirRanges) {
  for (std::uint32_t d_k : {1u, 4u, 64u, 256u})
    for (int keys : {2, 3, 8}) {
      const auto out = run(params(d_k, keys, 11), 0, 300);
      const double n = keys, tiny = 1e-12;
      for (std::size_t r = 0; r < 300; ++r)
        for (int which = 0; which < 2; ++which) {
          const double* o = &out[r * kStats + 3 * which];
          SCOPED_TRACE(::testing::Message() << "d_k " << d_k << " keys " << keys << " row " << r);
          ASSERT_GE(o[0], 1.0 / n - tiny);
          ASSERT_LE(o[0], 1.0 + tiny);
          ASSERT_GE(o[1], 0.0);
          ASSERT_LE(o[1], std::log(n) + tiny);
          ASSERT_GE(o[2], 0.0);
          ASSERT_LE(o[2], 0.5 + tiny);
        }
    }
}

// With one key the only weight is 1: max 1, entropy 0, Jacobian 0, exactly.
TEST(Saturation, OneKeyGivesOneHotExactly) {
  const auto out = run(params(16, 1, 3), 0, 50);
  for (std::size_t r = 0; r < 50; ++r)
    for (int which = 0; which < 2; ++which) {
      EXPECT_EQ(out[r * kStats + 3 * which + 0], 1.0);
      EXPECT_EQ(out[r * kStats + 3 * which + 1], 0.0);
      EXPECT_EQ(out[r * kStats + 3 * which + 2], 0.0);
    }
}

// d_k = 1: the scale 1/sqrt(1) is 1, so scaled and unscaled statistics are the same bits.
TEST(Saturation, DkOneScaledEqualsUnscaled) {
  const auto out = run(params(1, 3, 5), 0, 200);
  for (std::size_t r = 0; r < 200; ++r)
    for (int i = 0; i < 3; ++i) EXPECT_EQ(out[r * kStats + i], out[r * kStats + 3 + i]) << r;
}

// ---- The documented layout, recomputed ------------------------------------------------------

// Row r's normals: normals4(key_from_seed(seed), kStreamTag | d_k, item r, block b), four per
// block in order; q is the first d_k, then key j's d_k entries. Scores q . k_j in long double,
// softmax and J explicitly. Tolerance: 1e-12, plus for the Jacobian the product's closed-form
// cancellation (about 4e-16 / (2 ||J||), at most sqrt(4 * 2^-52) = 3e-8, on nearly one-hot rows).
TEST(Saturation, RowsMatchTheDocumentedLayoutRecomputed) {
  for (std::uint32_t d_k : {1u, 3u, 8u, 64u})
    for (int keys : {2, 3, 5}) {
      const Params p = params(d_k, keys, 0x1234abcdull);
      const std::uint64_t first = 1000;
      const int rows = 20;
      const auto out = run(p, first, rows);
      const auto key = philox::key_from_seed(p.seed);
      for (int r = 0; r < rows; ++r) {
        const std::uint64_t total = std::uint64_t(1 + keys) * d_k;
        std::vector<float> normals((total + 3) / 4 * 4);
        for (std::uint32_t b = 0; 4ull * b < total; ++b)
          philox::normals4(key, saturation::kStreamTag | d_k, first + r, b, &normals[4 * b]);
        std::vector<long double> s(keys, 0.0L);
        for (int j = 0; j < keys; ++j)
          for (std::uint32_t c = 0; c < d_k; ++c)
            s[j] += static_cast<long double>(normals[c]) * normals[d_k * (1 + j) + c];
        const auto u = explicit_stats(s, 1.0L);
        const auto sc = explicit_stats(s, 1.0L / std::sqrt(static_cast<long double>(d_k)));
        const double want[kStats] = {u[0], u[1], u[2], sc[0], sc[1], sc[2]};
        for (int i = 0; i < kStats; ++i) {
          double tol = 1e-12;
          if (i % 3 == 2) tol += std::fmin(3e-8, 2e-16 / std::fmax(want[i], 1e-300));
          EXPECT_NEAR(out[r * kStats + i], want[i], tol)
              << "d_k " << d_k << " keys " << keys << " row " << first + r << " stat " << i;
        }
      }
    }
}

// ---- Distribution against an independent Monte Carlo ----------------------------------------

TEST(Saturation, MeansMatchIndependentMonteCarloOfTheModel) {
  const int rows = 3000;
  std::mt19937_64 gen(777);
  for (int d : {4, 64}) {
    const auto out = run(params(d, 3, 2024), 0, rows);
    std::vector<double> ref(std::size_t(rows) * kStats);
    for (int r = 0; r < rows; ++r) {
      const auto s = model_row(gen, d, 3);
      for (int i = 0; i < kStats; ++i) ref[std::size_t(r) * kStats + i] = s[i];
    }
    for (int i = 0; i < kStats; ++i) {
      const MeanSe a = mean_se(out, i), b = mean_se(ref, i);
      EXPECT_NEAR(a.mean, b.mean, 5 * std::hypot(a.se, b.se))
          << "d_k " << d << " statistic " << i << " (se " << a.se << ", " << b.se << ")";
      EXPECT_GT(a.se, 0.0);
    }
  }
}

// ---- Limits ---------------------------------------------------------------------------------

// Without scaling, scores q . k_j have standard deviation sqrt(d_k) (32 at d_k = 1024). Given q
// they are i.i.d. N(0, |q|^2); the top two of 3 standard normals are within g of each other with
// probability ~ f g, f = 6 / (2 sqrt(pi)) / 2 = 0.85, so E[1 - max weight] ~ f ln 2 / 32 = 0.018
// and E||J||_F ~ E[2 p (1 - p)] ~ f / 32 = 0.026 at d_k = 1024: max weight > 0.95 and
// ||J||_F < 0.05. As d_k grows the max weight rises toward 1 and the Jacobian falls toward 0.
TEST(Saturation, UnscaledSaturatesAsDkGrows) {
  const int rows = 1500;
  double prev_max = 0, prev_jac = 1;
  for (std::uint32_t d_k : {4u, 16u, 64u, 256u, 1024u}) {
    const auto out = run(params(d_k, 3, 99), 0, rows);
    const MeanSe mx = mean_se(out, 0), ent = mean_se(out, 1), jac = mean_se(out, 2);
    SCOPED_TRACE(::testing::Message() << "d_k " << d_k << " max " << mx.mean << " entropy "
                                      << ent.mean << " jacobian " << jac.mean);
    EXPECT_GT(mx.mean, prev_max);
    EXPECT_LT(jac.mean, prev_jac);
    prev_max = mx.mean;
    prev_jac = jac.mean;
    if (d_k == 1024) {
      EXPECT_GT(mx.mean, 0.95);
      EXPECT_LT(jac.mean, 0.05);
      EXPECT_LT(ent.mean, 0.15);  // E[H] ~ f / 32 * pi^2 / 6 ~ 0.04 by the same argument
      // Theory, to within 5 standard errors plus 25% for the approximations above.
      EXPECT_NEAR(1 - mx.mean, 0.846 * std::log(2.0) / 32, 0.25 * 0.018 + 5 * mx.se);
      EXPECT_NEAR(jac.mean, 0.846 / 32, 0.25 * 0.026 + 5 * jac.se);
    }
  }
}

// With 1/sqrt(d_k) the scores have variance 1 whatever d_k, so the statistics barely move
// (only through |q|^2 / d_k's spread, a second-order effect of size O(1/d_k)).
TEST(Saturation, ScaledStatisticsStayRoughlyConstantAcrossDk) {
  const int rows = 2000;
  const auto a = run(params(64, 3, 5), 0, rows), b = run(params(1024, 3, 5), 0, rows);
  for (int i = 3; i < 6; ++i) {
    const MeanSe x = mean_se(a, i), y = mean_se(b, i);
    EXPECT_NEAR(x.mean, y.mean, 5 * std::hypot(x.se, y.se)) << "scaled statistic " << i - 3;
  }
  // And far from saturated: with variance-1 scores over 3 keys, the max weight is well below 1.
  EXPECT_LT(mean_se(b, 3).mean, 0.8);
  EXPECT_GT(mean_se(b, 5).mean, 0.1);
}

// ---- Determinism and chunking ---------------------------------------------------------------

TEST(Saturation, SameCallSameBits) {
  const Params p = params(32, 4, 8);
  const auto a = run(p, 17, 400), b = run(p, 17, 400);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0);
  // Another seed gives other values.
  const auto c = run(params(32, 4, 9), 17, 400);
  EXPECT_NE(std::memcmp(a.data(), c.data(), a.size() * sizeof(double)), 0);
}

TEST(Saturation, SplittingRowsIntoCallsChangesNothing) {
  for (std::uint32_t d_k : {8u, 100u}) {
    const Params p = params(d_k, 3, 42);
    const auto whole = run(p, 0, 1000);
    const auto lo = run(p, 0, 500), hi = run(p, 500, 500);
    ASSERT_EQ(whole.size(), lo.size() + hi.size());
    EXPECT_EQ(std::memcmp(whole.data(), lo.data(), lo.size() * sizeof(double)), 0) << d_k;
    EXPECT_EQ(std::memcmp(whole.data() + lo.size(), hi.data(), hi.size() * sizeof(double)), 0)
        << d_k;
    // Uneven pieces, down to a single row.
    const auto one = run(p, 733, 1);
    EXPECT_EQ(std::memcmp(whole.data() + 733 * kStats, one.data(), kStats * sizeof(double)), 0);
    const auto odd = run(p, 1, 998);
    EXPECT_EQ(std::memcmp(whole.data() + kStats, odd.data(), odd.size() * sizeof(double)), 0);
  }
}

// Rows are items of a counter-based stream: row r does not depend on what else is computed, and
// the row index reaches past 2^32 (the counter carries it in two words).
TEST(Saturation, RowsBeyondTwoToThe32AreDistinct) {
  const Params p = params(16, 3, 1);
  const auto a = run(p, 5, 1), b = run(p, (1ull << 32) + 5, 1);
  EXPECT_NE(std::memcmp(a.data(), b.data(), kStats * sizeof(double)), 0);
}

}  // namespace
}  // namespace attn
