// test_gpu_attention.cpp: the GPU attention path under the non-finite rules and
// `demo attention --device cuda` against `--device cpu`, ctest label `gpu`. Every
// test skips when no GPU answers. Stated tolerances (README "Same answers on CPU and GPU"):
// float64 1e-12, float32 2e-5, relative to 1 + |cpu|; the non-finite cases are exact.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include "attention.hpp"
#include "cuda_device.hpp"
#include "helpers.hpp"

namespace attn {
namespace {

#define REQUIRE_GPU()                                        \
  do {                                                       \
    const GpuInfo g = query_gpu();                           \
    if (!g.present) GTEST_SKIP() << "no GPU: " << g.why_not; \
  } while (0)

template <class T>
struct Run {
  std::vector<T> q, k, v, s, p, o;
};

template <class T>
Run<T> forward(const AttentionShape& sh, const std::vector<T>& x, const std::vector<T>& wq,
               const std::vector<T>& wk, const std::vector<T>& wv, bool gpu) {
  Run<T> r;
  r.q.assign(std::size_t(sh.batch) * sh.n * sh.d_k, T(-7));
  r.k = r.q;
  r.v.assign(std::size_t(sh.batch) * sh.n * sh.d_v, T(-7));
  r.o = r.v;
  r.s.assign(std::size_t(sh.batch) * sh.n * sh.n, T(-7));
  r.p = r.s;
  const AttentionProblem<T> prob{sh,         x.data(),   wq.data(),  wk.data(),
                                 wv.data(),  r.q.data(), r.k.data(), r.v.data(),
                                 r.s.data(), r.p.data(), r.o.data()};
  if (gpu)
    attention_forward_cuda_host(prob);
  else
    attention_forward_cpu(prob);
  return r;
}

template <class T>
class GpuAttentionNonFinite : public ::testing::Test {};
using Floats = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GpuAttentionNonFinite, Floats);

// x = [1, NaN] (and +-inf), W = [[1]], causal, in 3 batch entries: word 0's weight is 1 and
// its output 1, exactly; the causal weighted sum never reads the masked value.
TYPED_TEST(GpuAttentionNonFinite, MaskedKeyOrValueNeverReachesAVisibleOutput) {
  REQUIRE_GPU();
  using T = TypeParam;
  for (T bad : {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                -std::numeric_limits<T>::infinity()}) {
    std::vector<T> x;
    for (int b = 0; b < 3; ++b) x.insert(x.end(), {T(1 + b), bad});
    const AttentionShape sh{3, 2, 1, 1, 1, true, true, 0};
    const auto g = forward<T>(sh, x, {T(1)}, {T(1)}, {T(1)}, true);
    for (int b = 0; b < 3; ++b) {
      EXPECT_EQ(g.p[b * 4], T(1));
      EXPECT_EQ(g.p[b * 4 + 1], T(0));
      EXPECT_EQ(g.o[b * 2], T(1 + b)) << "bad " << bad;
    }
  }
}

// Overflowed score: weight 1, output x (float 2e19, double 1.5e154); a scaled score that fits
// is rescued (float: 1e19 entries, d_k 4, scale 1/2 -> 2e38; double: 1e154, scale 1/4 -> 1e308).
TYPED_TEST(GpuAttentionNonFinite, OverflowAndRescueMatchTheCpuRule) {
  REQUIRE_GPU();
  using T = TypeParam;
  const bool f = sizeof(T) == 4;
  const T x = f ? T(2e19) : T(1.5e154);
  const auto g = forward<T>({1, 1, 1, 1, 1, true, false, 0}, {x}, {T(1)}, {T(1)}, {T(1)}, true);
  EXPECT_TRUE(std::isinf(g.s[0]) && g.s[0] > 0);
  EXPECT_EQ(g.p[0], T(1));
  EXPECT_EQ(g.o[0], x);
  const T e = f ? T(1e19) : T(1e154);
  const double want = f ? 2e38 : 1e308;
  const auto r = forward<T>({1, 1, 1, 4, 1, true, false, f ? 0.5 : 0.25}, {T(1)}, {e, e, e, e},
                            {e, e, e, e}, {T(3)}, true);
  ASSERT_TRUE(std::isfinite(r.s[0])) << r.s[0];
  EXPECT_NEAR(double(r.s[0]), want, want * (f ? 1e-7 : 1e-15));
  EXPECT_EQ(r.p[0], T(1));
  EXPECT_EQ(r.o[0], T(3));
}

// `demo attention` on the 1,000-problem test data: --device cuda equals --device cpu within
// the stated tolerances, causal and not, float64 and float32.
TEST(GpuAttentionCommand, CudaEqualsCpuOnTheThousandProblems) {
  REQUIRE_GPU();
  const std::string data = std::string(ATTN_TEST_DATA) + "/attention/";
  const std::string in = " --x " + data + "x.npy --w-q " + data + "w_q.npy --w-k " + data +
                         "w_k.npy --w-v " + data + "w_v.npy --no-plots --quiet";
  for (const char* extra : {" --dtype f64", " --dtype f64 --causal", "", " --causal"}) {
    test::TempDir d;
    const bool f64 = std::string(extra).find("f64") != std::string::npos;
    for (const char* dev : {"cpu", "cuda"}) {
      const auto r =
          test::run_demo("attention" + in + extra + " --device " + dev + " --out " + d.file(dev));
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    for (const char* name : {"q", "scores", "weights", "out"}) {
      const std::string file = std::string("/") + name + ".npy";
      xt::xarray<double> a, b;
      if (f64) {
        a = xt::load_npy<double>(d.file("cpu") + file);
        b = xt::load_npy<double>(d.file("cuda") + file);
      } else {
        xt::xarray<float> fa = xt::load_npy<float>(d.file("cpu") + file);
        xt::xarray<float> fb = xt::load_npy<float>(d.file("cuda") + file);
        a = fa;
        b = fb;
      }
      ASSERT_EQ(a.shape(), b.shape());
      double worst = 0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::isinf(a.flat(i)) && a.flat(i) == b.flat(i)) continue;  // masked scores
        worst = std::max(worst, std::fabs(a.flat(i) - b.flat(i)) / (1 + std::fabs(a.flat(i))));
      }
      EXPECT_LT(worst, f64 ? 1e-12 : 2e-5) << name << extra;
    }
  }
}

}  // namespace
}  // namespace attn
