// test_lanes.cpp: exp_t on double packs (lanes.hpp) and the vector exp behind it
// (kernels/exp_fma.cpp, glibc 2.36's __exp_fma) against the C library's exp, bit for bit; the
// device's exp and log1p (exp_glibc.hpp, log1p_glibc.hpp) against the C library's, on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cpu_clones.hpp"
#include "lanes.hpp"

namespace attn {
namespace {

// exp over an array (a multiple of kPackLanes long), one pack at a time.
using ExpArray = void (*)(const double*, double*, std::size_t);
template <exp_fma_detail::ExpPack F>
void exp_pack_array(const double* x, double* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += kPackLanes) {
    PackD p, q;
    std::memcpy(&p, x + i, sizeof p);
    F(&p, &q);
    std::memcpy(y + i, &q, sizeof q);
  }
}
// exp_glibc (exp_glibc.hpp: the device's double exp) run on the host.
void exp_glibc_array(const double* x, double* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = exp_glibc(x[i]);
}

void exp_t_array(const double* x, double* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += kPackLanes) {
    PackD p;
    std::memcpy(&p, x + i, sizeof p);
    p = exp_t(p);
    std::memcpy(y + i, &p, sizeof p);
  }
}

// Whether this CPU runs level (and has FMA and AVX2, so glibc's exp is __exp_fma).
bool cpu_runs(CpuLevel level) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  const bool fma = __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
  if (level == CpuLevel::v4)
    return fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return fma;
#else
  (void)level;
  return false;
#endif
}

