// test_head_slices.cpp (test_kernels): head.hpp's train_steps, the GPU's way to cut a training
// into slices of steps across launches, on the CPU with plain doubles: the start drawn, the
// forward pass, then steps in slices of any size give the bits of train() in one piece, for
// both gradients, both schedules, qkv, qk, and causal heads with W_O trained by Adam.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "head.hpp"

namespace attn {
namespace {

struct Ptr {
  double* w;
  double& operator[](std::int64_t e) const { return w[e]; }
};

// Seed's start in ws, then train as the GPU's kernel does with slices of `slice` steps (0: train()
// itself); returns the seed's results.
std::vector<double> run(const head::Model& m, std::uint64_t seed, int slice) {
  std::vector<double> ws(head::layout(m).total);
  auto store = [&ws](std::int64_t at, double v) { ws[at] = v; };
  head::initial_weights(m, seed, store);
  const Ptr w{ws.data()};
  if (slice == 0) {
    head::train<double>(m, w);
  } else {
    head::start<double>(m, w);
    for (int s0 = 0; s0 < m.steps; s0 += slice)
      head::train_steps<double>(m, w, s0, std::min(m.steps, s0 + slice));
  }
  std::vector<double> out(head::result_size(m));
  auto get = [&ws](std::int64_t at) { return ws[at]; };
  head::write_result(m, get, out.data());
  return out;
}

TEST(HeadSlices, StepsInSlicesEqualOneTrainingBitForBit) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> nd;
  head::Model m;
  m.n = 5;
  m.d_model = 6;
  m.d_k = 3;
  m.d_v = 4;
  m.r0 = 1;
  m.lr = 0.01;
  m.init_scale = 0.25;
  std::vector<double> x(m.n * m.d_model), y(m.n * m.d_v);
  for (double& v : x) v = nd(rng);
  for (double& v : y) v = nd(rng);
  m.x = x.data();
  m.y = y.data();
  for (head::Grad grad : {head::Grad::analytic, head::Grad::numeric})
    for (head::Schedule schedule : {head::Schedule::sequential, head::Schedule::simultaneous})
      for (int variant = 0; variant < 3; ++variant) {
        // qkv; qk (W_V = I); two causal heads with W_O trained by Adam.
        const bool values = variant != 1, v2 = variant == 2;
        m.grad = grad;
        m.schedule = schedule;
        m.train_values = values;
        m.d_v = values ? 4 : m.d_model;
        m.heads = v2 ? 2 : 1;
        m.d_k = v2 ? 4 : 3;
        m.causal = v2;
        m.train_output = v2;
        m.optimizer = v2 ? head::Optimizer::adam : head::Optimizer::sgd;
        y.assign(m.n * m.d_out(), 0.5);
        m.y = y.data();
        m.steps = grad == head::Grad::numeric ? 9 : 40;
        const std::vector<double> whole = run(m, 7, 0);
        for (int slice : {1, 2, 3, m.steps - 1, m.steps, m.steps + 5}) {
          const std::vector<double> sliced = run(m, 7, slice);
          EXPECT_EQ(std::memcmp(sliced.data(), whole.data(), whole.size() * sizeof(double)), 0)
              << "grad " << int(grad) << " schedule " << int(schedule) << " variant " << variant
              << " slices of " << slice;
        }
      }
}

// An empty slice does nothing; zero steps leave the forward pass at the starting weights.
TEST(HeadSlices, EmptySliceAndZeroSteps) {
  head::Model m;
  const std::vector<double> x = {1, 0, 0, 1}, y = {0, 0, 1, 0};
  m.x = x.data();
  m.y = y.data();
  m.steps = 5;
  std::vector<double> ws(head::layout(m).total);
  auto store = [&ws](std::int64_t at, double v) { ws[at] = v; };
  head::initial_weights(m, 3, store);
  const Ptr w{ws.data()};
  head::start<double>(m, w);
  const std::vector<double> before = ws;
  head::train_steps<double>(m, w, 2, 2);
  EXPECT_EQ(ws, before);
  m.steps = 0;
  EXPECT_EQ(run(m, 3, 0), run(m, 3, 4));
}

}  // namespace
}  // namespace attn
