// test_gpu_cases.cpp: the tolerances of tests/gpu_cases.hpp, checked on the CPU (no GPU needed).
// The float CPU twin against the double CPU twin is a rounding perturbation of the size the GPU's
// float differs by; the shape-derived allowance must cover it (so the gpu tests will not cry
// wolf), and must not cover a real fault (a wrong value in one element). The head cases with a
// frozen map, on the CPU twin: what the GPU's are compared with trains W_V (and W_O) alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "attention.hpp"
#include "gpu_cases.hpp"

namespace attn {
namespace {

using gpu_cases::DType;

TEST(GpuCases, GammaIsHighamsBound) {
  EXPECT_EQ(gpu_cases::unit_roundoff(DType::f64), std::ldexp(1.0, -53));
  EXPECT_EQ(gpu_cases::unit_roundoff(DType::f32), std::ldexp(1.0, -24));
  const double u = std::ldexp(1.0, -24);
  EXPECT_DOUBLE_EQ(gpu_cases::gamma(512, DType::f32), 512 * u / (1 - 512 * u));
  EXPECT_LT(gpu_cases::gamma(64, DType::f32), gpu_cases::gamma(512, DType::f32));
}

TEST(GpuCases, TolerancesGrowWithTheReductionLength) {
  const gpu_cases::SoftmaxCase s3{"", 1, 3, false}, s512{"", 1, 512, false};
  EXPECT_LT(gpu_cases::softmax_rel_tolerance(s3, DType::f32, true),
            gpu_cases::softmax_rel_tolerance(s512, DType::f32, true));
  EXPECT_LT(gpu_cases::softmax_rel_tolerance(s512, DType::f32, false),
            gpu_cases::softmax_rel_tolerance(s512, DType::f32, true));
  EXPECT_LT(gpu_cases::saturation_tolerance({64, 3, 1}),
            gpu_cases::saturation_tolerance({1024, 3, 1}));
  // Far below the O(1e-3) and larger changes that a real fault makes in these statistics.
  EXPECT_LT(gpu_cases::saturation_tolerance({1024, 8, 1}), 1e-8);
  // The 100,000-problem saturation case the README's example runs is in the list.
  bool big = false;
  for (const auto& c : gpu_cases::saturation_cases()) big = big || c.rows == 100000;
  EXPECT_TRUE(big);
  bool f32 = false;
  for (const auto& c : gpu_cases::training_cases()) f32 = f32 || c.dtype == DType::f32;
  EXPECT_TRUE(f32);
}

// The head cases hold frozen maps (uniform and known) with the features the kernels branch on
// (heads, a causal mask, W_O, Adam, both schedules, many inputs, loss rows from r0 > 0); a known
// case's maps are distributions over the visible keys; the CPU twin trains W_V (and W_O) alone
// on them, W_Q and W_K staying the starting draws bit for bit.
TEST(GpuCases, FrozenHeadCasesTrainTheValuesAlone) {
  bool uniform = false, known = false, causal = false, adam = false, qkvo = false,
       simultaneous = false, many = false, rows_from_1 = false;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> nd;
  for (const auto& c : gpu_cases::head_cases()) {
    if (c.map == head::MapMode::learned) continue;
    SCOPED_TRACE(c.name);
    uniform = uniform || c.map == head::MapMode::uniform;
    known = known || c.map == head::MapMode::known;
    causal = causal || (c.causal && c.heads > 1);
    adam = adam || c.optimizer == head::Optimizer::adam;
    qkvo = qkvo || c.train_output;
    simultaneous = simultaneous || c.schedule == head::Schedule::simultaneous;
    many = many || c.inputs > 1;
    rows_from_1 = rows_from_1 || c.r0 > 0;
    std::vector<double> x, y, maps;
    gpu_cases::head_task(c, x, y, maps, [&] { return nd(rng); });
    const int rows = c.n - c.r0;
    ASSERT_EQ(maps.size(), c.map == head::MapMode::known
                               ? static_cast<std::size_t>(c.inputs) * c.heads * rows * c.n
                               : 0u);
    for (std::size_t row = 0; row < maps.size() / c.n; ++row) {
      const int keys = c.causal ? c.r0 + static_cast<int>(row % rows) + 1 : c.n;
      double sum = 0;
      for (int j = 0; j < c.n; ++j) {
        EXPECT_TRUE(j < keys ? maps[row * c.n + j] > 0 : maps[row * c.n + j] == 0);
        sum += maps[row * c.n + j];
      }
      EXPECT_NEAR(sum, 1, 1e-15);
    }
    head::Model m = gpu_cases::head_model(c, x, y, maps);
    m.steps = 5;
    const std::uint64_t seeds[3] = {1, 2, 3};
    const std::int64_t size = head::result_size(m), drawn = head::weights_size(m);
    std::vector<double> out(3 * size), start(drawn);
    head::train_seeds_cpu(m, seeds, 3, out.data());
    const std::int64_t query_key = 2 * static_cast<std::int64_t>(m.d_model) * m.d_k;
    for (int i = 0; i < 3; ++i) {
      head::start_weights(m, seeds[i], start.data());
      const double* w = out.data() + i * size + 2;
      EXPECT_EQ(std::memcmp(w, start.data(), 8 * query_key), 0) << "W_Q, W_K of seed " << seeds[i];
      EXPECT_NE(std::memcmp(w + query_key, start.data() + query_key, 8 * (drawn - query_key)), 0)
          << "W_V (W_O) trained, seed " << seeds[i];
      EXPECT_TRUE(std::isfinite(out[i * size]) && out[i * size] < out[i * size + 1]);
    }
  }
  EXPECT_TRUE(uniform && known && causal && adam && qkvo && simultaneous && many && rows_from_1);
}

TEST(GpuCases, FlopsOfTheLessonShape) {
  // B=1, n=3, d_model=d_k=d_v=2: 3 projections of 3x2x2 multiply-adds, scores 3x3x2, PV 3x3x2.
  const AttentionShape s{1, 3, 2, 2, 2, false, false, 0};
  EXPECT_EQ(gpu_cases::attention_flops(s), 2.0 * (3 * 12 + 18 + 18));
}

// Runs the CPU twin in float and double on the case's inputs and checks every output of the
// float run against the double one with the case's allowance.
struct Outcome {
  std::size_t outside = 0, checked = 0;
  double worst = 0;  // largest |float - double| / (allowance / 2)
};

Outcome float_vs_double(const AttentionShape& sh, double corrupt) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> nd;
  const std::size_t wc = sh.shared_weights ? 1 : sh.batch, rows = std::size_t(sh.batch) * sh.n;
  auto random = [&](std::size_t n, double sd) {
    std::vector<double> v(n);
    for (double& x : v) x = nd(rng) * sd;
    return v;
  };
  const double w_sd = 1 / std::sqrt(double(sh.d_model));
  const auto x = random(rows * sh.d_model, 1), wq = random(wc * sh.d_model * sh.d_k, w_sd),
             wk = random(wc * sh.d_model * sh.d_k, w_sd),
             wv = random(wc * sh.d_model * sh.d_v, w_sd);
  auto to_float = [](const std::vector<double>& v) {
    return std::vector<float>(v.begin(), v.end());
  };
  auto absolute = [](std::vector<float> v) {
    for (float& a : v) a = std::fabs(a);
    return v;
  };
  const auto fx = to_float(x), fwq = to_float(wq), fwk = to_float(wk), fwv = to_float(wv);
  struct Out {
    std::vector<float> q, k, v, s, p, o;
  } f, b;
  std::vector<double> dq(rows * sh.d_k), dk(dq.size()), dv(rows * sh.d_v), ds(rows * sh.n),
      dp(ds.size()), dout(dv.size());
  for (Out* o : {&f, &b}) {
    o->q.resize(dq.size());
    o->k.resize(dq.size());
    o->v.resize(dv.size());
    o->s.resize(ds.size());
    o->p.resize(ds.size());
    o->o.resize(dv.size());
  }
  // The double run, from the float inputs widened (so only the arithmetic differs).
  const std::vector<double> xx(fx.begin(), fx.end()), xq(fwq.begin(), fwq.end()),
      xk(fwk.begin(), fwk.end()), xv(fwv.begin(), fwv.end());
  attention_forward_cpu(AttentionProblem<double>{sh, xx.data(), xq.data(), xk.data(), xv.data(),
                                                 dq.data(), dk.data(), dv.data(), ds.data(),
                                                 dp.data(), dout.data()});
  attention_forward_cpu(AttentionProblem<float>{sh, fx.data(), fwq.data(), fwk.data(), fwv.data(),
                                                f.q.data(), f.k.data(), f.v.data(), f.s.data(),
                                                f.p.data(), f.o.data()});
  const auto ax = absolute(fx), aq = absolute(fwq), ak = absolute(fwk), av = absolute(fwv);
  attention_forward_cpu(AttentionProblem<float>{sh, ax.data(), aq.data(), ak.data(), av.data(),
                                                b.q.data(), b.k.data(), b.v.data(), b.s.data(),
                                                b.p.data(), b.o.data()});
  const auto a =
      gpu_cases::attention_allowance<float>(sh, DType::f32, b.q, b.k, b.v, f.q, f.k, f.v, f.p);
  f.o[f.o.size() / 2] += static_cast<float>(corrupt);
  Outcome r;
  auto check = [&](const std::vector<float>& got, const std::vector<double>& ref,
                   const std::vector<double>& allow) {
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ++r.checked;
      if (double(got[i]) == ref[i]) continue;
      const double d = std::fabs(double(got[i]) - ref[i]), share = allow[i] / 2;  // one side's
      if (!(d <= share)) ++r.outside;
      r.worst = std::fmax(r.worst, d / share);
    }
  };
  check(f.q, dq, a.q);
  check(f.k, dk, a.k);
  check(f.v, dv, a.v);
  check(f.s, ds, a.scores);
  check(f.p, dp, a.weights);
  check(f.o, dout, a.out);
  return r;
}

TEST(GpuCases, AttentionAllowanceCoversFloatRounding) {
  for (const auto& c : gpu_cases::attention_cases()) {
    if (gpu_cases::attention_flops(c.shape) > 1e9) continue;  // the CPU-cheap cases
    const Outcome r = float_vs_double(c.shape, 0);
    EXPECT_GT(r.checked, 0u);
    EXPECT_EQ(r.outside, 0u) << c.name;
    std::printf("%-18s float rounding uses up to %.3g of its allowance\n", c.name, r.worst);
  }
}

TEST(GpuCases, AttentionAllowanceCatchesAWrongValue) {
  const AttentionShape sh{16, 64, 128, 64, 64, true, true, 0};
  EXPECT_EQ(float_vs_double(sh, 0).outside, 0u);
  EXPECT_EQ(float_vs_double(sh, 1e-2).outside, 1u);
}

}  // namespace
}  // namespace attn
