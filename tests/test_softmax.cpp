// test_softmax.cpp: softmax.hpp (softmax_row and row_stats).
//
// References: exact mathematics (uniform and one-hot rows, the softmax Jacobian
// J = diag(p) - p p^T built explicitly), and softmax / entropy computed directly in long double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "helpers.hpp"
#include "softmax.hpp"

namespace attn {
namespace {

template <class T>
std::vector<T> softmax(const std::vector<T>& s, T scale = T(1), int valid = -1) {
  const int n = static_cast<int>(s.size());
  std::vector<T> w(s.size(), T(-7));  // poison: every entry must be written
  softmax_row<T>(s.data(), w.data(), n, scale, valid < 0 ? n : valid);
  return w;
}

// softmax(scale * s[0..valid)) in long double, the textbook way (max subtracted).
std::vector<long double> reference_softmax(const std::vector<double>& s, double scale, int valid) {
  long double m = -INFINITY;
  for (int j = 0; j < valid; ++j) m = std::fmax(m, static_cast<long double>(scale) * s[j]);
  std::vector<long double> p(s.size(), 0.0L);
  long double sum = 0;
  for (int j = 0; j < valid; ++j)
    sum += p[j] = std::exp(static_cast<long double>(scale) * s[j] - m);
  for (int j = 0; j < valid; ++j) p[j] /= sum;
  return p;
}

template <class T>
T sum(const std::vector<T>& w) {
  T s = 0;
  for (T v : w) s += v;
  return s;
}

// ---- softmax_row ----------------------------------------------------------------------------

template <class T>
class SoftmaxRowTyped : public ::testing::Test {};
using Floats = ::testing::Types<float, double>;
TYPED_TEST_SUITE(SoftmaxRowTyped, Floats);

TYPED_TEST(SoftmaxRowTyped, EqualScoresGiveOneOverN) {
  using T = TypeParam;
  for (int n : {1, 2, 3, 7, 64, 1000}) {
    for (T score : {T(0), T(-3.5), T(1e4)}) {
      const auto w = softmax(std::vector<T>(n, score));
      for (int j = 0; j < n; ++j)
        EXPECT_NEAR(w[j], T(1) / T(n), T(1) / T(n) * std::numeric_limits<T>::epsilon() * 4)
            << "n " << n << " score " << score;
    }
  }
}

TYPED_TEST(SoftmaxRowTyped, HugeFiniteScoresGiveFiniteWeightsSummingToOne) {
  using T = TypeParam;
  const T big = std::numeric_limits<T>::max() / T(2);  // 9e307 or 1.7e38
  const T huge = std::numeric_limits<T>::max();
  const T eps = std::numeric_limits<T>::epsilon();
  struct Case {
    std::vector<T> s;
    std::vector<T> want;  // exact mathematics (to within rounding)
  };
  const std::vector<Case> cases = {
      {{huge, -huge}, {1, 0}},
      {{-huge, huge}, {0, 1}},
      {{huge, huge}, {T(0.5), T(0.5)}},
      {{-huge, -huge, -huge}, {T(1) / 3, T(1) / 3, T(1) / 3}},
      {{big, T(0), -big, big}, {T(0.5), 0, 0, T(0.5)}},
      {{T(0), -huge, T(0)}, {T(0.5), 0, T(0.5)}},
      {{huge, huge - huge / T(1 << 20), T(1)}, {1, 0, 0}},  // gap ~ 1e302 (double)
  };
  for (const Case& c : cases) {
    const auto w = softmax(c.s);
    for (std::size_t j = 0; j < w.size(); ++j) {
      ASSERT_TRUE(std::isfinite(w[j])) << "entry " << j;
      EXPECT_NEAR(w[j], c.want[j], 4 * eps) << "entry " << j;
    }
    EXPECT_NEAR(sum(w), T(1), 4 * eps);
  }
}

// valid = 0 masks every column, whatever the scores (even NaN): zeros, never NaN.
TYPED_TEST(SoftmaxRowTyped, FullyMaskedRowGivesZeros) {
  using T = TypeParam;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (const std::vector<T>& s : {std::vector<T>{T(1), T(2), T(3)}, std::vector<T>{nan, nan}}) {
    const auto w = softmax(s, T(1), 0);
    for (T v : w) EXPECT_EQ(v, T(0));
  }
}

// ---- the non-finite rule (softmax.hpp) -------------------------------------------------------
// Expected values are the exact limits: lim_{c -> inf} softmax(s) with the tied largest scores
// set to c (or, for an all -inf row, every score set to -c) is 1 / (number tied) on the tied
// keys and 0 elsewhere; a NaN anywhere visible makes every visible weight NaN.

TYPED_TEST(SoftmaxRowTyped, PlusInfinityMaximaShareTheWeightEqually) {
  using T = TypeParam;
  const T inf = std::numeric_limits<T>::infinity(), big = std::numeric_limits<T>::max();
  struct Case {
    std::vector<T> s;
    std::vector<T> want;
  };
  const std::vector<Case> cases = {
      {{inf}, {1}},                                      // an overflowed score
      {{inf, T(0)}, {1, 0}},                             //
      {{T(3), inf, -inf, inf}, {0, T(0.5), 0, T(0.5)}},  // two tied at +inf
      {{inf, big, inf, inf, -big}, {T(1) / 3, 0, T(1) / 3, T(1) / 3, 0}},
      {{-inf}, {1}},  // every visible score -inf: a tie, weight 1 / valid
      {{-inf, -inf, -inf, -inf}, {T(0.25), T(0.25), T(0.25), T(0.25)}},
      {{T(2), -inf, T(2)}, {T(0.5), 0, T(0.5)}},  // a finite maximum: -inf gets 0
  };
  for (const Case& c : cases) {
    for (T scale : {T(1), T(0.125), T(8)}) {
      const auto w = softmax(c.s, scale);
      for (std::size_t j = 0; j < w.size(); ++j)
        EXPECT_EQ(w[j], c.want[j]) << "entry " << j << " of " << c.s.size() << " scale " << scale;
    }
  }
}

TYPED_TEST(SoftmaxRowTyped, NaNMakesEveryVisibleWeightNaNAndMaskedStayZero) {
  using T = TypeParam;
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  for (const std::vector<T>& s :
       {std::vector<T>{nan, T(1), T(2), T(0)}, std::vector<T>{T(1), inf, nan, T(0)},
        std::vector<T>{-inf, nan, -inf, T(5)}}) {
    const auto w = softmax(s, T(1), 3);  // column 3 masked
    for (int j = 0; j < 3; ++j) EXPECT_TRUE(std::isnan(w[j])) << "entry " << j;
    EXPECT_EQ(w[3], T(0));
  }
  // NaN only in a masked column: never read.
  const auto w = softmax(std::vector<T>{T(0), T(0), nan, inf}, T(1), 2);
  EXPECT_EQ(w[0], T(0.5));
  EXPECT_EQ(w[1], T(0.5));
  EXPECT_EQ(w[2], T(0));
  EXPECT_EQ(w[3], T(0));
}

TYPED_TEST(SoftmaxRowTyped, MaskedEntriesInsideTheRowGetZero) {
  using T = TypeParam;
  const T ninf = -std::numeric_limits<T>::infinity();
  const auto w = softmax(std::vector<T>{T(1), ninf, T(1), ninf});
  EXPECT_EQ(w[1], T(0));
  EXPECT_EQ(w[3], T(0));
  EXPECT_NEAR(w[0], T(0.5), 4 * std::numeric_limits<T>::epsilon());
  EXPECT_NEAR(w[2], T(0.5), 4 * std::numeric_limits<T>::epsilon());
}

TYPED_TEST(SoftmaxRowTyped, PartiallyMaskedRowIsADistributionOnTheValidPrefix) {
  using T = TypeParam;
  std::mt19937_64 gen(3);
  std::normal_distribution<double> no(0.0, 3.0);
  // Float scores near 10 carry 2^-24 * 16 ~ 1e-6 of rounding in scale * s and in s - max.
  const double tol = std::is_same_v<T, float> ? 4e-6 : 1e-14;
  for (int n : {2, 5, 16}) {
    std::vector<double> sd(n);
    for (auto& v : sd) v = static_cast<double>(static_cast<T>(no(gen)));
    const std::vector<T> s(sd.begin(), sd.end());
    for (int valid = 1; valid <= n; ++valid) {
      const auto w = softmax(s, T(1), valid);
      const auto want = reference_softmax(sd, 1.0, valid);
      for (int j = valid; j < n; ++j) EXPECT_EQ(w[j], T(0)) << "masked column " << j;
      T total = 0;
      for (int j = 0; j < valid; ++j) {
        EXPECT_GT(w[j], T(0));
        EXPECT_NEAR(w[j], static_cast<double>(want[j]), tol) << "n " << n << " valid " << valid;
        total += w[j];
      }
      EXPECT_NEAR(total, T(1), 8 * std::numeric_limits<T>::epsilon());
      if (valid == 1) {
        EXPECT_EQ(w[0], T(1));  // exp(0) / exp(0)
      }
    }
  }
}

TYPED_TEST(SoftmaxRowTyped, ScaleIsTheSameAsScaledScores) {
  using T = TypeParam;
  std::mt19937_64 gen(17);
  std::normal_distribution<double> no(0.0, 5.0);
  for (T scale : {T(1) / std::sqrt(T(64)), T(0.125), T(3), T(1) / std::sqrt(T(3))}) {
    std::vector<T> s(12), scaled(12);
    for (int j = 0; j < 12; ++j) {
      s[j] = static_cast<T>(no(gen));
      scaled[j] = scale * s[j];
    }
    const auto a = softmax(s, scale), b = softmax(scaled, T(1));
    // Mathematically equal; in floating point, exp(scale (s - max)) and exp(scale s - max)
    // round differently: a few ulps of the exponent (|scale s| <= ~60 here).
    const double tol = sizeof(T) == 8 ? 1e-13 : 1e-4;
    for (int j = 0; j < 12; ++j)
      EXPECT_NEAR(a[j], b[j], tol * std::max(a[j], b[j])) << "scale " << scale << " entry " << j;
  }
}

TEST(SoftmaxRow, RandomRowsMatchLongDoubleReference) {
  std::mt19937_64 gen(5);
  std::normal_distribution<double> no(0.0, 4.0);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + trial % 40;
    std::vector<double> s(n);
    for (auto& v : s) v = no(gen);
    const double scale = 1.0 / std::sqrt(1.0 + trial % 9);
    const auto w = softmax(s, scale);
    const auto want = reference_softmax(s, scale, n);
    for (int j = 0; j < n; ++j)
      EXPECT_NEAR(w[j], static_cast<double>(want[j]), 1e-14) << "trial " << trial;
    // Float too, against the same reference (float scores are the double ones rounded).
    std::vector<float> sf(s.begin(), s.end());
    std::vector<double> sfd(sf.begin(), sf.end());
    const auto wf = softmax(sf, static_cast<float>(scale));
    const auto wantf = reference_softmax(sfd, static_cast<float>(scale), n);
    for (int j = 0; j < n; ++j) EXPECT_NEAR(wf[j], static_cast<double>(wantf[j]), 4e-6) << trial;
  }
}

// softmax(s + c) = softmax(s): the max is subtracted, so a shift changes only roundings.
TEST(SoftmaxRow, ShiftInvariance) {
  const std::vector<double> s = {0.3, -1.2, 2.5, 0.0, 1.1};
  const auto a = softmax(s);
  for (double c : {-1e6, -30.0, 17.0, 1e6}) {
    std::vector<double> t = s;
    for (auto& v : t) v += c;
    const auto b = softmax(t);
    // Adding c rounds each score by up to ulp(c)/2: the weights move by about that, relative.
    const double tol = 1e-15 + 4 * std::fabs(c) * 0x1p-53;
    for (std::size_t j = 0; j < s.size(); ++j) EXPECT_NEAR(a[j], b[j], tol) << "shift " << c;
  }
}

// ---- row_stats ------------------------------------------------------------------------------

// Equal weights 1/n: max 1/n, entropy ln n, and ||J||_F with J = diag(p) - p p^T:
// n diagonal entries 1/n - 1/n^2 and n(n-1) off-diagonal -1/n^2, so
// ||J||_F^2 = n (1/n - 1/n^2)^2 + n (n-1) / n^4 = (n-1) / n^2, ||J||_F = sqrt(n-1) / n.
TEST(RowStats, EqualWeights) {
  for (int n : {1, 2, 3, 10, 100, 4096}) {
    const std::vector<double> p(n, 1.0 / n);
    const RowStats s = row_stats(p.data(), n);
    EXPECT_DOUBLE_EQ(s.max_weight, 1.0 / n);
    // n terms of ln(n) / n, each rounded: about n ulps of ln n at worst.
    const double ln_n = std::log(static_cast<double>(n));
    EXPECT_NEAR(s.entropy, ln_n, 1e-15 + n * ln_n * 0x1p-52) << n;
    EXPECT_NEAR(s.jacobian_norm, std::sqrt(n - 1.0) / n, 1e-13) << n;
  }
}

TEST(RowStats, OneHot) {
  for (int n : {1, 2, 5, 64}) {
    for (int hot = 0; hot < n; hot += std::max(1, n / 3)) {
      std::vector<double> p(n, 0.0);
      p[hot] = 1.0;
      const RowStats s = row_stats(p.data(), n);
      EXPECT_EQ(s.max_weight, 1.0);
      EXPECT_EQ(s.entropy, 0.0);
      EXPECT_EQ(s.jacobian_norm, 0.0);
    }
  }
}

// Two keys p = (a, 1 - a): J = a(1-a) [[1, -1], [-1, 1]], so ||J||_F = 2 a (1 - a); zero
// weights add nothing (0 ln 0 = 0).
TEST(RowStats, TwoPointsAndZeroWeights) {
  for (double a : {0.5, 0.25, 0.9, 1e-6}) {
    const std::vector<double> p = {a, 0.0, 1.0 - a, 0.0};
    const RowStats s = row_stats(p.data(), 4);
    EXPECT_DOUBLE_EQ(s.max_weight, std::max(a, 1 - a));
    EXPECT_NEAR(s.entropy, -a * std::log(a) - (1 - a) * std::log1p(-a), 1e-15);
    // The closed form cancels terms near 1 (a few ulps of 1, ~4e-16, in ||J||^2), so the
    // norm carries about 4e-16 / (2 ||J||) of absolute error.
    const double jac = 2 * a * (1 - a);
    EXPECT_NEAR(s.jacobian_norm, jac, 1e-15 + 4e-16 / jac) << a;
  }
}

// Nearly one-hot: the true norm is 2e-9; the closed form's rounding (a few ulps of 1 in
// ||J||^2) leaves at most sqrt(4 * 2^-52) ~ 3e-8 of absolute error, never NaN.
TEST(RowStats, NearlyOneHotStaysSmallAndFinite) {
  const std::vector<double> p = {1.0 - 1e-9, 1e-9, 0.0};
  const RowStats s = row_stats(p.data(), 3);
  EXPECT_TRUE(std::isfinite(s.jacobian_norm));
  EXPECT_GE(s.jacobian_norm, 0.0);
  EXPECT_LE(s.jacobian_norm, 2e-9 + 3e-8);
  EXPECT_EQ(s.max_weight, 1.0 - 1e-9);
  long double ent = 0;
  for (int j = 0; j < 2; ++j)
    ent -= static_cast<long double>(p[j]) * std::log(static_cast<long double>(p[j]));
  EXPECT_NEAR(s.entropy, static_cast<double>(ent), 1e-21);  // ~2.2e-8, to a few ulps
}

// The closed form sum p^2 - 2 sum p^3 + (sum p^2)^2 against J built entry by entry.
TEST(RowStats, ClosedFormJacobianNormMatchesExplicitMatrix) {
  std::mt19937_64 gen(23);
  std::exponential_distribution<double> ex(1.0);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + trial % 37;
    std::vector<double> p(n);
    const double sharp = 1.0 + trial % 5;  // from flat to peaked rows
    for (auto& v : p) v = std::pow(ex(gen), sharp);
    const double total = sum(p);
    for (auto& v : p) v /= total;
    long double f2 = 0, ent = 0;
    double mx = 0;
    for (int i = 0; i < n; ++i) {
      mx = std::max(mx, p[i]);
      if (p[i] > 0)
        ent -= static_cast<long double>(p[i]) * std::log(static_cast<long double>(p[i]));
      for (int j = 0; j < n; ++j) {
        const long double jij = (i == j ? static_cast<long double>(p[i]) : 0.0L) -
                                static_cast<long double>(p[i]) * p[j];
        f2 += jij * jij;
      }
    }
    const RowStats s = row_stats(p.data(), n);
    EXPECT_EQ(s.max_weight, mx);
    EXPECT_NEAR(s.entropy, static_cast<double>(ent), 1e-12) << "trial " << trial;
    EXPECT_NEAR(s.jacobian_norm, static_cast<double>(std::sqrt(f2)), 1e-12) << "trial " << trial;
    // Bounds: max in [1/n, 1], entropy in [0, ln n], ||J||_F in [0, 1/2].
    EXPECT_GE(s.max_weight, 1.0 / n - 1e-15);
    EXPECT_LE(s.entropy, std::log(static_cast<double>(n)) + 1e-12);
    EXPECT_LE(s.jacobian_norm, 0.5 + 1e-12);
  }
}

// softmax_row then row_stats on a row from softmax: the whole chain.
TEST(RowStats, OfSoftmaxOfEqualScoresIsUniform) {
  const int n = 8;
  const auto w = softmax(std::vector<double>(n, 2.0));
  const RowStats s = row_stats(w.data(), n);
  EXPECT_NEAR(s.entropy, std::log(8.0), 1e-14);
  EXPECT_NEAR(s.jacobian_norm, std::sqrt(7.0) / 8.0, 1e-14);
}

}  // namespace
}  // namespace attn
