// test_simd.cpp: simd.hpp's exp_nonpositive against the C library's double exp, in float ulps,
// on a sample of every float in [-104, 0] and at its edges, and the same bits at every CPU level.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu_clones.hpp"
#include "simd.hpp"

namespace attn {
namespace {

// y[i] = exp_nonpositive(x[i]) through level L's shim, whole vectors then a partial one.
template <CpuLevel L>
void exp_array_body(const float* x, float* y, int n) {
  using S = simd::Simd<L, float>;
  constexpr int W = S::kLanes;
  int i = 0;
  for (; i + W <= n; i += W) S::store(y + i, simd::exp_nonpositive<S>(S::load(x + i)));
  if (i < n) S::store_n(y + i, simd::exp_nonpositive<S>(S::load_n(x + i, n - i, 0.0f)), n - i);
}
ATTN_CPU_LEVEL_COPIES(void, exp_array, (const float* x, float* y, int n), (x, y, n))

std::vector<float> exp_at(CpuLevel level, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  const int n = static_cast<int>(x.size());
  if (level == CpuLevel::v4)
    exp_array_v4(x.data(), y.data(), n);
  else if (level == CpuLevel::v3)
    exp_array_v3(x.data(), y.data(), n);
  else
    exp_array_baseline(x.data(), y.data(), n);
  return y;
}

// |y - exp(x)| in units of the float spacing at exp(x) rounded to float (2^-149 below the
// normal range).
double ulps(float y, float x) {
  const double exact = std::exp(double(x));
  const float rounded = static_cast<float>(exact);
  const double spacing =
      double(std::nextafter(rounded, std::numeric_limits<float>::infinity())) - double(rounded);
  return std::fabs(double(y) - exact) / spacing;
}

TEST(SimdExp, WithinOneUlpOnEveryLevelAndTheSameBits) {
  // Every 97th float from -0 down to -104 (1.2e7 values), and the edges.
  std::vector<float> x;
  const std::uint32_t lo = 0x80000000u, hi = 0xC2D00000u;  // -0 and -104
  for (std::uint64_t bits = lo; bits <= hi; bits += 97) {
    const std::uint32_t b = static_cast<std::uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, sizeof f);
    x.push_back(f);
  }
  for (float e :
       {0.0f, -0.0f, -1e-30f, -0x1p-149f, -87.3f, -87.34f, -100.0f, -103.27f, -103.28f, -103.97f,
        -104.0f, -104.1f, -200.0f, -3e38f, -std::numeric_limits<float>::infinity()})
    x.push_back(e);
  const std::vector<float> best = exp_at(cpu_level(), x);
  double worst = 0;
  float worst_x = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double u = x[i] < -104.0f ? (best[i] == 0.0f ? 0.0 : 1e9) : ulps(best[i], x[i]);
    if (u > worst) worst = u, worst_x = x[i];
    ASSERT_LT(u, 1.0) << "exp(" << x[i] << ") = " << best[i];
  }
  std::printf("exp_nonpositive: worst %.3f ulp (at %a) over %zu inputs\n", worst, worst_x,
              x.size());
  EXPECT_EQ(exp_at(cpu_level(), {0.0f, -0.0f})[0], 1.0f);
  EXPECT_EQ(exp_at(cpu_level(), {0.0f, -0.0f})[1], 1.0f);
  for (CpuLevel level : {CpuLevel::v3, CpuLevel::baseline}) {
    if (level > cpu_level()) continue;
    EXPECT_EQ(std::memcmp(exp_at(level, x).data(), best.data(), x.size() * sizeof(float)), 0)
        << cpu_level_name(level);
  }
}

}  // namespace
}  // namespace attn
