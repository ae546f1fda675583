// bench_kernels.cpp: rates of the CPU twins (Google Benchmark; the GPU kernels are timed with
// CUDA events by bench/gpu_bench.cu).
//   ./build/<preset>/bench/bench_kernels [--benchmark_filter=DkStd]
// Counters: normals/s for the d_k sampler, model_steps/s for training, flop/s for attention.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "attention.hpp"
#include "cpu_clones.hpp"
#include "head.hpp"
#include "kernels/dk_std.hpp"
#include "kernels/dk_std_numpy.hpp"
#include "lanes.hpp"
#include "simd.hpp"
#include "tiny_model.hpp"

namespace attn {
namespace {

// The Philox sampler at the CPU level cpu_clones.hpp picked (ATTNLAB_CPU_LEVEL lowers it).
void DkStdPhiloxCpu(benchmark::State& state) {
  state.SetLabel(cpu_level_name(cpu_level()));
  const auto d_k = static_cast<std::uint32_t>(state.range(0));
  const dk_std::Plan p = dk_std::make_plan(1u << 30, d_k, 0);
  const std::uint64_t chunks = std::max<std::uint64_t>(8, (1u << 25) / (p.chunk_samples() * d_k));
  std::vector<Moments> out(chunks);
  for (auto _ : state) {
    dk_std::chunk_moments_cpu(p, 0, chunks, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["normals/s"] = benchmark::Counter(
      2.0 * d_k * p.chunk_samples() * chunks * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(DkStdPhiloxCpu)->Arg(2)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
// The same per CPU-second of the whole process (all threads): on a machine shared with other
// jobs, what the work costs when the wall clock waits for cores.
BENCHMARK(DkStdPhiloxCpu)
    ->Name("DkStdPhiloxCpu_per_cpu_second")
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

// The lesson's numpy stream, d_k 512, on range(1) threads (the rate should double from 1 to 2).
void DkStdNumpyStream(benchmark::State& state) {
  const auto d_k = static_cast<std::uint32_t>(state.range(0));
  const std::uint64_t n = (1u << 22) / d_k;
  dk_std::StreamSplit split;
  split.threads = static_cast<int>(state.range(1));
  for (auto _ : state) {
    dk_std::NumpyStream s(0, split);
    benchmark::DoNotOptimize(s.next_block(n, d_k, silent_monitor()));
  }
  state.counters["normals/s"] =
      benchmark::Counter(2.0 * d_k * n * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(DkStdNumpyStream)
    ->Args({512, 1})
    ->Args({512, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(DkStdNumpyStream)
    ->Name("DkStdNumpyStream_per_cpu_second")
    ->Args({512, 1})
    ->Args({512, 2})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

void TrainCpu(benchmark::State& state) {
  tiny::TrainOptions o;
  o.grad = state.range(0) ? tiny::Grad::numeric : tiny::Grad::analytic;
  o.steps = 3000;
  std::vector<std::uint64_t> seeds(2048);
  for (std::size_t i = 0; i < seeds.size(); ++i) seeds[i] = i;
  std::vector<tiny::TrainResult> out(seeds.size());
  for (auto _ : state) {
    tiny::train_seeds_cpu<double>(tiny::Config::all_random, seeds.data(), seeds.size(), o,
                                  out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(state.range(0) ? "numeric" : "analytic");
  state.counters["model_steps/s"] = benchmark::Counter(
      double(seeds.size()) * o.steps * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(TrainCpu)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The training table's six runs (the lesson's gradients), too few for lane packs of seeds: each
// run alone, its numeric gradient's evaluations as a pack's lanes (range(0) = 1) or analytic.
void TrainCpuAlone(benchmark::State& state) {
  tiny::TrainOptions o;
  o.grad = state.range(0) ? tiny::Grad::numeric : tiny::Grad::analytic;
  using tiny::Config;
  const Config configs[] = {Config::qk_identity, Config::all_identity, Config::all_random,
                            Config::all_random,  Config::qk_random,    Config::qk_random};
  const std::uint64_t seeds[] = {0, 0, 0, 1, 0, 1};
  std::vector<tiny::TrainResult> out(6);
  for (auto _ : state) {
    tiny::train_runs_cpu<double>(configs, seeds, 6, o, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(state.range(0) ? "numeric" : "analytic");
  state.counters["model_steps/s"] =
      benchmark::Counter(6.0 * o.steps * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(TrainCpuAlone)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

template <class T>
void AttentionForwardCpu(benchmark::State& state) {
  const AttentionShape sh{static_cast<int>(state.range(0)),
                          static_cast<int>(state.range(1)),
                          64,
                          64,
                          64,
                          true,
                          false,
                          0};
  std::mt19937_64 rng(1);
  std::normal_distribution<T> nd;
  auto random = [&](std::size_t n) {
    std::vector<T> v(n);
    for (T& x : v) x = nd(rng);
    return v;
  };
  const std::size_t rows = std::size_t(sh.batch) * sh.n;
  const auto x = random(rows * 64), w = random(64 * 64);
  std::vector<T> q(rows * 64), k(rows * 64), v(rows * 64), s(rows * sh.n), p(rows * sh.n),
      o(rows * 64);
  const AttentionProblem<T> prob{sh,       x.data(), w.data(), w.data(), w.data(), q.data(),
                                 k.data(), v.data(), s.data(), p.data(), o.data()};
  for (auto _ : state) {
    attention_forward_cpu(prob);
    benchmark::DoNotOptimize(o.data());
  }
  // 3 projections + scores + weighted sum, 2 flops per multiply-add.
  const double flops = 2.0 * rows * 64 * 64 * 3 + 2.0 * rows * sh.n * 64 * 2;
  state.counters["flop/s"] =
      benchmark::Counter(flops * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK_TEMPLATE(AttentionForwardCpu, double)
    ->Args({256, 32})
    ->Args({16, 128})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// The Python package's benchmark problem (bench/python_attention.py), outputs already in memory.
BENCHMARK_TEMPLATE(AttentionForwardCpu, float)
    ->Args({4096, 128})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The general head's CPU training alone (head::train_seeds_cpu, one thread): one full lane pack
// of 8 seeds, n 8, d_model = d_k = d_v 16, B inputs (range 0) of normal X and Y, 20 steps of
// SGD; flop/s counts head::flops_per_step per CPU-second (what bench/compare_head.py divides by).
void HeadTrainCpu(benchmark::State& state) {
  state.SetLabel(cpu_level_name(cpu_level()));
  head::Model m;
  m.n = 8;
  m.d_model = m.d_k = m.d_v = 16;
  m.r0 = 0;
  m.inputs = static_cast<int>(state.range(0));
  m.steps = 20;
  m.lr = 0.01;
  m.init_scale = 0.25;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> normal;
  std::vector<double> x(static_cast<std::size_t>(m.inputs) * m.n * m.d_model), y(x.size());
  for (double& v : x) v = normal(rng);
  for (double& v : y) v = normal(rng);
  m.x = x.data();
  m.y = y.data();
  std::vector<std::uint64_t> seeds = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<double> out(seeds.size() * head::result_size(m));
  for (auto _ : state) {
    head::train_seeds_cpu(m, seeds.data(), 8, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["flop/s"] = benchmark::Counter(
      8.0 * m.steps * head::flops_per_step(m) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(HeadTrainCpu)->Arg(1)->Arg(64)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

// The register-blocked inner loop of head_pack.hpp's products alone, on operands in the
// first-level cache: a step loads RB + CB packs and does RB × CB vfmadds, for the block shapes
// the products could take at x86-64-v4; RB = 0 is 16 independent FMA chains with no loads
// (the FMA ceiling). flop/s: 16 FLOPs a vfmadd (8 lanes). Skipped without AVX-512.
#if ATTN_HAVE_CPU_LEVELS
template <int RB, int CB>
ATTN_TARGET_V4 __attribute__((noinline)) void block_steps(const PackD* a, const PackD* b,
                                                          PackD* out, long steps) {
  constexpr int kAcc = RB == 0 ? 16 : RB * CB;
  PackD acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = out[i];
  for (long k = 0; k < steps; ++k) {
    const PackD* bk = b + (k % 16) * 8;
    const PackD* ak = a + (k % 16) * 8;
    if constexpr (RB == 0) {
#pragma GCC unroll 16
      for (int i = 0; i < kAcc; ++i)
        acc[i] = (PackD)_mm512_fmadd_pd((__m512d)acc[i], (__m512d)out[16], (__m512d)out[17]);
    } else {
      PackD bj[CB];
#pragma GCC unroll 8
      for (int j = 0; j < CB; ++j) {
        bj[j] = bk[j];
        asm("" : "+v"(bj[j]));
      }
#pragma GCC unroll 8
      for (int i = 0; i < RB; ++i) {
        PackD ai = ak[i];
        asm("" : "+v"(ai));
#pragma GCC unroll 8
        for (int j = 0; j < CB; ++j)
          acc[i * CB + j] =
              (PackD)_mm512_fmadd_pd((__m512d)ai, (__m512d)bj[j], (__m512d)acc[i * CB + j]);
      }
    }
  }
  for (int i = 0; i < kAcc; ++i) out[i] = acc[i];
}

template <int RB, int CB>
void ProductBlockLoop(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("no AVX-512");
    return;
  }
  // 64-byte aligned (std::vector<PackD> is not).
  alignas(64) static PackD a[16 * 8], b[16 * 8], out[18];
  for (int i = 0; i < 16 * 8; ++i)
    for (int l = 0; l < kPackLanes; ++l) a[i][l] = b[i][l] = 1e-9 * (i + l);
  for (PackD& v : out)
    for (int l = 0; l < kPackLanes; ++l) v[l] = 1e-9;
  constexpr long kSteps = 1 << 20;
  for (auto _ : state) {
    block_steps<RB, CB>(a, b, out, kSteps);
    benchmark::DoNotOptimize(out);
  }
  const double fmas = RB == 0 ? 16.0 : RB * CB;
  state.counters["flop/s"] =
      benchmark::Counter(16.0 * fmas * kSteps * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK_TEMPLATE(ProductBlockLoop, 0, 0)
    ->Name("ProductBlockLoop/fma_ceiling")
    ->MeasureProcessCPUTime();
BENCHMARK_TEMPLATE(ProductBlockLoop, 2, 8)->Name("ProductBlockLoop/2x8")->MeasureProcessCPUTime();
BENCHMARK_TEMPLATE(ProductBlockLoop, 4, 4)->Name("ProductBlockLoop/4x4")->MeasureProcessCPUTime();
BENCHMARK_TEMPLATE(ProductBlockLoop, 4, 6)->Name("ProductBlockLoop/4x6")->MeasureProcessCPUTime();
#endif

}  // namespace
}  // namespace attn

BENCHMARK_MAIN();
