// test_backend.cpp (test_host): Backend on the CPU and the arithmetic that sizes its GPU calls
// (head_sizing), which runs without a GPU.
// - head_seeds_per_call on the CPU is the attention-sweep's rule, and at least one lane pack
//   of seeds per thread (least_seeds_per_call); on the GPU one seed per
//   resident thread, capped by device memory and host results; even and >= 2 always.
// - Slices of steps: about kGpuSliceSeconds each by the estimate, within [1, steps].
// - check_head: nothing refused on the CPU; on the GPU a head whose one seed would train for
//   days on one thread (n = d = 1024) is refused with one line that says --device cpu.
// - attention_forward in pieces gives the bits of one whole call, float and double, and a stop
//   asked before a piece throws Interrupted; a problem of several heads is refused.
// - attention_compute: several heads are one-head calls on each head's columns and its share of
//   the mask and map, concatenated; one head is one call in place; attention_shape refuses a
//   size beyond the kernels' int.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention.hpp"
#include "head.hpp"
#include "host/attention_compute.hpp"
#include "host/backend.hpp"
#include "lanes.hpp"

namespace attn {
namespace {

head::Model model(int n, int d, int steps) {
  head::Model m;
  m.n = n;
  m.d_model = m.d_k = m.d_v = d;
  m.r0 = 0;
  m.steps = steps;
  return m;
}

// attention-sweep's own arithmetic, written out again as the reference.
std::int64_t sweep_rule(const head::Model& m, double per_call) {
  const double per_seed_bytes = 8.0 * (head::result_size(m) + head::layout(m).total);
  const double weights = static_cast<double>(m.d_model) * (2 * m.d_k + m.d_v);
  const double work =
      m.steps * head::flops_per_step(m) * (m.grad == head::Grad::numeric ? 2 * weights : 1.0);
  auto chunk = static_cast<std::uint64_t>(
      std::max(2.0, std::min({per_call, 4e9 / per_seed_bytes, per_call * 5e6 / work})));
  chunk -= chunk % 2;
  return static_cast<std::int64_t>(std::max<std::uint64_t>(chunk, 2));
}

TEST(HeadSizing, CpuSeedsPerCallIsTheSweepsRule) {
  const Backend cpu = Backend::select("cpu", 1);
  for (int n : {2, 8, 64, 1024})
    for (int d : {2, 16, 128, 1024})
      for (int steps : {1, 1000, 3000})
        for (head::Grad grad : {head::Grad::analytic, head::Grad::numeric}) {
          head::Model m = model(n, d, steps);
          m.grad = grad;
          const std::int64_t got = cpu.head_seeds_per_call(m);
          EXPECT_EQ(got,
                    std::max<std::int64_t>(sweep_rule(m, double(cpu.seeds_per_call())), kPackLanes))
              << "n " << n << " d " << d << " steps " << steps;
          EXPECT_EQ(got % 2, 0);
          EXPECT_GE(got, 2);
        }
  // The lesson's size at one step: the backend's whole call.
  EXPECT_EQ(cpu.head_seeds_per_call(model(8, 16, 1)), std::int64_t(cpu.seeds_per_call()));
}

// A CPU call holds at least one lane pack of seeds per thread (a pack trains its kPackLanes
// seeds in lockstep: fewer take as long), a large head's too.
TEST(HeadSizing, CpuCallsHoldALanePackPerThread) {
  for (int threads : {1, 2, 3}) {
    const Backend cpu = Backend::select("cpu", threads);
    ASSERT_EQ(cpu.threads(), threads);
    EXPECT_EQ(cpu.least_seeds_per_call(), std::uint64_t(kPackLanes) * threads);
    const head::Model large = model(1024, 1024, 1000);
    EXPECT_EQ(sweep_rule(large, double(cpu.seeds_per_call())), 2);
    EXPECT_EQ(cpu.head_seeds_per_call(large), std::int64_t(kPackLanes) * threads);
  }
}

TEST(HeadSizing, GpuSeedsFillTheDeviceWithinMemory) {
  const double gib = 1024.0 * 1024 * 1024;
  // Small heads: one seed per resident thread.
  const head::Model small = model(8, 16, 1000);
  EXPECT_EQ(head_sizing::gpu_seeds_per_call(small, 132, 141 * gib, 1 << 20),
            132 * head_sizing::kGpuThreadsPerMultiprocessor);
  // An unknown device: the backend's call, within 4e9 bytes of device memory.
  const double small_seed = 8.0 * (head::layout(small).total + head::result_size(small)) + 8;
  const std::int64_t unknown = head_sizing::gpu_seeds_per_call(small, 0, 0, 1 << 20);
  EXPECT_EQ(unknown, std::min<std::int64_t>(1 << 20, std::int64_t(4e9 / small_seed) / 2 * 2));
  // Large heads: half the device memory holds every workspace, result and seed of the call.
  const head::Model large = model(256, 256, 10);
  const std::int64_t c = head_sizing::gpu_seeds_per_call(large, 132, 4 * gib, 1 << 20);
  const double per_seed = 8.0 * (head::layout(large).total + head::result_size(large)) + 8;
  EXPECT_LE(c * per_seed, 2 * gib);
  EXPECT_GT((c + 2) * per_seed, 2 * gib);
  EXPECT_EQ(c % 2, 0);
  // Host results at most 4e9 bytes a call.
  const std::int64_t h = head_sizing::gpu_seeds_per_call(large, 132, 1e15, 1 << 20);
  EXPECT_LE(8.0 * head::result_size(large) * h, 4e9);
  // Never below 2, whatever the size.
  EXPECT_EQ(head_sizing::gpu_seeds_per_call(model(1024, 1024, 1), 1, 1e6, 1 << 20), 2);
}

TEST(HeadSizing, SlicesLastAFractionOfASecondWithinTheSteps) {
  const head::Model m = model(8, 16, 1000);
  // One seed: the thread's rate; a full device: the device's.
  EXPECT_DOUBLE_EQ(head_sizing::gpu_step_seconds(m, 1, 132),
                   head::flops_per_step(m) / head_sizing::kGpuThreadFlops);
  const std::int64_t full = 132 * head_sizing::kGpuThreadsPerMultiprocessor;
  EXPECT_DOUBLE_EQ(head_sizing::gpu_step_seconds(m, full, 132),
                   head::flops_per_step(m) * full / (132 * head_sizing::kGpuMultiprocessorFlops));
  for (std::int64_t count : {std::int64_t{2}, std::int64_t{10000}, full, 64 * full}) {
    const int slice = head_sizing::gpu_steps_per_slice(m, count, 132);
    EXPECT_GE(slice, 1);
    EXPECT_LE(slice, m.steps);
    const double seconds = slice * head_sizing::gpu_step_seconds(m, count, 132);
    if (slice > 1 && slice < m.steps) {
      EXPECT_LE(seconds, head_sizing::kGpuSliceSeconds) << count;
      EXPECT_GT(seconds + head_sizing::gpu_step_seconds(m, count, 132),
                head_sizing::kGpuSliceSeconds)
          << count;
    }
  }
  // More seeds than the device holds at once: shorter slices.
  EXPECT_LT(head_sizing::gpu_steps_per_slice(m, 64 * full, 132),
            head_sizing::gpu_steps_per_slice(m, 2, 132));
  // A step longer than a slice: one step a launch; a short training: one launch.
  EXPECT_EQ(head_sizing::gpu_steps_per_slice(model(256, 256, 50), 2, 132), 1);
  EXPECT_EQ(head_sizing::gpu_steps_per_slice(model(2, 2, 3), 2, 132), 3);
  EXPECT_EQ(head_sizing::gpu_steps_per_slice(model(2, 2, 0), 2, 132), 1);
  // Numeric gradients: 2 d_model (2 d_k + d_v) forward passes a step.
  head::Model numeric = model(2, 2, 3000);
  numeric.grad = head::Grad::numeric;
  EXPECT_DOUBLE_EQ(head_sizing::flops_per_seed_step(numeric),
                   head::flops_per_step(numeric) * 2 * 2 * (2 * 2 + 2));
}

// Slices as train_heads runs them cover [0, steps) once, in order: the loop of head_cuda.cu.
TEST(HeadSizing, SlicesCoverTheStepsOnce) {
  for (int steps : {0, 1, 7, 1000, 3001})
    for (int slice : {1, 3, 7, 1000, 5000}) {
      std::vector<int> seen;
      for (int s0 = 0;;) {
        const int s1 = steps - s0 > slice ? s0 + slice : steps;
        for (int s = s0; s < s1; ++s) seen.push_back(s);
        if (s1 == steps) break;
        s0 = s1;
      }
      ASSERT_EQ(int(seen.size()), steps);
      for (int s = 0; s < steps; ++s) EXPECT_EQ(seen[s], s);
    }
}

TEST(HeadSizing, CheckHeadRefusesDaysOnOneGpuThreadOnly) {
  const head::Model huge = model(1024, 1024, 3000);
  try {
    head_sizing::check_gpu_head(huge);
    ADD_FAILURE() << "n = d = 1024 accepted on the GPU";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("--device cpu"), std::string::npos) << what;
    EXPECT_NE(what.find("n 1024"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(head_sizing::check_gpu_head(model(8, 16, 3000)));
  EXPECT_NO_THROW(head_sizing::check_gpu_head(model(2, 2, 3000)));
  EXPECT_GT(head_sizing::gpu_seed_seconds(huge), 86400.0);
  const Backend cpu = Backend::select("cpu", 1);
  EXPECT_NO_THROW(cpu.check_head(huge));
}

// The CPU's pieces (Backend::kAttentionPieceWork) give the bits of one whole call.
template <class T>
void pieces_equal_whole() {
  AttentionShape sh;
  sh.batch = 2;
  sh.n = 1600;
  sh.d_model = 64;
  sh.d_k = 48;
  sh.d_v = 40;
  sh.causal = true;
  // More than one piece, and a problem cut into rows.
  ASSERT_GT(attention_work(sh) / sh.batch, Backend::kAttentionPieceWork);
  std::mt19937_64 rng(9);
  std::normal_distribution<double> nd;
  auto random = [&](std::size_t n) {
    std::vector<T> v(n);
    for (T& x : v) x = T(nd(rng) * 0.2);
    return v;
  };
  const std::size_t rows = std::size_t(sh.batch) * sh.n;
  const auto x = random(rows * sh.d_model), wq = random(sh.batch * sh.d_model * sh.d_k),
             wk = random(wq.size()), wv = random(sh.batch * sh.d_model * sh.d_v);
  struct Out {
    std::vector<T> q, k, v, s, p, o;
  } a, b;
  for (Out* o : {&a, &b}) {
    o->q.resize(rows * sh.d_k);
    o->k.resize(rows * sh.d_k);
    o->v.resize(rows * sh.d_v);
    o->s.resize(rows * sh.n);
    o->p.resize(rows * sh.n);
    o->o.resize(rows * sh.d_v);
  }
  auto problem = [&](Out& o) {
    return AttentionProblem<T>{sh,         x.data(),   wq.data(),  wk.data(),
                               wv.data(),  o.q.data(), o.k.data(), o.v.data(),
                               o.s.data(), o.p.data(), o.o.data()};
  };
  attention_forward_cpu(problem(a));
  const Backend cpu = Backend::select("cpu", 2);
  const std::uint64_t calls = cpu.kernel_calls();
  cpu.attention_forward(problem(b));
  EXPECT_EQ(cpu.kernel_calls(), calls + 1);
  EXPECT_EQ(a.q, b.q);
  EXPECT_EQ(a.k, b.k);
  EXPECT_EQ(a.v, b.v);
  EXPECT_EQ(std::memcmp(a.s.data(), b.s.data(), a.s.size() * sizeof(T)), 0);  // -inf masked
  EXPECT_EQ(a.p, b.p);
  EXPECT_EQ(a.o, b.o);
  struct Stopping : Monitor {
    bool stop_requested() const override { return true; }
  };
  EXPECT_THROW(cpu.attention_forward(problem(b), Stopping()), Interrupted);
}

TEST(BackendAttention, CpuPiecesEqualOneWholeCall) {
  pieces_equal_whole<double>();
  pieces_equal_whole<float>();
}

TEST(BackendAttention, RefusesSeveralHeads) {
  AttentionShape sh{1, 2, 1, 2, 2, true, false, 0};
  sh.heads = 2;
  std::vector<double> x(2, 1.0), w(2, 1.0), out(4), square(4);
  const Backend cpu = Backend::select("cpu", 1);
  const std::uint64_t calls = cpu.kernel_calls();
  EXPECT_THROW(cpu.attention_forward(AttentionProblem<double>{
                   sh, x.data(), w.data(), w.data(), w.data(), out.data(), out.data(), out.data(),
                   square.data(), square.data(), out.data()}),
               std::invalid_argument);
  EXPECT_EQ(cpu.kernel_calls(), calls);
}

TEST(AttentionCompute, ShapeRefusesSizesBeyondInt) {
  const std::size_t big = std::size_t(1) << 31, most = big - 1;
  const AttentionShape s = attention_shape(most, most, most, most, most, 1, true, true, 0.5);
  EXPECT_EQ(s.batch, 0x7fffffff);
  EXPECT_EQ(s.d_v, 0x7fffffff);
  EXPECT_TRUE(s.shared_weights);
  EXPECT_TRUE(s.causal);
  EXPECT_EQ(s.scale, 0.5);
  for (int i = 0; i < 5; ++i) {
    std::size_t d[5] = {1, 1, 1, 1, 1};
    d[i] = big;
    try {
      attention_shape(d[0], d[1], d[2], d[3], d[4], 1, false, false, 0);
      ADD_FAILURE() << "dimension " << i << " of 2^31 accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "attention: a dimension beyond 2^31 - 1");
    }
  }
  EXPECT_THROW(attention_shape(1, 1, 1, 4, 6, 4, false, false, 0), std::invalid_argument);
}

// Head h of a two-head problem is the one-head problem on columns [h d/2, (h+1) d/2) of every
// weight, with its (batch, n, n) share of the mask and map; its q, k, v and out are those
// columns of the whole, its scores and weights entry [b][h] of (batch, heads, n, n).
template <class T>
void heads_are_column_problems(bool use_map) {
  const int B = 2, n = 5, dm = 3, dk = 4, dv = 6, H = 2, dkh = dk / H, dvh = dv / H;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> nd;
  auto random = [&](std::size_t count) {
    std::vector<T> v(count);
    for (T& e : v) e = T(nd(rng));
    return v;
  };
  const auto x = random(B * n * dm), wq = random(B * dm * dk), wk = random(B * dm * dk),
             wv = random(B * dm * dv), map = random(B * H * n * n);
  std::vector<unsigned char> mask(B * H * n * n);
  for (std::size_t e = 0; e < mask.size(); ++e) mask[e] = (e * 7 + e / 11) % 3 != 0;
  std::vector<T> q(B * n * dk), k(q.size()), v(B * n * dv), s(B * H * n * n), w(s.size()),
      o(v.size());
  AttentionProblem<T> p{attention_shape(B, n, dm, dk, dv, H, false, true, 0.75),
                        x.data(),
                        wq.data(),
                        wk.data(),
                        wv.data(),
                        q.data(),
                        k.data(),
                        v.data(),
                        s.data(),
                        w.data(),
                        o.data(),
                        mask.data(),
                        use_map ? map.data() : nullptr};
  KernelTime time;
  attention_compute(p, Backend::select("cpu", 2), silent_monitor(), time);
  for (int h = 0; h < H; ++h) {
    auto cols = [&](const std::vector<T>& a, int rows, int all, int part) {
      std::vector<T> c(std::size_t(rows) * part);
      for (int r = 0; r < rows; ++r)
        for (int j = 0; j < part; ++j) c[r * part + j] = a[r * all + h * part + j];
      return c;
    };
    auto square = [&](const auto& a) {
      std::vector<std::decay_t<decltype(a[0])>> c(B * n * n);
      for (int b = 0; b < B; ++b)
        for (int e = 0; e < n * n; ++e) c[b * n * n + e] = a[(b * H + h) * n * n + e];
      return c;
    };
    const auto hq = cols(wq, B * dm, dk, dkh), hk = cols(wk, B * dm, dk, dkh),
               hv = cols(wv, B * dm, dv, dvh), hmap = square(map);
    const auto hmask = square(mask);
    std::vector<T> eq(B * n * dkh), ek(eq.size()), ev(B * n * dvh), es(B * n * n), ew(es.size()),
        eo(ev.size());
    attention_forward_cpu(AttentionProblem<T>{AttentionShape{B, n, dm, dkh, dvh, false, true, 0.75},
                                              x.data(), hq.data(), hk.data(), hv.data(), eq.data(),
                                              ek.data(), ev.data(), es.data(), ew.data(), eo.data(),
                                              hmask.data(), use_map ? hmap.data() : nullptr});
    EXPECT_EQ(cols(q, B * n, dk, dkh), eq) << "head " << h;
    EXPECT_EQ(cols(k, B * n, dk, dkh), ek) << "head " << h;
    EXPECT_EQ(cols(v, B * n, dv, dvh), ev) << "head " << h;
    EXPECT_EQ(cols(o, B * n, dv, dvh), eo) << "head " << h;
    const auto hs = square(s);
    EXPECT_EQ(std::memcmp(hs.data(), es.data(), es.size() * sizeof(T)), 0) << "head " << h;
    EXPECT_EQ(square(w), ew) << "head " << h;
  }
  // One head: the kernels' call itself, in place.
  p.shape = attention_shape(B, n, dm, dk, dv, 1, false, true, 0.75);
  p.mask = nullptr;
  p.map = nullptr;
  std::vector<T> s1(B * n * n), w1(s1.size());
  p.scores = s1.data();
  p.weights = w1.data();
  attention_compute(p, Backend::select("cpu", 2), silent_monitor(), time);
  const auto q1 = q, o1 = o;
  std::vector<T> es(s1.size()), ew(s1.size());
  p.scores = es.data();
  p.weights = ew.data();
  attention_forward_cpu(p);
  EXPECT_EQ(q1, q);
  EXPECT_EQ(o1, o);
  EXPECT_EQ(w1, ew);
}

TEST(AttentionCompute, HeadsAreOneHeadProblemsOnTheirColumns) {
  heads_are_column_problems<double>(false);
  heads_are_column_problems<double>(true);
  heads_are_column_problems<float>(false);
  heads_are_column_problems<float>(true);
}

}  // namespace
}  // namespace attn
