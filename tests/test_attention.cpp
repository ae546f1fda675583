// test_attention.cpp: the CPU twin of batched attention against an independent float64
// (long double) reference on random shapes, with shared and per-problem weights, with and
// without the causal mask; plus the lesson's hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "attention.hpp"

namespace attn {
namespace {

struct Buffers {
  std::vector<double> x, wq, wk, wv, q, k, v, s, p, o;
};

// softmax(scale Q K^T (+ mask)) V from the definitions, in long double, no shared code.
void reference(const AttentionShape& sh, const Buffers& b, std::vector<long double>& out,
               std::vector<long double>& weights) {
  const int n = sh.n, dm = sh.d_model, dk = sh.d_k, dv = sh.d_v;
  out.assign(std::size_t(sh.batch) * n * dv, 0);
  weights.assign(std::size_t(sh.batch) * n * n, 0);
  for (int bt = 0; bt < sh.batch; ++bt) {
    const std::size_t wo = sh.shared_weights ? 0 : std::size_t(bt);
    auto X = [&](int i, int c) { return (long double)b.x[(std::size_t(bt) * n + i) * dm + c]; };
    auto proj = [&](const std::vector<double>& w, int cols, int i, int j) {
      long double acc = 0;
      for (int c = 0; c < dm; ++c) acc += X(i, c) * w[wo * dm * cols + std::size_t(c) * cols + j];
      return acc;
    };
    for (int i = 0; i < n; ++i) {
      std::vector<long double> sc(n);
      long double mx = -INFINITY;
      const int valid = sh.causal ? i + 1 : n;
      for (int j = 0; j < valid; ++j) {
        long double dot = 0;
        for (int c = 0; c < dk; ++c) dot += proj(b.wq, dk, i, c) * proj(b.wk, dk, j, c);
        sc[j] = dot * (long double)sh.effective_scale();
        mx = std::max(mx, sc[j]);
      }
      long double sum = 0;
      for (int j = 0; j < valid; ++j) sum += std::exp(sc[j] - mx);
      for (int j = 0; j < valid; ++j) {
        const long double p = std::exp(sc[j] - mx) / sum;
        weights[(std::size_t(bt) * n + i) * n + j] = p;
        for (int c = 0; c < dv; ++c)
          out[(std::size_t(bt) * n + i) * dv + c] += p * proj(b.wv, dv, j, c);
      }
    }
  }
}

void run_cpu(const AttentionShape& sh, Buffers& b) {
  AttentionProblem<double> p{sh,          b.x.data(), b.wq.data(), b.wk.data(),
                             b.wv.data(), b.q.data(), b.k.data(),  b.v.data(),
                             b.s.data(),  b.p.data(), b.o.data()};
  attention_forward_cpu(p);
}

Buffers random_problem(const AttentionShape& sh, std::mt19937_64& rng) {
  std::normal_distribution<double> nd;
  Buffers b;
  const std::size_t wc = sh.shared_weights ? 1 : sh.batch;
  auto fill = [&](std::vector<double>& v, std::size_t n, double sd) {
    v.resize(n);
    for (double& x : v) x = sd * nd(rng);
  };
  fill(b.x, std::size_t(sh.batch) * sh.n * sh.d_model, 1.0);
  const double ws = 1.0 / std::sqrt(double(sh.d_model));
  fill(b.wq, wc * sh.d_model * sh.d_k, ws);
  fill(b.wk, wc * sh.d_model * sh.d_k, ws);
  fill(b.wv, wc * sh.d_model * sh.d_v, ws);
  b.q.resize(std::size_t(sh.batch) * sh.n * sh.d_k);
  b.k.resize(b.q.size());
  b.v.resize(std::size_t(sh.batch) * sh.n * sh.d_v);
  b.s.resize(std::size_t(sh.batch) * sh.n * sh.n);
  b.p.resize(b.s.size());
  b.o.resize(b.v.size());
  return b;
}

// Random shapes up to B = 1024, n = 128, d = 512, with the total work kept test-sized.
TEST(AttentionCpu, MatchesLongDoubleReferenceOnRandomShapes) {
  std::mt19937_64 rng(11);
  const AttentionShape shapes[] = {
      {1024, 3, 2, 2, 2, false, false, 0},  {1024, 4, 8, 8, 8, true, false, 0},
      {2, 128, 16, 16, 8, false, false, 0}, {2, 128, 16, 16, 16, true, true, 0},
      {1, 16, 512, 64, 64, true, false, 0}, {1, 8, 64, 512, 32, false, true, 0},
      {7, 5, 3, 4, 6, false, false, 0.25}};
  for (const AttentionShape& sh : shapes) {
    Buffers b = random_problem(sh, rng);
    run_cpu(sh, b);
    std::vector<long double> out, w;
    reference(sh, b, out, w);
    double max_err = 0;
    for (std::size_t i = 0; i < out.size(); ++i)
      max_err = std::max(max_err, double(std::fabs(b.o[i] - out[i]) / (1 + std::fabs(out[i]))));
    for (std::size_t i = 0; i < w.size(); ++i)
      max_err = std::max(max_err, double(std::fabs(b.p[i] - w[i])));
    EXPECT_LT(max_err, 1e-12) << "B=" << sh.batch << " n=" << sh.n << " d_model=" << sh.d_model
                              << " d_k=" << sh.d_k << " causal=" << sh.causal;
  }
}

TEST(AttentionCpu, CausalMaskZeroesTheFutureAndMarksScores) {
  std::mt19937_64 rng(3);
  const AttentionShape sh{3, 6, 4, 4, 4, false, true, 0};
  Buffers b = random_problem(sh, rng);
  run_cpu(sh, b);
  for (int bt = 0; bt < 3; ++bt)
    for (int i = 0; i < 6; ++i) {
      double sum = 0;
      for (int j = 0; j < 6; ++j) {
        const std::size_t idx = (std::size_t(bt) * 6 + i) * 6 + j;
        if (j > i) {
          EXPECT_EQ(b.p[idx], 0.0);
          EXPECT_TRUE(std::isinf(b.s[idx]) && b.s[idx] < 0);
        }
        sum += b.p[idx];
      }
      EXPECT_NEAR(sum, 1.0, 1e-15);
    }
  // Word 0 sees only itself: its output is its own value row.
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(b.o[c], b.v[c], 1e-15);
}

// The lesson's first example by hand: cat = [2, 0], dog = [1, 1], car = [0, 2], all W = I.
TEST(AttentionCpu, LessonWeightedAverageByHand) {
  const AttentionShape sh{1, 3, 2, 2, 2, true, false, 0};
  Buffers b;
  b.x = {2, 0, 1, 1, 0, 2};
  b.wq = b.wk = b.wv = {1, 0, 0, 1};
  b.q.resize(6), b.k.resize(6), b.v.resize(6), b.s.resize(9), b.p.resize(9), b.o.resize(6);
  run_cpu(sh, b);
  const double r = std::sqrt(2.0);
  const double e0 = std::exp(4 / r), e1 = std::exp(2 / r), e2 = 1.0;  // cat's scaled scores
  EXPECT_NEAR(b.p[0], e0 / (e0 + e1 + e2), 1e-15);
  EXPECT_NEAR(b.p[2], e2 / (e0 + e1 + e2), 1e-15);
  EXPECT_NEAR(b.o[0], (2 * e0 + e1) / (e0 + e1 + e2), 1e-15);  // cat's x
  EXPECT_NEAR(b.p[4], 1.0 / 3, 1e-15);                         // dog: equal scores
}

TEST(AttentionCpu, FloatAgreesWithDoubleToFloatPrecision) {
  std::mt19937_64 rng(9);
  const AttentionShape sh{16, 12, 32, 16, 16, false, false, 0};
  Buffers b = random_problem(sh, rng);
  run_cpu(sh, b);
  auto f = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  std::vector<float> x = f(b.x), wq = f(b.wq), wk = f(b.wk), wv = f(b.wv), q(b.q.size()),
                     k(b.k.size()), v(b.v.size()), s(b.s.size()), p(b.p.size()), o(b.o.size());
  attention_forward_cpu(AttentionProblem<float>{sh, x.data(), wq.data(), wk.data(), wv.data(),
                                                q.data(), k.data(), v.data(), s.data(), p.data(),
                                                o.data()});
  for (std::size_t i = 0; i < o.size(); ++i)
    EXPECT_NEAR(o[i], b.o[i], 1e-5 * (1 + std::fabs(b.o[i])));
}

TEST(AttentionCpu, RejectsNonPositiveShapes) {
  AttentionShape sh{1, 0, 2, 2, 2, true, false, 0};
  EXPECT_THROW(sh.validate(), std::invalid_argument);
  sh.n = 3;
  sh.d_k = -1;
  EXPECT_THROW(sh.validate(), std::invalid_argument);
}

TEST(SoftmaxRowsCpu, HugeScoresAndMaskedRows) {
  const double inf = INFINITY;
  std::vector<double> s = {1e308, -1e308, 0, -inf, -inf, -inf}, w(6);
  softmax_rows_cpu(s.data(), w.data(), 2, 3, 1.0, false);
  EXPECT_EQ(w[0], 1.0);
  EXPECT_EQ(w[1], 0.0);
  EXPECT_EQ(w[2], 0.0);
  for (int j = 3; j < 6; ++j) EXPECT_EQ(w[j], 0.0);  // fully masked: zeros, not NaN
}

}  // namespace
}  // namespace attn