std::uint64_t bits(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
double from_bits(std::uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// The inputs, in blocks: each call of next fills x (a multiple of kPackLanes long) and says
// whether there is more.
struct Inputs {
  std::string name;
  std::function<bool(std::vector<double>&)> next;
};

constexpr double kLn2 = 0x1.62e42fefa39efp-1;

std::vector<Inputs> all_inputs() {
  std::vector<Inputs> in;
  const std::size_t block = 1 << 16;
  // Random doubles: 5e6 uniform on [-50, 50], 5e6 on [-745, 710] (subnormal results, the
  // rare paths beyond 512).
  auto uniform = [block](double lo, double hi, std::size_t count, std::uint64_t seed) {
    auto gen = std::make_shared<std::mt19937_64>(seed);
    auto left = std::make_shared<std::size_t>(count);
    return [=](std::vector<double>& x) {
      std::uniform_real_distribution<double> u(lo, hi);
      x.resize(block);
      for (double& v : x) v = u(*gen);
      *left -= std::min(*left, block);
      return *left > 0;
    };
  };
  in.push_back({"uniform [-50, 50]", uniform(-50, 50, 5'000'000, 1)});
  in.push_back({"uniform [-745, 710]", uniform(-745, 710, 5'000'000, 2)});
  // Random bit patterns (every exponent, nan payloads, both signs).
  {
    auto gen = std::make_shared<std::mt19937_64>(3);
    auto left = std::make_shared<std::size_t>(1'000'000);
    in.push_back({"random bits", [=](std::vector<double>& x) {
                    x.resize(block);
                    for (double& v : x) v = from_bits((*gen)());
                    *left -= std::min(*left, block);
                    return *left > 0;
                  }});
  }
  // The table boundaries k ln2 / 128 over [-745, 710], and 2 ulps either side.
  {
    auto k = std::make_shared<long>(-137'700);
    in.push_back({"k ln2/128 +- 2 ulp", [=](std::vector<double>& x) {
                    x.clear();
                    for (; x.size() < block && *k <= 131'100; ++*k) {
                      const double c = static_cast<double>(*k) * kLn2 / 128;
                      const std::uint64_t b = bits(c);
                      for (int d = -2; d <= 2; ++d) x.push_back(from_bits(b + d));
                    }
                    x.resize((x.size() + kPackLanes - 1) / kPackLanes * kPackLanes, 0.0);
                    return *k <= 131'100;
                  }});
  }
  // Special values and the edges of glibc's paths.
  in.push_back({"special values", [](std::vector<double>& x) {
                  const double inf = std::numeric_limits<double>::infinity();
                  const double nan = std::numeric_limits<double>::quiet_NaN();
                  const double tiny = std::numeric_limits<double>::denorm_min();
                  const double edges[] = {0x1p-54,
                                          512.0,
                                          1024.0,                // glibc's path boundaries in |x|
                                          709.782712893384,      // exp(x) overflows just above
                                          0x1.62e42fefa39efp+9,  // log(DBL_MAX)
                                          745.1332191019411,  // exp(-x) underflows to 0 just above
                                          708.3964185322641,  // exp(-x) is the smallest normal
                                          1.0,
                                          0.5,
                                          1e-10,
                                          1e-300,
                                          tiny,
                                          std::numeric_limits<double>::min(),
                                          std::numeric_limits<double>::max(),
                                          50.0,
                                          100.0,
                                          kLn2,
                                          kLn2 / 256};
                  x = {0.0,
                       -0.0,
                       inf,
                       -inf,
                       nan,
                       -nan,
                       from_bits(0x7ff0000000000001ull),
                       from_bits(0xfff8000000000123ull)};
                  for (double e : edges)
                    for (double s : {e, -e})
                      for (int d = -4; d <= 4; ++d) x.push_back(from_bits(bits(s) + d));
                  // A sweep through the subnormal results and the overflow edge.
                  for (double v = -745.2; v < -707.0; v += 0.001) x.push_back(v);
                  for (double v = 709.0; v < 710.0; v += 0.0001) x.push_back(v);
                  x.resize((x.size() + kPackLanes - 1) / kPackLanes * kPackLanes, 1.0);
                  return false;
                }});
  return in;
}

// Runs every input through exp, compares with std::exp bit for bit, and reports the first few
// differences; returns how many inputs it compared.
std::size_t expect_libm_bits(ExpArray exp_array) {
  std::size_t compared = 0;
  for (Inputs& in : all_inputs()) {
    std::vector<double> x, y;
    std::size_t differ = 0, count = 0;
    bool more = true;
    while (more) {
      more = in.next(x);
      y.resize(x.size());
      exp_array(x.data(), y.data(), x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double want = std::exp(x[i]);
        if (bits(y[i]) != bits(want) && ++differ <= 5)
          ADD_FAILURE() << in.name << ": exp(" << std::hexfloat << x[i] << ") = " << y[i]
                        << ", libm " << want;
      }
      count += x.size();
    }
    EXPECT_EQ(differ, 0u) << in.name << ": " << differ << " of " << count << " differ";
    compared += count;
  }
  return compared;
}

TEST(ExpFma, MatchesLibmAtV4) {
  if (!cpu_runs(CpuLevel::v4)) GTEST_SKIP() << "this CPU has no AVX-512 (x86-64-v4)";
  const std::size_t n = expect_libm_bits(exp_pack_array<exp_fma_detail::exp_pack_v4>);
  std::printf("compared %zu inputs\n", n);
}

TEST(ExpFma, MatchesLibmAtV3) {
  if (!cpu_runs(CpuLevel::v3))
    GTEST_SKIP() << "this CPU lacks FMA or AVX2: glibc's exp is not __exp_fma";
  const std::size_t n = expect_libm_bits(exp_pack_array<exp_fma_detail::exp_pack_v3>);
  std::printf("compared %zu inputs\n", n);
}

// exp_t on double packs, at whatever cpu_level() gives (lane by lane at the baseline).
TEST(ExpFma, ExpTMatchesLibm) { expect_libm_bits(exp_t_array); }

// The device's double exp, the same steps compiled for the host: the C library's bits wherever
// that library's exp is __exp_fma (a CPU with FMA and AVX2), so that a kernel's softmax and its
// CPU twin's agree bit for bit.
TEST(ExpGlibc, MatchesLibm) {
  if (!cpu_runs(CpuLevel::v3))
    GTEST_SKIP() << "this CPU lacks FMA or AVX2: glibc's exp is not __exp_fma";
  const std::size_t n = expect_libm_bits(exp_glibc_array);
  std::printf("compared %zu inputs\n", n);
}

// The device's log1p (log1p_glibc.hpp), compiled for the host: the C library's bits wherever
// that library's log1p is __log1p_fma (a CPU with FMA and AVX2), on the ziggurat tail's
// arguments −U (U = k 2^-53 in [0, 1), numpy's next_double), uniform doubles, every exponent
// and random bit patterns, and the edges of each of its paths (x < −0.2929 or x ≥ 0.41422
// reduced, f = 0 and |f| < 2^-20 after the reduction, |x| < 2^-29 and 2^-54, x ≥ 2^53, the
// √2 normalisation, −1, infinities, NaN). NaN results agree as NaN.
TEST(Log1pGlibc, MatchesLibm) {
  if (!cpu_runs(CpuLevel::v3))
    GTEST_SKIP() << "this CPU lacks FMA or AVX2: glibc's log1p is not __log1p_fma";
  std::vector<double> x;
  std::mt19937_64 rng(11);
  for (int i = 0; i < 4'000'000; ++i) x.push_back(-static_cast<double>(rng() >> 11) * 0x1p-53);
  std::uniform_real_distribution<double> open(-1.0, 1.0);
  for (int i = 0; i < 2'000'000; ++i) x.push_back(open(rng));
  std::uniform_real_distribution<double> exponent(-80.0, 1023.0);
  for (int i = 0; i < 2'000'000; ++i) {
    const double v = std::exp2(exponent(rng));
    x.push_back(v);
    x.push_back(-v);
  }
  for (int i = 0; i < 1'000'000; ++i) x.push_back(from_bits(rng()));
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> edges = {0.0,
                               0x1p-54,
                               0x1p-29,
                               0x1.a827ap-2 /* 0.41422 */,
                               0x1.2bec3p-2 /* 0.2929 */,
                               1.0,
                               0x1p53,
                               0x1p1023,
                               std::numeric_limits<double>::min(),
                               std::numeric_limits<double>::denorm_min(),
                               std::numeric_limits<double>::max()};
  for (int k = -60; k <= 1023; ++k) {
    edges.push_back(std::ldexp(1.0, k) - 1.0);             // f = 0 after the reduction
    edges.push_back(std::ldexp(std::sqrt(2.0), k) - 1.0);  // the √2 normalisation's edge
    edges.push_back(std::ldexp(1.0 + 0x1p-21, k) - 1.0);   // |f| < 2^-20
    edges.push_back(std::ldexp(1.0 - 0x1p-22, k) - 1.0);
  }
  for (const double e : edges)
    for (const double s : {e, -e})
      for (int d = -8; d <= 8; ++d) x.push_back(from_bits(bits(s) + d));
  for (const double v : {inf, -inf, std::numeric_limits<double>::quiet_NaN(), -1.0}) x.push_back(v);
  std::size_t differ = 0;
  for (const double v : x) {
    const double got = log1p_glibc(v), want = std::log1p(v);
    const bool same = bits(got) == bits(want) || (std::isnan(got) && std::isnan(want));
    if (!same && ++differ <= 5)
      ADD_FAILURE() << "log1p(" << std::hexfloat << v << ") = " << got << ", libm " << want;
  }
  EXPECT_EQ(differ, 0u) << differ << " of " << x.size() << " differ";
  std::printf("compared %zu inputs\n", x.size());
}

// exp_shifted (a softmax row's exponentials in one call) at each level this CPU runs: x[i] is
// std::exp(x[i] − shift) in every lane, and the sum is theirs added in order from 0.
TEST(ExpFma, ShiftedRowIsExpOfTheDifferenceAndItsSum) {
  using Shifted = void (*)(PackD*, int, const PackD*, PackD*);
  std::vector<std::pair<CpuLevel, Shifted>> levels = {
      {CpuLevel::baseline, exp_fma_detail::exp_shifted_baseline}};
  if (cpu_runs(CpuLevel::v3)) levels.push_back({CpuLevel::v3, exp_fma_detail::exp_shifted_v3});
  if (cpu_runs(CpuLevel::v4)) levels.push_back({CpuLevel::v4, exp_fma_detail::exp_shifted_v4});
  std::mt19937_64 rng(7);
  std::normal_distribution<double> score(0.0, 8.0);
  for (const auto& [level, shifted] : levels)
    for (int count = 1; count <= 17; ++count) {
      // 64-byte aligned, as the training's workspace (std::vector<PackD> is not).
      alignas(64) PackD x[17], before[17], shift, sum;
      for (int l = 0; l < kPackLanes; ++l) shift[l] = score(rng);
      for (int i = 0; i < count; ++i)
        for (int l = 0; l < kPackLanes; ++l) before[i][l] = x[i][l] = score(rng);
      shifted(x, count, &shift, &sum);
      for (int l = 0; l < kPackLanes; ++l) {
        double want_sum = 0.0;
        for (int i = 0; i < count; ++i) {
          const double want = std::exp(before[i][l] - shift[l]);
          EXPECT_EQ(bits(x[i][l]), bits(want))
              << cpu_level_name(level) << ": count " << count << ", lane " << l << ", i " << i;
          want_sum += want;
        }
        EXPECT_EQ(bits(sum[l]), bits(want_sum))
            << cpu_level_name(level) << ": count " << count << ", lane " << l;
      }
    }
}

// At levels v3 and v4 exp_t runs the level's exp_pack (else the speed is silently lost, as
// when the start-up sample disagrees with this libm).
TEST(ExpFma, UsedAtV3AndV4) {
  const CpuLevel level = cpu_level();
  if (level == CpuLevel::baseline) {
    EXPECT_TRUE(exp_t_takes_exp_pack());  // exp_pack_baseline: std::exp per lane
    GTEST_SKIP() << "running at the baseline level: exp_t calls std::exp per lane";
  }
  EXPECT_TRUE(exp_t_takes_exp_pack())
      << "exp_fma disagrees with this libm's exp on the start-up sample";
}

// pick_ge / pick_gt on packs (compared as two halves) give the scalar ?: in every lane, for
// every pair of special and ordinary values (NaN never compares, -0 == +0, infinities).
TEST(Packs, PickIsTheScalarChoiceInEveryLane) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> v = {nan, -inf, -1.5, -0.0, 0.0, 4.9e-324, 1.5, 2.0, inf};
  std::vector<std::pair<double, double>> pairs;
  for (double a : v)
    for (double b : v) pairs.emplace_back(a, b);
  for (std::size_t first = 0; first < pairs.size(); first += kPackLanes) {
    PackD a{}, b{}, x{}, y{};
    for (int l = 0; l < kPackLanes; ++l) {
      const auto& [pa, pb] = pairs[(first + l) % pairs.size()];
      a[l] = pa;
      b[l] = pb;
      x[l] = 100 + l;
      y[l] = 200 + l;
    }
    const PackD ge = pick_ge(a, b, x, y), gt = pick_gt(a, b, x, y);
    for (int l = 0; l < kPackLanes; ++l) {
      EXPECT_EQ(ge[l], a[l] >= b[l] ? x[l] : y[l]) << a[l] << " >= " << b[l] << ", lane " << l;
      EXPECT_EQ(gt[l], a[l] > b[l] ? x[l] : y[l]) << a[l] << " > " << b[l] << ", lane " << l;
    }
  }
}

}  // namespace
}  // namespace attn
