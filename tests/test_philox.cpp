// test_philox.cpp: philox.hpp (Philox4x32-10, Box-Muller normals) and fast_math.hpp.
//
// Sources of truth: Random123's own philox4x32 (Debian's librandom123-dev, used when CMake finds
// it: ATTN_HAVE_RANDOM123), the known-answer vectors Random123 publishes (examples/kat_vectors),
// std::log / std::sin / std::cos in double and long double, and the normal distribution's exact
// moments and CDF (std::erfc). Statistical tolerances are 5 standard errors of the statistic;
// every sample comes from a fixed key, so the outcome is deterministic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "fast_math.hpp"
#include "helpers.hpp"
#include "philox.hpp"

#if defined(ATTN_HAVE_RANDOM123)
#include <Random123/philox.h>
#endif

namespace attn {
namespace {

using philox::Counter;
using philox::Key;

constexpr double kPi = 3.141592653589793238462643383279502884;

// The spacing of floats at |y| (y a double): 2^(exponent - 23), down to the subnormal step.
double float_ulp(double y) {
  y = std::fabs(y);
  if (y < std::numeric_limits<float>::min()) return 0x1p-149;
  return std::ldexp(1.0, std::ilogb(y) - 23);
}

float bits_to_float(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}
std::uint32_t float_to_bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// ---- Philox4x32-10 --------------------------------------------------------------------------

struct Kat {
  std::uint32_t ctr[4], key[2], out[4];
};
// Random123 1.14, examples/kat_vectors, the three "philox4x32 10" lines (counter, key, output;
// the same vectors appear in the SC'11 paper's distribution).
constexpr Kat kPhiloxKat[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

TEST(Philox, KnownAnswerVectors) {
  for (const Kat& v : kPhiloxKat) {
    const Counter c{{v.ctr[0], v.ctr[1], v.ctr[2], v.ctr[3]}};
    const Key k{{v.key[0], v.key[1]}};
    const Counter out = philox::philox4x32_10(c, k);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out.v[i], v.out[i]) << "ctr " << std::hex << v.ctr[0];
#if defined(ATTN_HAVE_RANDOM123)
    // The constants above, confirmed by Random123's implementation.
    r123::Philox4x32 ref;
    const r123::Philox4x32::ctr_type rc = {{v.ctr[0], v.ctr[1], v.ctr[2], v.ctr[3]}};
    const r123::Philox4x32::key_type rk = {{v.key[0], v.key[1]}};
    const auto ro = ref(rc, rk);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(ro.v[i], v.out[i]) << "Random123 disagrees with the KAT";
#endif
  }
}

#if defined(ATTN_HAVE_RANDOM123)
TEST(Philox, MatchesRandom123OnRandomCountersAndKeys) {
  std::mt19937_64 gen(20111115);
  r123::Philox4x32 ref;
  for (int trial = 0; trial < 200000; ++trial) {
    const std::uint64_t a = gen(), b = gen(), k = gen();
    const Counter c{
        {std::uint32_t(a), std::uint32_t(a >> 32), std::uint32_t(b), std::uint32_t(b >> 32)}};
    const Key key{{std::uint32_t(k), std::uint32_t(k >> 32)}};
    const Counter out = philox::philox4x32_10(c, key);
    const r123::Philox4x32::ctr_type rc = {{c.v[0], c.v[1], c.v[2], c.v[3]}};
    const r123::Philox4x32::key_type rk = {{key.v[0], key.v[1]}};
    const auto ro = ref(rc, rk);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(out.v[i], ro.v[i]) << "trial " << trial << " word " << i;
  }
}

// One round alone (no key bump) is Random123's philox4x32_R with R = 1.
TEST(Philox, SingleRoundMatchesRandom123) {
  std::mt19937_64 gen(7);
  for (int trial = 0; trial < 20000; ++trial) {
    const std::uint64_t a = gen(), b = gen(), k = gen();
    const Counter c{
        {std::uint32_t(a), std::uint32_t(a >> 32), std::uint32_t(b), std::uint32_t(b >> 32)}};
    const Key key{{std::uint32_t(k), std::uint32_t(k >> 32)}};
    const Counter out = philox::philox_round(c, key);
    const philox4x32_ctr_t rc = {{c.v[0], c.v[1], c.v[2], c.v[3]}};
    const philox4x32_key_t rk = {{key.v[0], key.v[1]}};
    const philox4x32_ctr_t ro = philox4x32_R(1, rc, rk);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(out.v[i], ro.v[i]) << "trial " << trial;
  }
}

// normals4 = Box-Muller on the words of counter (block, stream, item low, item high).
TEST(Philox, Normals4UsesTheDocumentedCounterLayout) {
  std::mt19937_64 gen(99);
  r123::Philox4x32 ref;
  for (int trial = 0; trial < 5000; ++trial) {
    const std::uint64_t seed = gen(), item = gen();
    const auto stream = static_cast<std::uint32_t>(gen()),
               block = static_cast<std::uint32_t>(gen());
    float got[4];
    philox::normals4(philox::key_from_seed(seed), stream, item, block, got);
    const r123::Philox4x32::ctr_type rc = {
        {block, stream, std::uint32_t(item), std::uint32_t(item >> 32)}};
    const r123::Philox4x32::key_type rk = {{std::uint32_t(seed), std::uint32_t(seed >> 32)}};
    const auto w = ref(rc, rk);
    float want[4];
    philox::box_muller(w.v[0], w.v[1], want[0], want[1]);
    philox::box_muller(w.v[2], w.v[3], want[2], want[3]);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(float_to_bits(got[i]), float_to_bits(want[i])) << trial;
  }
}
#else
TEST(Philox, MatchesRandom123OnRandomCountersAndKeys) {
  GTEST_SKIP() << "Random123 headers not found (Debian librandom123-dev)";
}
#endif

TEST(Philox, KeyFromSeedIsLowWordThenHighWord) {
  const Key k = philox::key_from_seed(0x0123456789abcdefull);
  EXPECT_EQ(k.v[0], 0x89abcdefu);
  EXPECT_EQ(k.v[1], 0x01234567u);
}

// ---- fast_math ------------------------------------------------------------------------------

// Worst error of f over floats x, in float ulps of the exact value.
struct UlpCheck {
  double worst = 0;
  float worst_at = 0;
  void add(float x, double approx, double exact) {
    double err;
    if (exact == 0)
      err = approx == 0 ? 0 : std::numeric_limits<double>::infinity();
    else
      err = std::fabs(approx - exact) / float_ulp(exact);
    if (err > worst) {
      worst = err;
      worst_at = x;
    }
  }
};

TEST(FastMath, LogPositiveWithinTwoUlpsOnDenseGridOfTwoToMinus32ToOne) {
  UlpCheck check;
  auto at = [&](std::uint32_t bits) {
    const float x = bits_to_float(bits);
    check.add(x, fm::log_positive(x), static_cast<double>(std::log(static_cast<long double>(x))));
  };
  const std::uint32_t lo = float_to_bits(0x1p-32f), hi = float_to_bits(1.0f);
  for (std::uint32_t b = lo; b <= hi; b += 61) at(b);  // 4.4 million floats across 32 binades
  at(hi);
  // Every float near the ends and around the range reduction's split at sqrt(1/2).
  const std::uint32_t split = float_to_bits(0.70710678f);
  for (std::uint32_t d = 0; d < (1u << 16); ++d) {
    at(lo + d);
    at(hi - d);
    at(split - (1u << 15) + d);
  }
  EXPECT_LE(check.worst, 2.0) << "worst at x = " << check.worst_at;
  EXPECT_EQ(fm::log_positive(1.0f), 0.0f);
}

// Exact powers of two: e ln 2 with the split constant, as accurate as ln 2 rounded once more.
TEST(FastMath, LogPositiveOfPowersOfTwo) {
  for (int e = 0; e <= 32; ++e) {
    const float x = std::ldexp(1.0f, -e);
    const double exact = -e * static_cast<double>(std::log(2.0L));
    EXPECT_LE(std::fabs(fm::log_positive(x) - exact), float_ulp(exact)) << "e = " << e;
  }
}

TEST(FastMath, SincosHalfPiWithinTwoUlpsOnDenseGrid) {
  UlpCheck sin_check, cos_check;
  double sin_abs_worst = 0;
  auto at = [&](float t) {
    float s, c;
    fm::sincos_halfpi(t, s, c);
    const long double a = static_cast<long double>(kPi) / 2 * t;
    const double es = static_cast<double>(std::sin(a)), ec = static_cast<double>(std::cos(a));
    sin_check.add(t, s, es);
    cos_check.add(t, c, ec);
    // Near 0 (|sin| < 1/2), also absolutely: within 2^-24 (2 ulps of 1/2).
    if (std::fabs(es) < 0.5) sin_abs_worst = std::fmax(sin_abs_worst, std::fabs(s - es));
  };
  for (int i = 0; i <= (1 << 22); ++i) at(-0.5f + static_cast<float>(i) * 0x1p-22f);  // exact
  // Small |t|, down to 2^-120, where sin(pi t / 2) is tiny.
  for (int e = 23; e <= 120; ++e)
    for (int j = 0; j < 64; ++j) {
      const float t = std::ldexp(1.0f + j / 64.0f, -e);
      at(t);
      at(-t);
    }
  EXPECT_LE(sin_check.worst, 2.0) << "sin worst at t = " << sin_check.worst_at;
  EXPECT_LE(cos_check.worst, 2.0) << "cos worst at t = " << cos_check.worst_at;
  EXPECT_LE(sin_abs_worst, 0x1p-24);
  float s, c;
  fm::sincos_halfpi(0.0f, s, c);
  EXPECT_EQ(s, 0.0f);
  EXPECT_EQ(c, 1.0f);
}

TEST(FastMath, SincosHalfPiSymmetry) {
  // sin is odd and cos even in t: the polynomials are in t^2, so the bits must agree.
  for (int i = 1; i <= (1 << 12); ++i) {
    const float t = static_cast<float>(i) * 0x1p-13f;
    float s1, c1, s2, c2;
    fm::sincos_halfpi(t, s1, c1);
    fm::sincos_halfpi(-t, s2, c2);
    ASSERT_EQ(s1, -s2) << t;
    ASSERT_EQ(c1, c2) << t;
  }
}

// ---- Box-Muller -----------------------------------------------------------------------------

// box_muller(a, b) against exact mathematics: u1 = (floor(a/2) + 1/2) 2^-31,
// theta = 2 pi b / 2^32 - pi/4 (quadrant b >> 30, then t in [-1/2, 1/2) within it), output
// r (cos theta, sin theta) with r = sqrt(-2 ln u1). Error budget: u1 is rounded to float
// (relative 2^-23 in ln u1 at worst, so 2^-23 / r in r), log and sin/cos 2 ulps, a few roundings.
TEST(BoxMuller, MatchesExactPolarFormula) {
  std::mt19937_64 gen(42);
  auto check = [](std::uint32_t a, std::uint32_t b) {
    float n0, n1;
    philox::box_muller(a, b, n0, n1);
    const long double u1 = (static_cast<long double>(a >> 1) + 0.5L) * 0x1p-31L;
    const long double r = std::sqrt(-2.0L * std::log(u1));
    const long double theta =
        2 * static_cast<long double>(kPi) * b * 0x1p-32L - static_cast<long double>(kPi) / 4;
    const double e0 = static_cast<double>(r * std::cos(theta));
    const double e1 = static_cast<double>(r * std::sin(theta));
    const double rd = static_cast<double>(r);
    const double tol = 0x1p-22 / rd + 0x1p-20 * rd;
    EXPECT_NEAR(n0, e0, tol) << "a = " << a << " b = " << b;
    EXPECT_NEAR(n1, e1, tol) << "a = " << a << " b = " << b;
  };
  for (int trial = 0; trial < 100000; ++trial) {
    const std::uint64_t w = gen();
    check(static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(w >> 32));
    if (::testing::Test::HasFailure()) return;
  }
  // Every quadrant and its edges.
  for (std::uint32_t q = 0; q < 4; ++q)
    for (std::uint32_t b : {q << 30, (q << 30) | 1u, (q << 30) | 0x1fffffffu,
                            (q << 30) | 0x20000000u, (q << 30) | 0x3fffffffu})
      check(0x12345678u, b);
}

// The smallest u1 is 2^-32 (a = 0 or 1), so no normal exceeds sqrt(64 ln 2) = 8 sqrt(ln 2) =
// 6.6604 in absolute value; b = 2^29 is angle 0 (t = 0, quadrant 0), where n0 is that radius.
TEST(BoxMuller, LargestRadiusIsEightSqrtLn2) {
  const double rmax = 8.0 * std::sqrt(std::log(2.0));
  for (std::uint32_t a : {0u, 1u}) {
    float n0, n1;
    philox::box_muller(a, 0x20000000u, n0, n1);
    EXPECT_NEAR(n0, rmax, 4 * float_ulp(rmax));
    EXPECT_EQ(n1, 0.0f);
  }
  // Sweep a and b: every output finite and within the radius.
  std::mt19937 gen(1);
  float largest = 0;
  for (std::uint64_t a = 0; a <= 0xffffffffull; a += 4093) {
    float n0, n1;
    philox::box_muller(static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(gen()), n0, n1);
    ASSERT_TRUE(std::isfinite(n0) && std::isfinite(n1)) << a;
    largest = std::fmax(largest, std::fmax(std::fabs(n0), std::fabs(n1)));
  }
  EXPECT_LE(largest, rmax * (1 + 1e-6));
  EXPECT_LT(largest, 6.7f);
  // u1 near 1 (a = 2^32 - 1): the exact radius is sqrt(2 * 2^-32) ~ 2.2e-5.
  float n0, n1;
  philox::box_muller(0xffffffffu, 0x12345678u, n0, n1);
  EXPECT_LE(std::hypot(n0, n1), 3e-5);
}

// A sample of 2 million normals from normals4 with a fixed key.
struct NormalSample {
  static constexpr int kItems = 500000;
  std::vector<float> v;  // item-major, 4 per item (block 0, stream 0)
  NormalSample() : v(4 * std::size_t(kItems)) {
    const Key key = philox::key_from_seed(0x5eed5eed12345ull);
    for (int i = 0; i < kItems; ++i) philox::normals4(key, 0, std::uint64_t(i), 0, &v[4 * i]);
  }
  static const NormalSample& get() {
    static const NormalSample s;
    return s;
  }
};

TEST(BoxMuller, MomentsOfTwoMillionNormals) {
  const auto& x = NormalSample::get().v;
  const double n = static_cast<double>(x.size());
  long double s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  float largest = 0;
  for (float f : x) {
    const long double v = f;
    s1 += v;
    s2 += v * v;
    s3 += v * v * v;
    s4 += v * v * v * v;
    largest = std::fmax(largest, std::fabs(f));
  }
  // Raw moments about 0 against N(0, 1): E x = 0, E x^2 = 1, E x^3 = 0, E x^4 = 3, with
  // standard errors sqrt(Var(x^k) / n): Var x = 1, Var x^2 = 2, Var x^3 = 15, Var x^4 = 96.
  const double m1 = double(s1 / n), m2 = double(s2 / n), m3 = double(s3 / n), m4 = double(s4 / n);
  EXPECT_NEAR(m1, 0.0, 5 * std::sqrt(1.0 / n));
  EXPECT_NEAR(m2, 1.0, 5 * std::sqrt(2.0 / n));
  EXPECT_NEAR(m3, 0.0, 5 * std::sqrt(15.0 / n));
  EXPECT_NEAR(m4, 3.0, 5 * std::sqrt(96.0 / n));
  // Central: variance, skewness, kurtosis (standard errors sqrt(2/n), sqrt(6/n), sqrt(24/n)).
  const double var = m2 - m1 * m1;
  const double skew = (m3 - 3 * m1 * m2 + 2 * m1 * m1 * m1) / std::pow(var, 1.5);
  const double kurt = (m4 - 4 * m1 * m3 + 6 * m1 * m1 * m2 - 3 * m1 * m1 * m1 * m1) / (var * var);
  EXPECT_NEAR(var, 1.0, 5 * std::sqrt(2.0 / n));
  EXPECT_NEAR(skew, 0.0, 5 * std::sqrt(6.0 / n));
  EXPECT_NEAR(kurt, 3.0, 5 * std::sqrt(24.0 / n));
  EXPECT_LT(largest, 6.7f);
  EXPECT_GT(largest, 4.0f);  // P(max of 2e6 normals < 4) ~ exp(-2e6 * 6.3e-5) ~ 0
}

TEST(BoxMuller, CdfAtFixedPointsAndChiSquare) {
  const auto& x = NormalSample::get().v;
  const double n = static_cast<double>(x.size());
  auto phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  for (double z : {-4.0, -3.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0}) {
    long count = 0;
    for (float f : x) count += f < z;
    const double p = phi(z), se = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(count / n, p, 5 * se) << "P(x < " << z << ")";
  }
  // Chi-square over 18 bins with edges -4, -3.5, ..., 4 (plus the two tails).
  std::vector<double> edges;
  for (double e = -4.0; e <= 4.0 + 1e-9; e += 0.5) edges.push_back(e);
  std::vector<long> counts(edges.size() + 1, 0);
  for (float f : x) {
    std::size_t bin = 0;
    while (bin < edges.size() && f >= edges[bin]) ++bin;
    ++counts[bin];
  }
  double chi2 = 0;
  for (std::size_t bin = 0; bin < counts.size(); ++bin) {
    const double lo = bin == 0 ? 0.0 : phi(edges[bin - 1]);
    const double hi = bin == edges.size() ? 1.0 : phi(edges[bin]);
    const double expected = n * (hi - lo);
    chi2 += (counts[bin] - expected) * (counts[bin] - expected) / expected;
  }
  const double dof = static_cast<double>(counts.size() - 1);
  // Chi-square with 17 dof: mean 17, sd sqrt(34); 17 + 5 sd = 46 (a p-value below 1e-4).
  EXPECT_LT(chi2, dof + 5 * std::sqrt(2 * dof)) << "chi2 = " << chi2;
}

double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  long double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
  const double n = static_cast<double>(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    sa += a[i];
    sb += b[i];
    saa += (long double)a[i] * a[i];
    sbb += (long double)b[i] * b[i];
    sab += (long double)a[i] * b[i];
  }
  const long double cov = sab / n - (sa / n) * (sb / n);
  const long double va = saa / n - (sa / n) * (sa / n), vb = sbb / n - (sb / n) * (sb / n);
  return static_cast<double>(cov / std::sqrt(va * vb));
}

// The two outputs of one Box-Muller pair are independent normals, and so are the two pairs of
// one counter, neighbouring items, neighbouring blocks (how one row's q and k entries are
// laid out) and streams. Correlation of independent variables has standard error 1/sqrt(n);
// the squares test the shared radius of a pair too (n0^2 and n1^2 are independent as well).
TEST(BoxMuller, OutputsAreUncorrelated) {
  const auto& x = NormalSample::get().v;
  const int items = NormalSample::kItems;
  const Key key = philox::key_from_seed(0x5eed5eed12345ull);
  std::vector<double> n0(items), n1(items), n2(items), n3(items), sq0(items), sq1(items),
      next_item(items), other_block(items), other_stream(items);
  for (int i = 0; i < items; ++i) {
    n0[i] = x[4 * i];
    n1[i] = x[4 * i + 1];
    n2[i] = x[4 * i + 2];
    n3[i] = x[4 * i + 3];
    sq0[i] = n0[i] * n0[i];
    sq1[i] = n1[i] * n1[i];
    next_item[i] = x[4 * ((i + 1) % items)];
    float o[4];
    philox::normals4(key, 0, std::uint64_t(i), 1, o);
    other_block[i] = o[0];
    philox::normals4(key, 1, std::uint64_t(i), 0, o);
    other_stream[i] = o[0];
  }
  const double bound = 5.0 / std::sqrt(static_cast<double>(items));
  EXPECT_LT(std::fabs(correlation(n0, n1)), bound) << "pair";
  EXPECT_LT(std::fabs(correlation(sq0, sq1)), bound) << "pair, squares";
  EXPECT_LT(std::fabs(correlation(n0, n2)), bound) << "second pair";
  EXPECT_LT(std::fabs(correlation(n1, n3)), bound) << "second pair";
  EXPECT_LT(std::fabs(correlation(n0, next_item)), bound) << "neighbouring items";
  EXPECT_LT(std::fabs(correlation(n0, other_block)), bound) << "neighbouring blocks";
  EXPECT_LT(std::fabs(correlation(n0, other_stream)), bound) << "streams";
  // The test can fail: a variable is perfectly correlated with itself.
  EXPECT_GT(correlation(n0, n0), 0.999999);
}

// The rotation by the quadrant, written with masks on the float bits (so that AVX2 vectorizes
// it), is the rotation of the file comment: x = (q & 1) ? -s : c, y = (q & 1) ? c : s, both
// negated when q & 2, then times r; checked bit for bit on every quadrant and random words.
TEST(BoxMuller, QuadrantRotationIsTheDocumentedFormula) {
  std::mt19937_64 gen(7);
  for (int trial = 0; trial < 200000; ++trial) {
    const std::uint64_t w = gen();
    const auto a = static_cast<std::uint32_t>(w);
    const std::uint32_t b = (static_cast<std::uint32_t>(w >> 32) & 0x3fffffffu) |
                            (static_cast<std::uint32_t>(trial & 3) << 30);
    const float u1 =
        fm::fma(static_cast<float>(static_cast<std::int32_t>(a >> 1)), 0x1p-31f, 0x1p-32f);
    const float r = std::sqrt(-2.0f * fm::log_positive(u1));
    const float t =
        static_cast<float>(static_cast<std::int32_t>(b & 0x3fffffffu) - (1 << 29)) * 0x1p-30f;
    float s, c;
    fm::sincos_halfpi(t, s, c);
    const std::uint32_t q = b >> 30;
    const float x = (q & 1u) ? -s : c, y = (q & 1u) ? c : s;
    const float want0 = r * ((q & 2u) ? -x : x), want1 = r * ((q & 2u) ? -y : y);
    float n0, n1;
    philox::box_muller(a, b, n0, n1);
    ASSERT_EQ(float_to_bits(n0), float_to_bits(want0)) << "a = " << a << " b = " << b;
    ASSERT_EQ(float_to_bits(n1), float_to_bits(want1)) << "a = " << a << " b = " << b;
  }
}

TEST(BoxMuller, SameInputsSameBits) {
  const Key key = philox::key_from_seed(123);
  float a[4], b[4];
  philox::normals4(key, 5, 1ull << 40, 3, a);
  philox::normals4(key, 5, 1ull << 40, 3, b);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(float_to_bits(a[i]), float_to_bits(b[i]));
  philox::normals4(key, 5, (1ull << 40) + 1, 3, b);  // another item: other values
  int same = 0;
  for (int i = 0; i < 4; ++i) same += a[i] == b[i];
  EXPECT_LT(same, 4);
}

}  // namespace
}  // namespace attn
