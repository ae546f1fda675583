// test_moments.cpp: moments.hpp (streaming and merged central moments).
//
// References: a two-pass computation in long double over the same doubles (mean first, then the
// sums of (x - mean)^k), and small cases worked by hand. M2..M4 are the central moment *sums*
// (not divided by n); variance() is M2 / n and kurtosis() is n M4 / M2^2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "helpers.hpp"
#include "host/chunks.hpp"
#include "moments.hpp"

namespace attn {
namespace {

struct TwoPass {
  long double n = 0, mean = 0, m2 = 0, m3 = 0, m4 = 0;
  explicit TwoPass(const std::vector<double>& x) {
    n = static_cast<long double>(x.size());
    long double s = 0;
    for (double v : x) s += v;
    mean = s / n;
    for (double v : x) {
      const long double d = v - mean, d2 = d * d;
      m2 += d2;
      m3 += d2 * d;
      m4 += d2 * d2;
    }
  }
};

Moments push_all(const std::vector<double>& x, std::size_t from = 0, std::size_t to = SIZE_MAX) {
  Moments m;
  to = std::min(to, x.size());
  for (std::size_t i = from; i < to; ++i) m.push(x[i]);
  return m;
}

// Skewed data with heavy-ish tails, so that M3 is far from zero and every moment matters.
std::vector<double> skewed_sample(std::size_t n, unsigned seed, double offset = 0) {
  std::mt19937_64 gen(seed);
  std::exponential_distribution<double> ex(0.7);
  std::normal_distribution<double> no(0.0, 1.0);
  std::vector<double> x(n);
  for (auto& v : x) v = offset + ex(gen) + 0.5 * no(gen);
  return x;
}

using test::same_bits;

void expect_rel(double got, long double want, double rel, const char* what) {
  const double w = static_cast<double>(want);
  EXPECT_LE(std::fabs(got - w), rel * std::fabs(w)) << what << ": got " << got << " want " << w;
}

void expect_matches_two_pass(const Moments& m, const std::vector<double>& x, double rel) {
  const TwoPass t(x);
  EXPECT_EQ(m.n, static_cast<double>(x.size()));
  expect_rel(m.mean, t.mean, rel, "mean");
  expect_rel(m.m2, t.m2, rel, "m2");
  expect_rel(m.m3, t.m3, rel, "m3");
  expect_rel(m.m4, t.m4, rel, "m4");
  expect_rel(m.variance(), t.m2 / t.n, rel, "variance");
  expect_rel(m.stddev(), std::sqrt(t.m2 / t.n), rel, "stddev");
  expect_rel(m.kurtosis(), t.n * t.m4 / (t.m2 * t.m2), rel, "kurtosis");
}

// ---- Exact small cases ----------------------------------------------------------------------

// {1, 2, 3, 4}: mean 5/2; deviations -3/2, -1/2, 1/2, 3/2; M2 = 5, M3 = 0,
// M4 = 2 (81/16 + 1/16) = 41/4; variance 5/4; kurtosis 4 (41/4) / 25 = 1.64.
TEST(Moments, OneTwoThreeFourByHand) {
  Moments m;
  for (double v : {1.0, 2.0, 3.0, 4.0}) m.push(v);
  EXPECT_EQ(m.n, 4.0);
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_DOUBLE_EQ(m.m2, 5.0);
  EXPECT_NEAR(m.m3, 0.0, 1e-15);
  EXPECT_DOUBLE_EQ(m.m4, 10.25);
  EXPECT_DOUBLE_EQ(m.variance(), 1.25);
  EXPECT_DOUBLE_EQ(m.stddev(), std::sqrt(1.25));
  EXPECT_DOUBLE_EQ(m.kurtosis(), 1.64);
}

// {0, 0, 0, 4}: mean 1; deviations -1, -1, -1, 3; M2 = 12, M3 = -3 + 27 = 24,
// M4 = 3 + 81 = 84; variance 3; kurtosis 4 * 84 / 144 = 7/3.
TEST(Moments, SkewedFourValuesByHand) {
  Moments m;
  for (double v : {0.0, 0.0, 0.0, 4.0}) m.push(v);
  EXPECT_DOUBLE_EQ(m.mean, 1.0);
  EXPECT_DOUBLE_EQ(m.m2, 12.0);
  EXPECT_DOUBLE_EQ(m.m3, 24.0);
  EXPECT_DOUBLE_EQ(m.m4, 84.0);
  EXPECT_DOUBLE_EQ(m.variance(), 3.0);
  EXPECT_DOUBLE_EQ(m.kurtosis(), 7.0 / 3.0);
  // The same values in another order: the moments do not depend on it.
  Moments r;
  for (double v : {4.0, 0.0, 0.0, 0.0}) r.push(v);
  EXPECT_DOUBLE_EQ(r.mean, 1.0);
  EXPECT_DOUBLE_EQ(r.m2, 12.0);
  EXPECT_DOUBLE_EQ(r.m3, 24.0);
  EXPECT_DOUBLE_EQ(r.m4, 84.0);
}

// Two points a, b: mean (a+b)/2, M2 = (b-a)^2 / 2, M3 = 0, M4 = (b-a)^4 / 8, kurtosis 1.
TEST(Moments, TwoPointsByHand) {
  Moments m;
  m.push(-3.0);
  m.push(5.0);
  EXPECT_DOUBLE_EQ(m.mean, 1.0);
  EXPECT_DOUBLE_EQ(m.m2, 32.0);
  EXPECT_NEAR(m.m3, 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(m.m4, 512.0);
  EXPECT_DOUBLE_EQ(m.kurtosis(), 1.0);
}

TEST(Moments, EmptySingleAndConstant) {
  const Moments empty;
  EXPECT_EQ(empty.n, 0.0);
  EXPECT_TRUE(std::isnan(empty.variance()));
  EXPECT_TRUE(std::isnan(empty.kurtosis()));

  Moments one;
  one.push(3.75);
  EXPECT_EQ(one.n, 1.0);
  EXPECT_EQ(one.mean, 3.75);
  EXPECT_EQ(one.m2, 0.0);
  EXPECT_EQ(one.m3, 0.0);
  EXPECT_EQ(one.m4, 0.0);
  EXPECT_EQ(one.variance(), 0.0);
  EXPECT_TRUE(std::isnan(one.kurtosis()));  // m2 = 0: undefined

  Moments c;
  for (int i = 0; i < 1000; ++i) c.push(-0.1);
  EXPECT_EQ(c.mean, -0.1);
  EXPECT_EQ(c.m2, 0.0);
  EXPECT_EQ(c.m3, 0.0);
  EXPECT_EQ(c.m4, 0.0);
}

// ---- Against the two-pass reference ---------------------------------------------------------

TEST(Moments, PushMatchesTwoPassLongDouble) {
  for (unsigned seed : {1u, 2u, 3u}) {
    const auto x = skewed_sample(20000, seed);
    expect_matches_two_pass(push_all(x), x, 1e-12);
  }
  // Symmetric data too (M3 small compared with M2^1.5 n^-0.5: compare it on that scale).
  std::mt19937_64 gen(11);
  std::normal_distribution<double> no(-2.0, 3.0);
  std::vector<double> x(20000);
  for (auto& v : x) v = no(gen);
  const Moments m = push_all(x);
  const TwoPass t(x);
  expect_rel(m.mean, t.mean, 1e-12, "mean");
  expect_rel(m.m2, t.m2, 1e-12, "m2");
  expect_rel(m.m4, t.m4, 1e-12, "m4");
  EXPECT_NEAR(m.m3, static_cast<double>(t.m3), 1e-12 * static_cast<double>(std::pow(t.m2, 1.5L)));
}

TEST(Moments, PushIntoLooseFieldsEqualsPush) {
  const auto x = skewed_sample(1000, 5);
  Moments a;
  double n = 0, mean = 0, m2 = 0, m3 = 0, m4 = 0;
  for (double v : x) {
    const float f = static_cast<float>(v);  // push_into takes floats (the dk-std lanes' dots)
    a.push(f);
    Moments::push_into(n, mean, m2, m3, m4, f);
  }
  EXPECT_EQ(a.scale, 1.0);
  EXPECT_EQ(a.n, n);
  EXPECT_EQ(a.mean, mean);
  EXPECT_EQ(a.m2, m2);
  EXPECT_EQ(a.m3, m3);
  EXPECT_EQ(a.m4, m4);
}

// ---- merge ----------------------------------------------------------------------------------

TEST(Moments, MergeOfTwoPartsMatchesPushingEverything) {
  const auto x = skewed_sample(10000, 21);
  // Split points: balanced, lopsided, and with one side a single value.
  for (std::size_t split : {std::size_t(5000), std::size_t(1), std::size_t(9999), std::size_t(137),
                            std::size_t(7000)}) {
    const Moments a = push_all(x, 0, split), b = push_all(x, split);
    const Moments r = merge(a, b);
    SCOPED_TRACE(split);
    expect_matches_two_pass(r, x, 1e-12);
    const Moments all = push_all(x);
    expect_rel(r.m2, all.m2, 1e-12, "merged m2 vs pushed");
    expect_rel(r.m3, all.m3, 1e-12, "merged m3 vs pushed");
    expect_rel(r.m4, all.m4, 1e-12, "merged m4 vs pushed");
  }
}

// Parts with very different means and spreads: the cross terms of merge carry most of M2..M4.
TEST(Moments, MergeOfDissimilarParts) {
  std::vector<double> x = skewed_sample(3000, 31, -50.0);
  const std::vector<double> y = skewed_sample(500, 32, 80.0);
  std::vector<double> all = x;
  all.insert(all.end(), y.begin(), y.end());
  const Moments r = merge(push_all(x), push_all(y));
  expect_matches_two_pass(r, all, 1e-12);
  const Moments s = merge(push_all(y), push_all(x));  // the other order
  expect_matches_two_pass(s, all, 1e-12);
}

// A tree of merges over 64 chunks (as lanes, blocks and shards combine) gives the moments of
// the whole sample.
TEST(Moments, TreeOfMergesMatchesTwoPass) {
  const auto x = skewed_sample(64 * 173, 41);
  std::vector<Moments> level;
  for (int c = 0; c < 64; ++c) level.push_back(push_all(x, c * 173, (c + 1) * 173));
  while (level.size() > 1) {
    std::vector<Moments> next;
    for (std::size_t i = 0; i < level.size(); i += 2) next.push_back(merge(level[i], level[i + 1]));
    level = next;
  }
  expect_matches_two_pass(level[0], x, 1e-12);
}

TEST(Moments, MergeWithEmptyReturnsTheOtherExactly) {
  const Moments a = push_all(skewed_sample(100, 51));
  const Moments empty;
  EXPECT_TRUE(same_bits(merge(a, empty), a));
  EXPECT_TRUE(same_bits(merge(empty, a), a));
  EXPECT_TRUE(same_bits(merge(empty, empty), empty));
}

TEST(Moments, MergeOfTwoSinglesIsPushingTwo) {
  Moments a, b, both;
  a.push(2.0);
  b.push(7.0);
  both.push(2.0);
  both.push(7.0);
  const Moments r = merge(a, b);
  EXPECT_EQ(r.n, 2.0);
  EXPECT_DOUBLE_EQ(r.mean, 4.5);
  EXPECT_DOUBLE_EQ(r.m2, 12.5);  // (7 - 2)^2 / 2
  EXPECT_NEAR(r.m3, 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.m4, 78.125);  // (7 - 2)^4 / 8
  EXPECT_DOUBLE_EQ(r.m2, both.m2);
  EXPECT_DOUBLE_EQ(r.m4, both.m4);
}

// ---- Robustness -----------------------------------------------------------------------------

// 1e9 + N(0, 1): a naive sum of squares loses everything (1e18 - 1e18 with 1e2 of rounding);
// the streaming update keeps the variance to 1e-6 relative. The reference is two-pass in long
// double over the same doubles (each of which carries 1e9 * 2^-53 ~ 1e-7 of rounding).
TEST(Moments, LargeOffsetKeepsVariance) {
  std::mt19937_64 gen(61);
  std::normal_distribution<double> no(0.0, 1.0);
  std::vector<double> x(100000);
  for (auto& v : x) v = 1e9 + no(gen);
  const Moments m = push_all(x);
  const TwoPass t(x);
  const double var = static_cast<double>(t.m2 / t.n);
  EXPECT_NEAR(var, 1.0, 0.02);  // the data's own variance (standard error sqrt(2/n) = 0.0045)
  EXPECT_LE(std::fabs(m.variance() - var), 1e-6 * var);
  // The running mean is rounded to ulp(1e9) / 2 = 6e-8 at each of the 1e5 updates (a random walk
  // of about sqrt(1e5) * 6e-8 = 2e-5): 1e-13 relative.
  EXPECT_LE(std::fabs(m.mean - static_cast<double>(t.mean)), 1e-13 * 1e9);
  EXPECT_NEAR(m.kurtosis(), static_cast<double>(t.n * t.m4 / (t.m2 * t.m2)), 1e-4);
  // Merged halves too.
  const Moments r = merge(push_all(x, 0, 50000), push_all(x, 50000));
  EXPECT_LE(std::fabs(r.variance() - var), 1e-6 * var);
}

// ---- Range: values near the largest double ---------------------------------------------------
//
// The sums M2..M4 of finite values can exceed the double range (M4 from values near 1e77, M2
// from values near 1e154); Moments keeps them in units of a power-of-two scale. The reference is
// the same two-pass computation in long double, whose range (beyond 1e4900) holds these sums.

// M_k of a state as long double: m_k scale^k.
long double sum_k(const Moments& m, int k) {
  const double mk = k == 2 ? m.m2 : k == 3 ? m.m3 : m.m4;
  return static_cast<long double>(mk) * std::pow(static_cast<long double>(m.scale), k);
}

void expect_matches_two_pass_any_range(const Moments& m, const std::vector<double>& x, double rel) {
  const TwoPass t(x);
  EXPECT_EQ(m.n, static_cast<double>(x.size()));
  EXPECT_TRUE(std::isfinite(m.mean) && std::isfinite(m.m2) && std::isfinite(m.m3) &&
              std::isfinite(m.m4))
      << m.mean << " " << m.m2 << " " << m.m3 << " " << m.m4 << " scale " << m.scale;
  // The mean on the scale of the data's spread (near zero between +-1e77 it is a difference).
  const long double spread = std::max(std::fabs(t.mean), std::sqrt(t.m2 / t.n));
  EXPECT_LE(std::fabs(m.mean - t.mean), rel * spread) << "mean " << m.mean;
  EXPECT_LE(std::fabs(sum_k(m, 2) - t.m2), rel * t.m2) << "M2";
  EXPECT_LE(std::fabs(sum_k(m, 4) - t.m4), rel * t.m4) << "M4";
  // M3 on the scale of M2^1.5 (it can be near zero).
  EXPECT_LE(std::fabs(sum_k(m, 3) - t.m3), rel * std::pow(t.m2, 1.5L)) << "M3";
  expect_rel(m.stddev(), std::sqrt(t.m2 / t.n), rel, "stddev");
  expect_rel(m.stddev(1), std::sqrt(t.m2 / (t.n - 1)), rel, "stddev ddof 1");
  expect_rel(m.kurtosis(), t.n * t.m4 / (t.m2 * t.m2), rel, "kurtosis");
}

// Values of both signs up to 1.2e307 (the skewed sample times 1e306): the plain update's squares
// overflow at the first pair; mean, std and kurtosis come out finite and right.
TEST(MomentsRange, ValuesNear1e307AgainstTwoPassLongDouble) {
  std::vector<double> x = skewed_sample(5000, 71, -3.0);
  for (double& v : x) v *= 1e306;
  EXPECT_GT(*std::max_element(x.begin(), x.end()), 1e307);
  EXPECT_LT(*std::min_element(x.begin(), x.end()), -1e306);
  const Moments m = push_all(x);
  EXPECT_GT(m.scale, 1.0);
  expect_matches_two_pass_any_range(m, x, 1e-12);
  // The variance itself (about 1e612) is beyond the double range: inf, stated as such.
  EXPECT_TRUE(std::isinf(m.variance()));
}

// Every value finite, the plain differences not: x - mean reaches 2 DBL_MAX.
TEST(MomentsRange, OppositeExtremesOfTheDoubleRange) {
  const std::vector<double> x = {DBL_MAX, -DBL_MAX, 0.5 * DBL_MAX, -DBL_MAX, DBL_MAX, 1.0, -1e300};
  expect_matches_two_pass_any_range(push_all(x), x, 1e-12);
  // Two values: mean 0, std DBL_MAX exactly, kurtosis 1.
  Moments two;
  two.push(DBL_MAX);
  two.push(-DBL_MAX);
  EXPECT_EQ(two.mean, 0.0);
  EXPECT_EQ(two.stddev(), DBL_MAX);
  EXPECT_DOUBLE_EQ(two.kurtosis(), 1.0);
}

// Values near 1e100: M2 (1e204) fits, M4 (1e404) does not.
TEST(MomentsRange, FourthMomentBeyondRangeFromValuesNear1e100) {
  std::vector<double> x = skewed_sample(3000, 72);
  for (double& v : x) v *= 1e100;
  const Moments m = push_all(x);
  EXPECT_GT(m.scale, 1.0);
  expect_matches_two_pass_any_range(m, x, 1e-12);
}

// 10^4 values near 3e75: M4 (about 1e307) fits without a scale, M2^2 (about 1e311) does not;
// the kurtosis n M4 / M2^2 is still about the sample's own (a plain n M4 / M2^2 gave 0).
TEST(MomentsRange, KurtosisWhereM2SquaredLeavesTheRange) {
  std::vector<double> x = skewed_sample(10000, 78);
  for (double& v : x) v *= 3e75;
  const Moments m = push_all(x);
  EXPECT_EQ(m.scale, 1.0);
  EXPECT_TRUE(std::isinf(m.m2 * m.m2));
  expect_matches_two_pass(m, x, 1e-12);
}

// Values up to 1e60 (M4 up to about 1e250) stay on the plain formula, scale 1.
TEST(MomentsRange, LargeButInRangeValuesKeepScaleOne) {
  std::vector<double> x = skewed_sample(3000, 73);
  for (double& v : x) v *= 1e60;
  const Moments m = push_all(x);
  EXPECT_EQ(m.scale, 1.0);
  expect_matches_two_pass(m, x, 1e-12);
}

// The dk-std lanes push floats with push_into, which has no scale: floats at +-FLT_MAX keep
// every sum in range (M4 below 2^620 for any count below 2^53), bit for bit push()'s.
TEST(MomentsRange, FloatsNeverNeedAScale) {
  Moments a;
  double n = 0, mean = 0, m2 = 0, m3 = 0, m4 = 0;
  for (int i = 0; i < 10000; ++i) {
    const float f = (i % 3 == 0 ? -1.0f : 1.0f) * FLT_MAX * (i % 7 == 0 ? 0.25f : 1.0f);
    a.push(f);
    Moments::push_into(n, mean, m2, m3, m4, f);
  }
  EXPECT_EQ(a.scale, 1.0);
  EXPECT_EQ(a.n, n);
  EXPECT_EQ(a.mean, mean);
  EXPECT_EQ(a.m2, m2);
  EXPECT_EQ(a.m3, m3);
  EXPECT_EQ(a.m4, m4);
  EXPECT_TRUE(std::isfinite(a.m4));
  EXPECT_TRUE(std::isfinite(a.kurtosis()));
}

// Chan's combination of huge parts: two halves, lopsided splits, a tree of 64 parts, parts of
// ordinary and huge values, and two parts of scale 1 whose combination overflows (means +-1e77:
// the cross term of M4 is (2e77)^4 times 37.5).
TEST(MomentsRange, MergedHugeStatesStayFinite) {
  std::vector<double> x = skewed_sample(64 * 50, 74, -2.0);
  for (double& v : x) v *= 1e306;
  for (std::size_t split : {std::size_t(1600), std::size_t(1), std::size_t(3199)}) {
    SCOPED_TRACE(split);
    expect_matches_two_pass_any_range(merge(push_all(x, 0, split), push_all(x, split)), x, 1e-12);
  }
  std::vector<Moments> level;
  for (int c = 0; c < 64; ++c) level.push_back(push_all(x, c * 50, (c + 1) * 50));
  while (level.size() > 1) {
    std::vector<Moments> next;
    for (std::size_t i = 0; i < level.size(); i += 2) next.push_back(merge(level[i], level[i + 1]));
    level = next;
  }
  expect_matches_two_pass_any_range(level[0], x, 1e-12);

  // Ordinary values with huge ones, in both orders.
  std::vector<double> small = skewed_sample(500, 75), mixed = small;
  mixed.insert(mixed.end(), x.begin(), x.begin() + 500);
  const std::vector<double> huge(x.begin(), x.begin() + 500);
  expect_matches_two_pass_any_range(merge(push_all(small), push_all(huge)), mixed, 1e-12);
  std::vector<double> mixed2(huge);
  mixed2.insert(mixed2.end(), small.begin(), small.end());
  expect_matches_two_pass_any_range(merge(push_all(huge), push_all(small)), mixed2, 1e-12);

  // Two scale-1 parts (spread about 1e70) around +1e77 and -1e77.
  std::vector<double> up = skewed_sample(300, 76), down = skewed_sample(300, 77);
  for (double& v : up) v = 1e77 + 1e70 * v;
  for (double& v : down) v = -1e77 - 1e70 * v;
  const Moments mu = push_all(up), md = push_all(down);
  EXPECT_EQ(mu.scale, 1.0);
  EXPECT_EQ(md.scale, 1.0);
  std::vector<double> both = up;
  both.insert(both.end(), down.begin(), down.end());
  expect_matches_two_pass_any_range(merge(mu, md), both, 1e-12);
}

// NaN still makes the state NaN (the callers count non-finite values and leave them out);
// pushing it neither loops nor is hidden by a scale.
TEST(MomentsRange, NonFiniteInputStillPropagates) {
  Moments m;
  m.push(1.0);
  m.push(NAN);
  EXPECT_TRUE(std::isnan(m.mean));
  Moments h;
  h.push(1e307);
  h.push(-1e307);
  EXPECT_GT(h.scale, 1.0);
  h.push(NAN);
  EXPECT_TRUE(std::isnan(h.mean));
  EXPECT_TRUE(std::isnan(merge(h, push_all({1.0, 2.0})).mean));
}

// Partial states (shards, checkpoints) carry the scale exactly; a state of scale 1 is five
// numbers (no scale written), and those read back as scale 1.
TEST(MomentsRange, ScaleRoundTripsThroughPartialStates) {
  Moments h;
  for (double v : {3e307, -2e307, 1e300}) h.push(v);
  ASSERT_GT(h.scale, 1.0);
  const nlohmann::json j = exact(h);
  EXPECT_EQ(j.size(), 6u);
  EXPECT_TRUE(same_bits(exact_moments(j), h));
  const Moments o = push_all({1.0, 2.0, 4.0});
  EXPECT_EQ(exact(o).size(), 5u);
  EXPECT_TRUE(same_bits(exact_moments(exact(o)), o));
}

// The bounds a state's moments are checked against (host/exact_state.hpp) hold for every sample
// push() and merge() summarize: samples of many shapes, pushed in chunks and merged as the
// chunk driver does, are accepted against their domain and their own extremes; a sample whose
// spread sits at the rounding of its mean (values one ulp apart), a two-point sample (where the
// bounds are tight) and values far beyond the float range (a scale) included. No real sample is
// refused.
TEST(MomentsBounds, EverySampleSatisfiesThem) {
  std::mt19937_64 g(7);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform;
  struct Case {
    const char* what;
    std::function<double(std::size_t)> value;
    Domain domain;
  };
  const double w = 0.7317287020936569;
  const std::vector<Case> cases = {
      {"normal", [&](std::size_t) { return normal(g); }, {}},
      {"normal far from 0", [&](std::size_t) { return 1e6 + normal(g); }, {}},
      {"uniform [0, 1]", [&](std::size_t) { return uniform(g); }, {"a weight", 0, 1}},
      {"0 or 1", [&](std::size_t i) { return double(i % 2); }, {"a weight", 0, 1}},
      {"mostly 0, one 1", [&](std::size_t i) { return i == 17 ? 1.0 : 0.0; }, {"a weight", 0, 1}},
      {"one ulp apart",
       [&](std::size_t i) { return i % 3 ? w : std::nextafter(w, 2.0); },
       {"a weight", 0, 1}},
      {"constant", [&](std::size_t) { return w; }, {"a weight", 0, 1}},
      {"heavy tails", [&](std::size_t) { return normal(g) / (normal(g) + 1e-300); }, {}},
      {"losses near 0",
       [&](std::size_t) { return std::pow(uniform(g), 8) * 1e-9; },
       {"a loss", 0, INFINITY}},
      {"beyond float, a scale", [&](std::size_t) { return 1e300 * normal(g); }, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    for (const std::size_t n : {2u, 3u, 10u, 4096u, 50000u}) {
      Moments total;
      double lo = INFINITY, hi = -INFINITY;
      for (std::size_t at = 0; at < n;) {  // chunks of 1000 values, merged in order
        Moments chunk;
        for (std::size_t k = 0; k < 1000 && at < n; ++k, ++at) {
          const double v = c.value(at);
          chunk.push(v);
          lo = std::fmin(lo, v);
          hi = std::fmax(hi, v);
        }
        total = merge(total, chunk);
      }
      EXPECT_NO_THROW(exact_moments(exact(total), c.domain)) << "n = " << n;
      EXPECT_NO_THROW(check_moments_within(total, lo, hi, true)) << "n = " << n;
    }
  }
}

// And moments no sample has are refused, each naming what is wrong.
TEST(MomentsBounds, ImpossibleMomentsAreRefused) {
  const Moments m = push_all({0.1, 0.4, 0.5, 0.9, 0.2});
  const auto with = [&](int k, double factor) {
    nlohmann::json j = exact(m);
    j[k] = exact(exact_double(j[k]) * factor);
    return j;
  };
  const Domain weight{"a weight", 0, 1};
  const std::pair<nlohmann::json, std::string> bad[] = {
      {with(4, 0.01), "is outside [M2^2 / n, M2^2]"},
      {with(4, 100), "is outside [M2^2 / n, M2^2]"},
      {with(3, 50), "M3 exceeds sqrt(M2 M4)"},
      {with(1, 5), "a weight of 2.1, outside [0, 1]"},
      {[&] {  // 5 times the spread, the shape kept: too wide for values in [0, 1]
         nlohmann::json j = with(2, 25);
         j[3] = exact(exact_double(j[3]) * 125);
         j[4] = exact(exact_double(j[4]) * 625);
         return j;
       }(),
       "larger than such values can have"}};
  for (const auto& [j, says] : bad) {
    try {
      exact_moments(j, weight);
      ADD_FAILURE() << j.dump() << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
  // Extremes 0.1 and 0.9 with a spread smaller than the two alone give.
  Moments narrow = m;
  narrow.m2 = 0.01;
  EXPECT_THROW(check_moments_within(narrow, 0.1, 0.9, true), std::invalid_argument);
}

}  // namespace
}  // namespace attn
