// test_gpu.cpp: every CUDA kernel against its CPU twin (ctest label `gpu`), on the cases and at
// the tolerances of tests/gpu_cases.hpp. Each test skips when no usable GPU answers (no driver,
// no device, a device older than the built targets, a prohibited or exclusively held device:
// cuda_device.hpp), so CI (CUDA toolkit, no device) builds and lists them but runs none.
// ATTNLAB_GPU=N picks the device (scripts/gpu-check sets it); default the first usable one.
// Built against the SIMT emulation (ATTNLAB_SIMT, label `simt`), the same tests run the kernels
// on the CPU; each case keeps its shape and tolerance, with fewer rows, seeds and steps (`cap`),
// never a multiple of a block size, so that every launch has a partial last block.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "attention.hpp"
#include "cuda_device.hpp"
#include "device_buffer.hpp"
#include "experiments/registry.hpp"
#include "gpu_cases.hpp"
#include "head.hpp"
#include "host/backend.hpp"
#include "host/experiment.hpp"
#include "kernels/dk_std.hpp"
#include "kernels/dk_std_numpy.hpp"
#include "quantiles.hpp"
#include "saturation.hpp"
#include "tiny_model.hpp"

namespace attn {
namespace {

using gpu_cases::DType;

#define REQUIRE_GPU()                                               \
  do {                                                              \
    const GpuInfo g = query_gpu();                                  \
    if (!g.present) GTEST_SKIP() << "no usable GPU: " << g.why_not; \
  } while (0)

#if defined(ATTNLAB_SIMT)
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif
// A case's size on a device, or at most `emulated` under the SIMT emulation.
template <class T>
T cap(T size, T emulated) {
  return kEmulated && size > emulated ? emulated : size;
}

// Every element within its allowance: |gpu - cpu| <= allowance (equal values, infinities
// included, always agree). Reports the count outside and the worst place.
template <class T>
::testing::AssertionResult within(const char* what, const std::vector<T>& gpu,
                                  const std::vector<T>& cpu, const std::vector<double>& allowance) {
  std::size_t outside = 0, worst = 0;
  double worst_ratio = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    if (gpu[i] == cpu[i]) continue;
    const double d = std::fabs(double(gpu[i]) - double(cpu[i]));
    const double ratio = d / allowance[i];
    if (!(d <= allowance[i])) ++outside;
    if (!(ratio <= worst_ratio)) worst_ratio = ratio, worst = i;
  }
  if (outside == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << outside << " of " << cpu.size() << " elements outside; worst [" << worst
         << "] gpu " << gpu[worst] << " cpu " << cpu[worst] << " allowance " << allowance[worst];
}

template <class T>
struct AttentionRun {
  std::vector<T> q, k, v, s, p, o;
  explicit AttentionRun(const AttentionShape& sh) {
    const std::size_t rows = std::size_t(sh.batch) * sh.n;
    q.resize(rows * sh.d_k);
    k.resize(q.size());
    v.resize(rows * sh.d_v);
    s.resize(rows * sh.n);
    p.resize(s.size());
    o.resize(v.size());
  }
  AttentionProblem<T> problem(const AttentionShape& sh, const std::vector<T>& x,
                              const std::vector<T>& wq, const std::vector<T>& wk,
                              const std::vector<T>& wv) {
    return {sh,       x.data(), wq.data(), wk.data(), wv.data(), q.data(),
            k.data(), v.data(), s.data(),  p.data(),  o.data()};
  }
};

template <class T>
void compare_attention(const gpu_cases::AttentionCase& c, DType t, std::mt19937_64& rng) {
  SCOPED_TRACE(std::string(c.name) + " " + gpu_cases::name(t));
  AttentionShape sh = c.shape;
  sh.batch = cap(sh.batch, sh.n >= 128 ? 1 : 3);
  std::normal_distribution<double> nd;
  const std::size_t wc = sh.shared_weights ? 1 : sh.batch;
  auto random = [&](std::size_t n, double sd) {
    std::vector<T> v(n);
    for (T& x : v) x = T(nd(rng) * sd);
    return v;
  };
  auto absolute = [](std::vector<T> v) {
    for (T& x : v) x = std::fabs(x);
    return v;
  };
  const double w_sd = 1 / std::sqrt(double(sh.d_model));
  const auto x = random(std::size_t(sh.batch) * sh.n * sh.d_model, 1);
  const auto wq = random(wc * sh.d_model * sh.d_k, w_sd),
             wk = random(wc * sh.d_model * sh.d_k, w_sd),
             wv = random(wc * sh.d_model * sh.d_v, w_sd);
  AttentionRun<T> cpu(sh), gpu(sh), bound(sh);
  attention_forward_cpu(cpu.problem(sh, x, wq, wk, wv));
  attention_forward_cuda_host(gpu.problem(sh, x, wq, wk, wv));
  const auto ax = absolute(x), awq = absolute(wq), awk = absolute(wk), awv = absolute(wv);
  attention_forward_cpu(bound.problem(sh, ax, awq, awk, awv));
  const auto a = gpu_cases::attention_allowance<T>(sh, t, bound.q, bound.k, bound.v, cpu.q, cpu.k,
                                                   cpu.v, cpu.p);
  EXPECT_TRUE(within("Q", gpu.q, cpu.q, a.q));
  EXPECT_TRUE(within("K", gpu.k, cpu.k, a.k));
  EXPECT_TRUE(within("V", gpu.v, cpu.v, a.v));
  EXPECT_TRUE(within("scores", gpu.s, cpu.s, a.scores));
  EXPECT_TRUE(within("weights", gpu.p, cpu.p, a.weights));
  EXPECT_TRUE(within("out", gpu.o, cpu.o, a.out));
}

TEST(GpuAttention, MatchesCpuTwinWithinTheRoundingBound) {
  REQUIRE_GPU();
  std::mt19937_64 rng(1);
  for (const auto& c : gpu_cases::attention_cases()) {
    compare_attention<double>(c, DType::f64, rng);
    compare_attention<float>(c, DType::f32, rng);
  }
}

// Both softmax kernels against the CPU twin on host-made scores, f64 and f32.
template <class T>
void compare_softmax(gpu_cases::SoftmaxCase c, DType t, std::mt19937_64& rng) {
  c.rows = cap(c.rows, c.n >= 128 ? 13L : 61L);
  std::normal_distribution<double> nd(0, 2);
  std::vector<T> s(std::size_t(c.rows) * c.n), cpu(s.size()), gpu(s.size());
  for (T& x : s) x = T(nd(rng));
  const T scale = T(0.75);
  softmax_rows_cpu<T>(s.data(), cpu.data(), c.rows, c.n, scale, c.causal);
  const auto ds = DeviceBuffer<T>::from_host(s.data(), s.size());
  DeviceBuffer<T> dw(s.size());
  for (SoftmaxKernel v : {SoftmaxKernel::thread_per_row, SoftmaxKernel::warp_per_row}) {
    const bool warp = v == SoftmaxKernel::warp_per_row;
    SCOPED_TRACE(std::string(c.name) + " " + gpu_cases::name(t) + (warp ? " v2" : " v1"));
    softmax_rows_cuda<T>(ds.data(), dw.data(), c.rows, c.n, scale, c.causal, v);
    dw.download(gpu.data());
    const double rel = gpu_cases::softmax_rel_tolerance(c, t, warp);
    std::vector<double> allowance(cpu.size());
    for (std::size_t i = 0; i < cpu.size(); ++i) allowance[i] = rel * double(cpu[i]);
    EXPECT_TRUE(within("weights", gpu, cpu, allowance));
  }
}

TEST(GpuSoftmax, BothVersionsMatchCpuTwin) {
  REQUIRE_GPU();
  std::mt19937_64 rng(3);
  for (const auto& c : gpu_cases::softmax_cases()) {
    compare_softmax<double>(c, DType::f64, rng);
    compare_softmax<float>(c, DType::f32, rng);
  }
}

// Exact cases (every exp is exp(0) = 1 or exp(-huge) = 0): both versions equal the CPU bit for
// bit, huge scores give no NaN, and an all-masked row gives zeros.
TEST(GpuSoftmax, StableAndMaskedBothVersions) {
  REQUIRE_GPU();
  const std::vector<double> s = {1e308, -1e308, 0, -INFINITY, -INFINITY, -INFINITY};
  std::vector<double> cpu(6), gpu(6);
  softmax_rows_cpu<double>(s.data(), cpu.data(), 2, 3, 1.0, false);
  const auto ds = DeviceBuffer<double>::from_host(s.data(), s.size());
  DeviceBuffer<double> dw(6);
  for (SoftmaxKernel v : {SoftmaxKernel::thread_per_row, SoftmaxKernel::warp_per_row}) {
    softmax_rows_cuda<double>(ds.data(), dw.data(), 2, 3, 1.0, false, v);
    dw.download(gpu.data());
    EXPECT_EQ(gpu, cpu);
    EXPECT_EQ(gpu[0], 1.0);
    EXPECT_EQ(gpu[3], 1.0 / 3);  // every score -inf: a tie, equal weights (softmax.hpp rule 3)
  }
}

// The dk-std kernel runs the CPU twin's arithmetic in the same tree: identical bits.
TEST(GpuDkStd, ChunksEqualCpuTwinBitForBit) {
  REQUIRE_GPU();
  for (const auto& c : gpu_cases::dk_std_cases()) {
    const std::uint64_t three_chunks = 3 * dk_std::make_plan(1, c.d_k, 77).chunk_samples() + 11;
    const dk_std::Plan p = dk_std::make_plan(cap(c.samples, three_chunks), c.d_k, 77);
    std::vector<Moments> cpu(p.chunks()), gpu(p.chunks());
    dk_std::chunk_moments_cpu(p, 0, p.chunks(), cpu.data());
    dk_std::chunk_moments_cuda(p, 0, p.chunks(), gpu.data());
    for (std::uint64_t i = 0; i < p.chunks(); ++i)
      EXPECT_EQ(std::memcmp(&cpu[i], &gpu[i], sizeof(Moments)), 0)
          << "d_k " << c.d_k << " chunk " << i << ": std " << cpu[i].stddev() << " vs "
          << gpu[i].stddev();
  }
}

// numpy's stream with its pieces decoded on the GPU (Backend::numpy_stream_split's settings)
// against the sequential CPU stream: every normal the same bits, the tail's (beyond R = 3.65,
// about 0.03% of them) included, as the device's log1p and exp are glibc's algorithms
// (log1p_glibc.hpp, exp_glibc.hpp); a flipped wedge decision would shift every later normal.
// Then the dk-std blocks: the same moments to 1e-12 relative.
dk_std::StreamSplit gpu_numpy_split() {
  return dk_std::device_split([](const numpy_rng::Pcg64& g0, dk_std::Piece* p, std::size_t n, int h,
                                 double* v) { dk_std::decode_pieces_cuda(g0, p, n, h, v); });
}

TEST(GpuNumpy, NormalsEqualTheCpuStream) {
  REQUIRE_GPU();
  for (std::uint64_t seed : {0ull, 7ull, 2024ull}) {
    const std::uint64_t kCount = cap<std::uint64_t>(3000000, 100003);
    numpy_rng::Pcg64 a(seed), b(seed);
    std::vector<double> want(kCount);
    for (double& x : want) x = numpy_rng::standard_normal(a);
    const std::vector<double> got = dk_std::parallel_normals(b, kCount, gpu_numpy_split());
    ASSERT_EQ(got.size(), want.size());
    std::uint64_t diffs = 0;
    for (std::uint64_t i = 0; i < kCount; ++i)
      if (std::memcmp(&got[i], &want[i], sizeof(double)) != 0 && ++diffs <= 5)
        ADD_FAILURE() << "seed " << seed << " normal " << i << std::hexfloat << ": gpu " << got[i]
                      << " cpu " << want[i]
                      << (std::fabs(want[i]) > 3.6541528853610088 ? " (a tail normal)" : "");
    EXPECT_EQ(diffs, 0u) << "seed " << seed;
    EXPECT_TRUE(a == b) << "seed " << seed << ": the stream should stand after the last normal";
  }
}

TEST(GpuNumpy, DkStdBlocksMatchTheCpu) {
  REQUIRE_GPU();
  dk_std::NumpyStream cpu(0), gpu(0, gpu_numpy_split());
  for (std::uint32_t d_k : {2u, 64u, 512u}) {
    const Moments c = cpu.next_block(10000, d_k, silent_monitor());
    const Moments g = gpu.next_block(10000, d_k, silent_monitor());
    EXPECT_NEAR(g.stddev(), c.stddev(), 1e-12 * c.stddev()) << "d_k " << d_k;
    EXPECT_NEAR(g.kurtosis(), c.kurtosis(), 1e-12 * c.kurtosis()) << "d_k " << d_k;
  }
}

// One model per thread against the CPU loop: numpy's initial weights made on the device and the
// whole training loop, f64 and f32 (gpu_cases.hpp gives each tolerance).
TEST(GpuTraining, SeedsMatchCpuTwin) {
  REQUIRE_GPU();
  for (const auto& c : gpu_cases::training_cases()) {
    SCOPED_TRACE(c.name);
    std::vector<std::uint64_t> seeds;
    for (std::int64_t s = 0; s < cap<std::int64_t>(c.seeds, 131); ++s)
      seeds.push_back(s * 7919 + 3);
    tiny::TrainOptions o;
    o.grad = c.grad;
    o.steps = cap(c.steps, 300);
    const std::size_t n = seeds.size();
    std::vector<tiny::TrainResult> cpu64(n), cpu(n), gpu(n);
    tiny::train_seeds_cpu<double>(c.config, seeds.data(), n, o, cpu64.data());
    if (c.dtype == DType::f64) {
      cpu = cpu64;
      tiny::train_seeds_cuda<double>(c.config, seeds.data(), n, o, gpu.data());
    } else {
      tiny::train_seeds_cpu<float>(c.config, seeds.data(), n, o, cpu.data());
      tiny::train_seeds_cuda<float>(c.config, seeds.data(), n, o, gpu.data());
    }
    std::size_t outside = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double tol =
          c.dtype == DType::f64
              ? gpu_cases::kTrainingF64Tolerance
              : gpu_cases::training_f32_allowance(cpu[i].weight_on_apple, cpu64[i].weight_on_apple);
      if (!(std::fabs(gpu[i].weight_on_apple - cpu[i].weight_on_apple) <= tol) && outside++ < 5)
        ADD_FAILURE() << "seed " << seeds[i] << ": gpu " << gpu[i].weight_on_apple << " cpu "
                      << cpu[i].weight_on_apple << " tolerance " << tol;
    }
    EXPECT_EQ(outside, 0u);
  }
}

// The general head against the CPU's lane packs (gpu_cases.hpp gives the tolerance), by each of
// its kernels: the warp kernel (every case fits its shared memory) and the thread kernel. The
// emulated device runs the warp kernel's lanes as fibers that switch at every __syncwarp(), so
// it trains fewer seeds and steps there.
TEST(GpuHead, SeedsMatchCpuTwin) {
  REQUIRE_GPU();
  std::mt19937_64 rng(4);
  std::normal_distribution<double> nd;
  std::string pairs;  // every case and kernel with results outside, for the last line
  for (const auto& c : gpu_cases::head_cases()) {
    for (const head::GpuKernel kernel : {head::GpuKernel::warp, head::GpuKernel::thread}) {
      const bool warp = kernel == head::GpuKernel::warp;
      SCOPED_TRACE(std::string(c.name) + (warp ? ", warp kernel" : ", thread kernel"));
      std::vector<std::uint64_t> seeds;
      for (std::int64_t s = 0; s < cap<std::int64_t>(c.seeds, warp ? 5 : 131); ++s)
        seeds.push_back(s * 7919 + 3);
      const auto r = gpu_cases::head_twins(
          c, seeds, cap(c.steps, warp ? 12 : 200), [&] { return nd(rng); }, kernel);
      for (const std::string& why : r.first_outside) ADD_FAILURE() << why;
      EXPECT_EQ(r.outside, 0u);
      if (r.outside > 0)
        pairs += std::string(pairs.empty() ? "" : "; ") + c.name +
                 (warp ? " (warp)" : " (thread)") + ": " + std::to_string(r.outside);
    }
  }
  EXPECT_TRUE(pairs.empty()) << "results outside, by case and kernel: " << pairs;
}

// A training cut into slices of steps across launches gives the bits of one launch: slices of
// 1, 7 and the backend's own size (head_sizing::gpu_steps_per_slice), on every head case, by the
// kernel the backend runs (the warp kernel: fewer seeds and steps emulated, as above).
TEST(GpuHead, SlicesEqualOneLaunchBitForBit) {
  REQUIRE_GPU();
  std::mt19937_64 rng(5);
  std::normal_distribution<double> nd;
  const GpuInfo g = query_gpu();
  for (const auto& c : gpu_cases::head_cases()) {
    SCOPED_TRACE(c.name);
    std::vector<std::uint64_t> seeds;
    for (std::int64_t s = 0; s < cap<std::int64_t>(257, 5); ++s) seeds.push_back(s * 104729 + 11);
    std::vector<double> x, y, known;
    gpu_cases::head_task(c, x, y, known, [&] { return nd(rng); });
    head::Model m = gpu_cases::head_model(c, x, y, known);
    m.steps = std::min(m.steps, cap(100, 12));
    std::vector<double> whole(seeds.size() * head::result_size(m));
    head::train_seeds_cuda(m, seeds.data(), seeds.size(), whole.data());
    const int own = head_sizing::gpu_steps_per_slice(m, static_cast<std::int64_t>(seeds.size()),
                                                     g.multiprocessors);
    for (int slice : {1, 7, own}) {
      std::vector<double> sliced(whole.size());
      head::train_seeds_cuda(m, seeds.data(), seeds.size(), sliced.data(), slice);
      EXPECT_EQ(std::memcmp(sliced.data(), whole.data(), whole.size() * sizeof(double)), 0)
          << "slices of " << slice << " steps";
    }
  }
}

// A stop asked between slices throws Interrupted after the first slice; one slice of all the
// steps asks nothing.
TEST(GpuHead, StopBetweenSlicesThrowsInterrupted) {
  REQUIRE_GPU();
  struct Stopping : Monitor {
    mutable int asked = 0;
    bool stop_requested() const override { return ++asked > 0; }
  } stopping;
  std::vector<double> x, y, known;
  const auto& c = gpu_cases::head_cases().front();
  gpu_cases::head_task(c, x, y, known, [] { return 0.0; });
  head::Model m = gpu_cases::head_model(c, x, y, known);
  m.steps = 10;
  const std::uint64_t seeds[2] = {1, 2};
  std::vector<double> out(2 * head::result_size(m));
  EXPECT_THROW(head::train_seeds_cuda(m, seeds, 2, out.data(), 3, stopping), Interrupted);
  EXPECT_EQ(stopping.asked, 1);
  stopping.asked = 0;
  head::train_seeds_cuda(m, seeds, 2, out.data(), 10, stopping);
  EXPECT_EQ(stopping.asked, 0);
}

TEST(GpuSaturation, RowStatsMatchCpuTwin) {
  REQUIRE_GPU();
  for (auto c : gpu_cases::saturation_cases()) {
    c.rows = cap<std::int64_t>(c.rows, c.d_k >= 1024 ? 37 : 301);
    const saturation::Params p{5, c.d_k, c.keys};
    std::vector<double> cpu(c.rows * saturation::kStats), gpu(cpu.size());
    saturation::row_stats_cpu(p, 10, c.rows, cpu.data());
    saturation::row_stats_cuda(p, 10, c.rows, gpu.data());
    const std::vector<double> allowance(cpu.size(), gpu_cases::saturation_tolerance(c));
    EXPECT_TRUE(within("row stats", gpu, cpu, allowance))
        << "d_k " << c.d_k << " keys " << c.keys << " rows " << c.rows;
  }
}

TEST(GpuQuantiles, SortOnDeviceEqualsStdSort) {
  REQUIRE_GPU();
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u;
  std::vector<double> v(100001);
  for (double& x : v) x = u(rng);
  const std::vector<double> probs = {0, 0.05, 0.25, 0.5, 0.75, 0.95, 1};
  EXPECT_EQ(quantiles_cuda(v, probs), quantiles_cpu(v, probs));
  // NaN is removed before the sort on both sides, +-inf sort as numbers.
  for (std::size_t i = 0; i < v.size(); i += 97) v[i] = std::nan("");
  v[5] = -INFINITY;
  v[6] = INFINITY;
  EXPECT_EQ(quantiles_cuda(v, probs), quantiles_cpu(v, probs));
  EXPECT_EQ(quantiles_cuda(v, {0, 1}), (std::vector<double>{-INFINITY, INFINITY}));
  EXPECT_THROW(quantiles_cuda({NAN, NAN}, probs), std::invalid_argument);
}

// Each bulk experiment's GPU path at a small size against its CPU path: every cell, numbers within
// 1e-6 (1 + |cpu|) (far above the kernels' rounding differences, far below a wrong row or a lost
// wave), counts and text equal; attention-sweep with its maps learned and frozen (a grid of
// uniform and the teacher's known maps). attention-sweep trains on the warp kernel, whose lanes
// the emulated device runs as fibers switching at every __syncwarp(): fewer steps there.
TEST(GpuTables, SmallRunsMatchTheCpu) {
  REQUIRE_GPU();
  const Backend cpu = Backend::select("cpu", 0), gpu = Backend::select("cuda", 0);
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> runs = {
      {"dk-std", {{"--rng", "philox"}, {"--samples", "3000"}, {"--d-k", "1,3,64"}}},
      {"dk-std", {{"--samples", "1000"}, {"--d-k", "4"}}},
      {"softmax-saturation", {{"--d-k", "1,64"}, {"--samples", "301"}}},
      {"training-sweep",
       {{"--configs", "all-random"}, {"--seeds", "0:131"}, {"--grad", "analytic"}}},
      {"attention-sweep",
       {{"--task", "lesson"}, {"--seeds", "0:131"}, {"--steps", std::to_string(cap(3000, 60))}}},
      // Frozen maps: the teacher's known maps of every training input on the device.
      {"attention-sweep",
       {{"--task", "teacher"},
        {"--words", "4"},
        {"--d-model", "4"},
        {"--d-k", "4"},
        {"--heads", "2"},
        {"--inputs", "3"},
        {"--test-inputs", "2"},
        {"--map", "uniform,known"},
        {"--lr", "0.05"},
        {"--seeds", "0:37"},
        {"--steps", std::to_string(cap(300, 20))}}},
  };
  for (const auto& [name, flags] : runs) {
    SCOPED_TRACE(name);
    const Experiment* e = find_experiment(name);
    ASSERT_NE(e, nullptr);
    Options o;
    o.quiet = true;
    const std::vector<Table> a = run_experiment(*e, o, flags, cpu);
    const std::vector<Table> b = run_experiment(*e, o, flags, gpu);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t t = 0; t < a.size(); ++t) {
      ASSERT_EQ(a[t].rows.size(), b[t].rows.size()) << a[t].name;
      for (std::size_t r = 0; r < a[t].rows.size(); ++r) {
        ASSERT_EQ(a[t].rows[r].size(), b[t].rows[r].size());
        for (std::size_t c = 0; c < a[t].rows[r].size(); ++c) {
          const Cell &x = a[t].rows[r][c], &y = b[t].rows[r][c];
          if (std::holds_alternative<double>(x) && std::holds_alternative<double>(y)) {
            const double u = std::get<double>(x), v = std::get<double>(y);
            if (u == v || (std::isnan(u) && std::isnan(v))) continue;
            EXPECT_LE(std::fabs(u - v), 1e-6 * (1 + std::fabs(u)))
                << a[t].name << " row " << r << " column " << a[t].columns[c].name;
          } else {
            EXPECT_TRUE(x == y) << a[t].name << " row " << r << " column " << a[t].columns[c].name;
          }
        }
      }
    }
  }
}

// The device buffer: sizes, round trip, moves, and a refused oversized copy.
TEST(GpuDeviceBuffer, RoundTripMoveAndBounds) {
  REQUIRE_GPU();
  const std::vector<int> host = {1, 2, 3, 4, 5};
  auto a = DeviceBuffer<int>::from_host(host.data(), host.size());
  EXPECT_EQ(a.size(), 5u);
  EXPECT_EQ(a.bytes(), 5 * sizeof(int));
  DeviceBuffer<int> b = std::move(a);
  EXPECT_EQ(a.data(), nullptr);
  std::vector<int> back(5);
  b.download(back.data());
  EXPECT_EQ(back, host);
  std::vector<int> big(6);
  EXPECT_THROW(b.upload(big.data(), big.size()), std::out_of_range);
  EXPECT_EQ(DeviceBuffer<int>(0).data(), nullptr);
}

}  // namespace
}  // namespace attn
