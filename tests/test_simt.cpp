// test_simt.cpp: the SIMT emulation of the CUDA path (tests/simt/, label `simt`): its own
// semantics (barriers, warp shuffles, errors a device would raise, streams that run work only
// when it is waited for, device memory the host cannot touch, the race check, cuBLAS's
// column-major conventions) and what only a GPU would otherwise show of attnlab's launches and
// host wrappers: their geometry against the device's limits and the designs of
// tests/residency.hpp, their buffers kept from call to call, their copies through page-locked
// memory, their waits. scripts/simt-seeded-mistakes runs it on copies of the sources with one
// mistake each, every one of which must fail here.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "attention.hpp"
#include "cublas_loader.hpp"
#include "device_buffer.hpp"
#include "gpu_cases.hpp"
#include "head.hpp"
#include "kernels/dk_std.hpp"
#include "kernels/dk_std_numpy.hpp"
#include "kernels/numpy_random/numpy_random.hpp"
#include "moments.hpp"
#include "residency.hpp"
#include "saturation.hpp"
#include "simt_memory.hpp"
#include "softmax.hpp"
#include "tiny_model.hpp"

namespace attn {
namespace {

// ---- The emulation's semantics ---------------------------------------------------------------

// Launch syntax in this file (compiled as C++, not through translate.cmake):
//   kernel % simt::launch_config(name, grid, block[, shared[, stream]]) % simt::kernel_args(...)

// Runs everything queued; returns its first fault and clears the last error.
cudaError_t finish() {
  const cudaError_t e = cudaDeviceSynchronize();
  cudaGetLastError();
  return e;
}

// A block's tree sum in shared memory, with a barrier after every level: needs every thread's
// store before any thread reads it, whatever order the fibers run in. (translate.cmake makes
// `__shared__ int s[256]` of a .cu file this SharedArray.)
void tree_sum_kernel(const int* in, int* out) {
  __shared__ simt::SharedArray<int, 256> s;
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

TEST(SimtRuntime, BarriersOrderSharedMemoryAcrossShuffledThreads) {
  std::vector<int> in(4 * 256);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i);
  auto d_in = DeviceBuffer<int>::from_host(in.data(), in.size());
  DeviceBuffer<int> d_out(4);
  tree_sum_kernel % simt::launch_config("tree_sum_kernel", 4, 256) %
      simt::kernel_args(d_in.data(), d_out.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<int> out(4);
  d_out.download(out.data());
  for (int b = 0; b < 4; ++b) EXPECT_EQ(out[b], 256 * 256 * b + 255 * 256 / 2) << "block " << b;
}

// Each lane takes lane ^ 1's, then lane ^ 16's value (lane numbers stand for values).
void xor_kernel(int* out) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int a = __shfl_xor_sync(0xffffffffu, lane, 1);
  const double b = __shfl_xor_sync(0xffffffffu, static_cast<double>(lane) + 0.5, 16);
  out[threadIdx.x] = a * 1000 + static_cast<int>(b);
}

TEST(SimtRuntime, ShuffleXorTakesThePartnersValue) {
  DeviceBuffer<int> d(64);
  xor_kernel % simt::launch_config("xor_kernel", 1, 64) % simt::kernel_args(d.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<int> out(64);
  d.download(out.data());
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32;
    EXPECT_EQ(out[t], (lane ^ 1) * 1000 + (lane ^ 16)) << "thread " << t;
  }
}

// Lane 0 returns before a full-mask shuffle: undefined on a device, an error here.
void early_exit_kernel(int* out) {
  if (threadIdx.x == 0) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);
}
// Half the block waits at a barrier, the other half at a warp sync of a lane that returned.
void deadlock_kernel(int*) {
  if (threadIdx.x < 32) {
    __syncthreads();
  } else if (threadIdx.x == 32) {
    return;
  } else {
    __syncwarp(0xffffffffu);
  }
}

// A fault is what the wait for the grid returns (the launch itself is accepted).
TEST(SimtRuntime, AWarpSyncWithoutItsLanesIsALaunchError) {
  DeviceBuffer<int> d(64);
  early_exit_kernel % simt::launch_config("early_exit_kernel", 1, 32) % simt::kernel_args(d.data());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(finish(), cudaErrorLaunchFailure);
  deadlock_kernel % simt::launch_config("deadlock_kernel", 1, 64) % simt::kernel_args(d.data());
  EXPECT_EQ(finish(), cudaErrorLaunchFailure);
  // A warp-sized kernel launched with 48 threads: lanes 48..63 of the second warp do not exist.
  xor_kernel % simt::launch_config("xor_kernel", 1, 48) % simt::kernel_args(d.data());
  EXPECT_EQ(finish(), cudaErrorLaunchFailure);
  // The emulation goes on after an error, as a fresh context would.
  xor_kernel % simt::launch_config("xor_kernel", 1, 64) % simt::kernel_args(d.data());
  EXPECT_EQ(finish(), cudaSuccess);
}

void write_block_kernel(int* order, int* next) { order[(*next)++] = static_cast<int>(blockIdx.x); }

TEST(SimtRuntime, BlocksRunInAShuffledOrder) {
  DeviceBuffer<int> order(64), next(1);
  const int zero = 0;
  next.upload(&zero, 1);
  write_block_kernel % simt::launch_config("write_block_kernel", 64, 1) %
      simt::kernel_args(order.data(), next.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<int> got(64), sorted(64);
  order.download(got.data());
  for (int i = 0; i < 64; ++i) sorted[i] = i;
  EXPECT_NE(got, sorted);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, sorted);
}

TEST(SimtRuntime, ConfigurationsBeyondTheDeviceAreRefused) {
  DeviceBuffer<int> d(64);
  xor_kernel % simt::launch_config("xor_kernel", 1, 2048) % simt::kernel_args(d.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  xor_kernel % simt::launch_config("xor_kernel", 0, 32) % simt::kernel_args(d.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  xor_kernel % simt::launch_config("xor_kernel", dim3(1, 65536), 32) % simt::kernel_args(d.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
}

TEST(SimtRuntime, CopiesOutsideAnAllocationAreRefused) {
  DeviceBuffer<double> d(4);
  std::vector<double> h(8, 1.0);
  EXPECT_EQ(cudaMemcpy(d.data(), h.data(), 5 * sizeof(double), cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d.data() + 1, h.data(), 4 * sizeof(double), cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(h.data(), d.data(), sizeof(double), cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);  // the kinds swapped
  EXPECT_EQ(cudaMemcpy(d.data(), h.data(), 4 * sizeof(double), cudaMemcpyHostToDevice),
            cudaSuccess);
  cudaGetLastError();
  // Fresh device memory reads as NaN, as garbage would fail the comparisons.
  DeviceBuffer<double> fresh(1);
  double x = 0;
  fresh.download(&x);
  EXPECT_TRUE(std::isnan(x));
}

// ---- cuBLAS on the host, column-major ---------------------------------------------------------

// C (m x n, ldc) = alpha op(A) op(B) + beta C per batch entry, column-major, from the definition.
std::vector<double> naive_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                               double alpha, const std::vector<double>& a, int lda, long long sa,
                               const std::vector<double>& b, int ldb, long long sb, double beta,
                               std::vector<double> c, int ldc, long long sc, int batch) {
  for (int e = 0; e < batch; ++e)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double acc = 0;
        for (int l = 0; l < k; ++l) {
          const double x = ta == CUBLAS_OP_N ? a[e * sa + i + l * lda] : a[e * sa + l + i * lda];
          const double y = tb == CUBLAS_OP_N ? b[e * sb + l + j * ldb] : b[e * sb + j + l * ldb];
          acc += x * y;
        }
        double& out = c[e * sc + i + j * ldc];
        out = alpha * acc + (beta != 0 ? beta * out : 0);
      }
  return c;
}

TEST(SimtCublas, StridedBatchedFollowsColumnMajorConventions) {
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int> small(-4, 4);
  const int m = 3, n = 5, k = 4, batch = 3;
  for (cublasOperation_t ta : {CUBLAS_OP_N, CUBLAS_OP_T})
    for (cublasOperation_t tb : {CUBLAS_OP_N, CUBLAS_OP_T})
      for (double beta : {0.0, 2.0}) {
        const int lda = (ta == CUBLAS_OP_N ? m : k) + 1, ldb = (tb == CUBLAS_OP_N ? k : n) + 2;
        const int ldc = m + 1;
        const long long sa = 1LL * lda * (ta == CUBLAS_OP_N ? k : m) + 3;
        const long long sb = 1LL * ldb * (tb == CUBLAS_OP_N ? n : k), sc = 1LL * ldc * n + 1;
        std::vector<double> a(sa * batch), b(sb * batch), c(sc * batch);
        for (double& x : a) x = small(rng);
        for (double& x : b) x = small(rng);
        for (double& x : c) x = beta != 0 ? small(rng) : std::nan("");  // beta 0: C is not read
        const auto want =
            naive_gemm(ta, tb, m, n, k, 1.5, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
        auto da = DeviceBuffer<double>::from_host(a.data(), a.size());
        auto db = DeviceBuffer<double>::from_host(b.data(), b.size());
        auto dc = DeviceBuffer<double>::from_host(c.data(), c.size());
        const double alpha = 1.5;
        ASSERT_EQ(cuda_detail::cublas().dgemm_strided_batched(
                      cuda_detail::cublas_handle(), ta, tb, m, n, k, &alpha, da.data(), lda, sa,
                      db.data(), ldb, sb, &beta, dc.data(), ldc, sc, batch),
                  CUBLAS_STATUS_SUCCESS);
        std::vector<double> got(c.size());
        dc.download(got.data());
        for (std::size_t i = 0; i < got.size(); ++i) {
          if (std::isnan(want[i]) && std::isnan(got[i])) continue;
          EXPECT_EQ(got[i], want[i])
              << "ta " << ta << " tb " << tb << " beta " << beta << " at " << i;
        }
        // One more batch entry than the buffers hold: refused as an access out of bounds.
        EXPECT_EQ(cuda_detail::cublas().dgemm_strided_batched(
                      cuda_detail::cublas_handle(), ta, tb, m, n, k, &alpha, da.data(), lda, sa,
                      db.data(), ldb, sb, &beta, dc.data(), ldc, sc, batch + 1),
                  CUBLAS_STATUS_EXECUTION_FAILED);
        // A leading dimension below the stored rows: cuBLAS's own argument check.
        EXPECT_EQ(cuda_detail::cublas().dgemm_strided_batched(
                      cuda_detail::cublas_handle(), ta, tb, m, n, k, &alpha, da.data(),
                      (ta == CUBLAS_OP_N ? m : k) - 1, sa, db.data(), ldb, sb, &beta, dc.data(),
                      ldc, sc, batch),
                  CUBLAS_STATUS_INVALID_VALUE);
      }
}

// ---- The kernels against their CPU twins, small ----------------------------------------------
// Quick to rebuild after one .cu file changes (test_simt links the kernels alone), these run
// every kernel family with a partial last block; scripts/simt-seeded-mistakes relies on them.
// tests/test_gpu.cpp runs every case of tests/gpu_cases.hpp at its stated tolerance.

TEST(SimtKernels, DkStdChunksEqualTheCpuBitForBit) {
  for (std::uint32_t d_k : {3u, 64u}) {
    const dk_std::Plan p =
        dk_std::make_plan(3 * dk_std::make_plan(1, d_k, 5).chunk_samples() + 11, d_k, 5);
    std::vector<Moments> cpu(p.chunks()), gpu(p.chunks());
    dk_std::chunk_moments_cpu(p, 0, p.chunks(), cpu.data());
    dk_std::chunk_moments_cuda(p, 0, p.chunks(), gpu.data());
    for (std::uint64_t i = 0; i < p.chunks(); ++i)
      EXPECT_EQ(std::memcmp(&cpu[i], &gpu[i], sizeof(Moments)), 0)
          << "d_k " << d_k << " chunk " << i;
  }
}

TEST(SimtKernels, SoftmaxBothVersionsMatchTheCpu) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> nd(0, 2);
  for (const bool causal : {false, true}) {
    const long rows = 61;  // 8 blocks of v2 (8 rows each), the last partial
    const int n = 45;
    std::vector<double> s(rows * n), cpu(s.size()), gpu(s.size());
    for (double& x : s) x = nd(rng);
    softmax_rows_cpu<double>(s.data(), cpu.data(), rows, n, 0.75, causal);
    const auto ds = DeviceBuffer<double>::from_host(s.data(), s.size());
    DeviceBuffer<double> dw(s.size());
    for (SoftmaxKernel v : {SoftmaxKernel::thread_per_row, SoftmaxKernel::warp_per_row}) {
      softmax_rows_cuda<double>(ds.data(), dw.data(), rows, n, 0.75, causal, v);
      dw.download(gpu.data());
      // gpu_cases.hpp's softmax rule, 16 u + 2 gamma_n relative (u = 2^-53).
      const double rel = 16 * 0x1p-53 + 2 * n * 0x1p-53 / (1 - n * 0x1p-53);
      std::size_t outside = 0;
      for (std::size_t i = 0; i < cpu.size(); ++i)
        outside += !(std::fabs(gpu[i] - cpu[i]) <= rel * cpu[i]);
      EXPECT_EQ(outside, 0u) << (v == SoftmaxKernel::warp_per_row ? "v2" : "v1") << " causal "
                             << causal;
    }
  }
}

// Shapes with every dimension different, so that a transposed operand or a wrong leading
// dimension in any GEMM changes the values; README's float64 tolerance 1e-12 (1 + |cpu|).
TEST(SimtKernels, AttentionForwardMatchesTheCpu) {
  std::mt19937_64 rng(1);
  std::normal_distribution<double> nd;
  for (const AttentionShape s : {AttentionShape{3, 7, 5, 3, 9, false, true, 0.5},
                                 AttentionShape{2, 6, 4, 5, 3, true, false, 0}}) {
    const std::size_t w = s.shared_weights ? 1 : s.batch, rows = std::size_t(s.batch) * s.n;
    auto random = [&](std::size_t count) {
      std::vector<double> v(count);
      for (double& x : v) x = nd(rng);
      return v;
    };
    const auto x = random(rows * s.d_model), wq = random(w * s.d_model * s.d_k),
               wk = random(w * s.d_model * s.d_k), wv = random(w * s.d_model * s.d_v);
    struct Out {
      std::vector<double> q, k, v, scores, weights, out;
    };
    auto run = [&](bool gpu) {
      Out o{std::vector<double>(rows * s.d_k), std::vector<double>(rows * s.d_k),
            std::vector<double>(rows * s.d_v), std::vector<double>(rows * s.n),
            std::vector<double>(rows * s.n),   std::vector<double>(rows * s.d_v)};
      const AttentionProblem<double> p{
          s,          x.data(),   wq.data(),       wk.data(),        wv.data(),   o.q.data(),
          o.k.data(), o.v.data(), o.scores.data(), o.weights.data(), o.out.data()};
      if (gpu)
        attention_forward_cuda_host(p);
      else
        attention_forward_cpu(p);
      return o;
    };
    const Out c = run(false), g = run(true);
    auto close = [](const std::vector<double>& a, const std::vector<double>& b) {
      std::size_t outside = 0;
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i] || std::fabs(a[i] - b[i]) <= 1e-12 * (1 + std::fabs(b[i])))) ++outside;
      return outside;
    };
    EXPECT_EQ(close(g.q, c.q), 0u);
    EXPECT_EQ(close(g.k, c.k), 0u);
    EXPECT_EQ(close(g.v, c.v), 0u);
    EXPECT_EQ(close(g.scores, c.scores), 0u);
    EXPECT_EQ(close(g.weights, c.weights), 0u);
    EXPECT_EQ(close(g.out, c.out), 0u);
  }
}

TEST(SimtKernels, TrainingCoversEverySeed) {
  std::vector<std::uint64_t> seeds;
  for (std::uint64_t s = 0; s < 131; ++s) seeds.push_back(s * 7919 + 3);  // a partial block
  tiny::TrainOptions o;
  o.steps = 20;
  std::vector<tiny::TrainResult> cpu(seeds.size()), gpu(seeds.size());
  tiny::train_seeds_cpu<double>(tiny::Config::all_random, seeds.data(), seeds.size(), o,
                                cpu.data());
  tiny::train_seeds_cuda<double>(tiny::Config::all_random, seeds.data(), seeds.size(), o,
                                 gpu.data());
  for (std::size_t i = 0; i < seeds.size(); ++i)
    EXPECT_NEAR(gpu[i].weight_on_apple, cpu[i].weight_on_apple, 1e-9) << "seed " << i;
}

// ---- Launch geometry ----------------------------------------------------------------------------

// Launches of `kernel` since the last clear.
std::vector<simt::Launch> launches_of(const std::string& kernel) {
  std::vector<simt::Launch> r;
  for (const simt::Launch& l : simt::launches())
    if (l.kernel == kernel) r.push_back(l);
  return r;
}
std::uint64_t threads(const simt::Launch& l) {
  return 1ull * l.grid.x * l.grid.y * l.grid.z * l.block.x * l.block.y * l.block.z;
}

// Dry runs: launches recorded and checked, nothing executed, no device memory touched.
struct DryRun {
  DryRun() {
    simt::clear_launches();
    simt::set_dry_run(true);
  }
  ~DryRun() { simt::set_dry_run(false); }
};

// Every launch recorded uses the block of its kernel's design in tests/residency.hpp (the block
// that test_residency, in the CUDA build, finds resident on sm_90 in the numbers the design
// needs); a kernel whose block follows the problem (the causal weighted sum) uses whole warps,
// at least the design's.
void expect_designed_blocks(const char* where) {
  for (const simt::Launch& l : simt::launches()) {
    bool known = false;
    for (const residency::Design& d : residency::designs()) {
      if (l.kernel != d.launch) continue;
      known = true;
      const unsigned t = l.block.x * l.block.y * l.block.z;
      if (l.kernel == "causal_weighted_sum_kernel") {
        EXPECT_TRUE(t % 32 == 0 && t >= unsigned(d.threads))
            << where << ": " << l.kernel << " " << t;
      } else {
        EXPECT_EQ(t, unsigned(d.threads)) << where << ": " << l.kernel;
      }
    }
    EXPECT_TRUE(known) << where << ": " << l.kernel << " has no design in tests/residency.hpp";
  }
}

TEST(SimtGeometry, DkStdWavesCoverEveryChunk) {
  DryRun dry;
  const dk_std::Plan p = dk_std::make_plan(std::uint64_t{1} << 40, 64, 1);
  const std::uint64_t count = 2 * dk_std::kChunksPerLaunch + 77;
  dk_std::chunk_moments_cuda_device(p, 0, count, nullptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const auto l = launches_of("dk_std_chunks_kernel");
  ASSERT_EQ(l.size(), 3u);
  std::uint64_t blocks = 0;
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (i + 1 < l.size()) {
      EXPECT_EQ(l[i].grid.x, dk_std::kChunksPerLaunch) << "launch " << i;
    }
    blocks += l[i].grid.x;
  }
  EXPECT_EQ(blocks, count);
  expect_designed_blocks("dk-std");
}

TEST(SimtGeometry, TrainingLaunchCoversEverySeed) {
  DryRun dry;
  const std::int64_t n = (std::int64_t{1} << 20) + 3;  // the backend's seeds per call, and a few
  tiny::train_seeds_cuda_device<double>(tiny::Config::all_random, nullptr, n, tiny::TrainOptions{},
                                        nullptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const auto l = simt::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_GE(threads(l[0]), static_cast<std::uint64_t>(n));
  EXPECT_LT(threads(l[0]) - n, l[0].block.x);  // no block beyond the last seed's
  expect_designed_blocks("training");
}

// The causal weighted sum launches one block per query row: every row is covered, and no
// launch's grid exceeds the device's 2^31 - 1 blocks, even past 2^32 rows (4 rows a problem).
TEST(SimtGeometry, CausalWeightedSumCoversRowsPastTheGridLimit) {
  for (const long long rows : {1000LL, (1LL << 31) + 4, (1LL << 32) + 8}) {
    DryRun dry;
    const AttentionShape s{static_cast<int>(rows / 4), 4, 1, 1, 1, true, true, 0};
    attention_forward_cuda<float>(AttentionProblem<float>{s});
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "rows " << rows;
    long long covered = 0;
    for (const simt::Launch& l : launches_of("causal_weighted_sum_kernel")) {
      EXPECT_LE(l.grid.x, simt::kMaxGridX) << "rows " << rows;
      covered += 1LL * l.grid.x * l.grid.y * l.grid.z;
    }
    EXPECT_EQ(covered, rows);
    expect_designed_blocks("attention");
  }
}

// The other kernels' launches, run small: each family's blocks are its design's.
TEST(SimtGeometry, EveryLaunchUsesItsDesignedBlock) {
  simt::clear_launches();
  std::vector<double> stats(37 * saturation::kStats);
  saturation::row_stats_cuda({5, 64, 3}, 0, 37, stats.data());
  const AttentionShape s{3, 40, 5, 3, 9, false, false, 0};
  std::vector<double> x(3 * 40 * 5, 0.5), w(3 * 5 * 9, 0.25), q(3 * 40 * 3), k(q.size()),
      v(3 * 40 * 9), sc(3 * 40 * 40), p(sc.size()), o(v.size());
  attention_forward_cuda_host(AttentionProblem<double>{s, x.data(), w.data(), w.data(), w.data(),
                                                       q.data(), k.data(), v.data(), sc.data(),
                                                       p.data(), o.data()});
  const std::uint64_t seeds[3] = {1, 2, 3};
  tiny::TrainResult r[3];
  tiny::TrainOptions opt;
  opt.steps = 2;
  tiny::train_seeds_cuda<float>(tiny::Config::all_random, seeds, 3, opt, r);
  const dk_std::Plan plan = dk_std::make_plan(1000, 4, 5);
  std::vector<Moments> m(plan.chunks());
  dk_std::chunk_moments_cuda(plan, 0, plan.chunks(), m.data());
  numpy_rng::Pcg64 g(3);
  (void)dk_std::parallel_normals(
      g, 1000,
      dk_std::device_split([](const numpy_rng::Pcg64& g0, dk_std::Piece* pc, std::size_t n, int h,
                              double* val) { dk_std::decode_pieces_cuda(g0, pc, n, h, val); }));
  for (const char* k :
       {"fill_kernel", "stats_kernel", "softmax_rows_v1_kernel", "softmax_rows_v2_kernel",
        "finish_scores_kernel", "train_kernel", "dk_std_chunks_kernel", "numpy_pieces_kernel"})
    EXPECT_FALSE(launches_of(k).empty()) << k;
  expect_designed_blocks("every family");
}

// numpy's stream on the device: a wave of device_split's size is one launch of a thread per
// piece (tests/test_residency.cpp: at least the device's resident threads); the pieces' buffers
// are allocated once, not once per wave.
TEST(SimtGeometry, NumpyDecoderAllocatesOnce) {
  simt::clear_launches();
  simt::clear_stats();
  const dk_std::StreamSplit split =
      dk_std::device_split([](const numpy_rng::Pcg64& g0, dk_std::Piece* p, std::size_t n, int h,
                              double* v) { dk_std::decode_pieces_cuda(g0, p, n, h, v); });
  numpy_rng::Pcg64 a(11), b(11);
  std::vector<double> want(3000);
  for (double& x : want) x = numpy_rng::standard_normal(a);
  for (int wave = 0; wave < 3; ++wave) {
    const std::vector<double> got = dk_std::parallel_normals(b, 1000, split);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(got[i], want[wave * 1000 + i]) << wave << " " << i;
  }
  EXPECT_GE(launches_of("numpy_pieces_kernel").size(), 3u);
  EXPECT_LE(simt::stats().device_allocations, 2u);  // the pieces and the values, once
}

// The dk-std numpy table's blocks on the device, its decoder queued and waited for (the split a
// CUDA backend uses), equal the CPU's blocks bit for bit over several waves of rows, the last one
// partial: q kept whole (k in waves), and q located then decoded again beside k. Every copy
// between host and device goes through page-locked memory, kept from wave to wave.
TEST(SimtNumpy, TableBlocksOverlapOnPinnedBuffersEqualTheCpu) {
  constexpr std::uint32_t kDk = 1024;
  constexpr std::uint64_t kWave = 65536;           // normals: 64 rows of 1024, one chunk of rows
  constexpr std::uint64_t kSamples = 3 * 64 + 20;  // three full waves and a partial fourth
  for (const bool keep_q : {true, false}) {
    SCOPED_TRACE(keep_q ? "q kept" : "q decoded again");
    dk_std::StreamSplit gpu = dk_std::device_split(
        [](const numpy_rng::Pcg64& g0, dk_std::Piece* p, std::size_t n, int h, double* v) {
          dk_std::decode_pieces_cuda_start(g0, p, n, h, v);
        },
        [] { dk_std::decode_pieces_cuda_wait(); }, dk_std::pinned_host_memory());
    gpu.wave_normals = keep_q ? kSamples * kDk : kWave;
    gpu.k_wave_normals = kWave;
    dk_std::StreamSplit cpu;
    cpu.threads = 2;
    cpu.wave_normals = gpu.wave_normals;
    cpu.k_wave_normals = kWave;

    simt::clear_launches();
    simt::clear_stats();
    dk_std::NumpyStream on_gpu(20240611, gpu), on_cpu(20240611, cpu);
    std::uint64_t pinned_after_first = 0;
    for (int block = 0; block < 2; ++block) {
      const Moments g = on_gpu.next_block(kSamples, kDk, silent_monitor());
      const Moments c = on_cpu.next_block(kSamples, kDk, silent_monitor());
      EXPECT_EQ(std::memcmp(&g, &c, sizeof(Moments)), 0) << "block " << block;
      EXPECT_EQ(g.n, static_cast<double>(kSamples));
      if (block == 0) pinned_after_first = simt::stats().pinned_allocations;
    }
    // k's 4 waves at least, each a launch of its own (one more round when rejections need one).
    EXPECT_GE(launches_of("numpy_pieces_kernel").size(), 4u);
    const simt::Stats st = simt::stats();
    EXPECT_EQ(st.pageable_copy_bytes, 0u);
    // Pieces up and down, values down: more than the two blocks' k normals of 8 bytes.
    EXPECT_GT(st.pinned_copy_bytes, 2 * kSamples * kDk * sizeof(double));
    // Buffers are kept from wave to wave and block to block: the second block (same size, four
    // waves of k) allocates fewer than one buffer a wave (at most a buffer for a round more than
    // the first block's waves needed), where allocating per wave would take two a wave.
    EXPECT_LT(st.pinned_allocations - pinned_after_first, 4u);
    EXPECT_GE(pinned_after_first, 2u);  // the pieces and at least a values buffer
  }
}

// Runs body on a new host thread: the host wrappers keep their buffers per host thread, so there
// they start with none, whatever the tests before allocated.
template <class F>
void in_fresh_thread(F body) {
  std::thread t(body);
  t.join();
}

// numpy's decoder with calls queued before a wait (page-locked host memory, so that the copies
// are queued too), the second needing larger buffers: the decoder waits for the queued call
// before it frees the buffers that call still uses (cudaFree does not promise to), and both
// calls decode what the CPU does.
void queued_calls_grow() {
  const numpy_rng::Pcg64 g0(5);
  const std::size_t counts[2] = {3, 40};
  PinnedBuffer<dk_std::Piece> pieces[2];
  PinnedBuffer<double> values[2];
  std::vector<dk_std::Piece> want[2];
  std::vector<double> want_values[2];
  for (int call = 0; call < 2; ++call) {
    const std::size_t n = counts[call];
    dk_std::Piece* p = pieces[call].reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = dk_std::Piece{};
      p[i].begin = 64 * i;
      p[i].end = 64 * i + 64;
    }
    double* v = values[call].reserve(64 * n);
    std::fill(v, v + 64 * n, -1.0);
    want[call].assign(p, p + n);
    want_values[call].assign(64 * n, 0.0);
    dk_std::decode_pieces_cpu(g0, want[call].data(), n, 4, want_values[call].data(), 1);
  }
  for (int call = 0; call < 2; ++call)
    dk_std::decode_pieces_cuda_start(g0, pieces[call].data(), counts[call], 4, values[call].data());
  dk_std::decode_pieces_cuda_wait();
  for (int call = 0; call < 2; ++call) {
    for (std::size_t i = 0; i < counts[call]; ++i) {
      const dk_std::Piece& w = want[call][i];
      EXPECT_EQ(std::memcmp(&pieces[call].data()[i], &w, sizeof(dk_std::Piece)), 0)
          << "call " << call << " piece " << i;
      // A piece's values: one per normal it decoded, from its first word's slot.
      for (std::uint64_t k = w.begin; k < w.begin + w.n; ++k) {
        if (values[call].data()[k] != want_values[call][k]) {
          ADD_FAILURE() << "call " << call << " value " << k;
          return;
        }
      }
    }
  }
}

TEST(SimtNumpy, QueuedCallsThatGrowTheBuffersWaitFirst) { in_fresh_thread(queued_calls_grow); }

// ---- Host wrappers: buffers kept, copies through page-locked memory --------------------------

void saturation_calls() {
  const saturation::Params p{9, 64, 3};
  std::vector<double> cpu(301 * saturation::kStats), gpu(cpu.size());
  simt::clear_stats();
  for (int call = 0; call < 3; ++call) {  // the first call allocates, the others reuse
    const std::int64_t rows = call == 1 ? 200 : 301;
    saturation::row_stats_cpu(p, 1000 * call, rows, cpu.data());
    saturation::row_stats_cuda(p, 1000 * call, rows, gpu.data());
    const double tol = gpu_cases::saturation_tolerance({64, 3, rows});
    for (std::int64_t i = 0; i < rows * saturation::kStats; ++i) {
      if (!(std::fabs(gpu[i] - cpu[i]) <= tol)) {
        ADD_FAILURE() << "call " << call << " value " << i << ": " << gpu[i] << " vs " << cpu[i];
        return;
      }
    }
    if (call == 0) {
      EXPECT_GE(simt::stats().device_allocations, 1u);
      simt::clear_stats();
    }
  }
  const simt::Stats st = simt::stats();
  EXPECT_EQ(st.device_allocations, 0u);
  EXPECT_EQ(st.pinned_allocations, 0u);
  EXPECT_EQ(st.pageable_copy_bytes, 0u);
  EXPECT_EQ(st.pinned_copy_bytes, (200 + 301) * saturation::kStats * sizeof(double));
}
TEST(SimtSaturation, CallsKeepTheirBuffersAndCopyThroughPinnedMemory) {
  in_fresh_thread(saturation_calls);
}

void attention_calls() {
  std::mt19937_64 rng(12);
  std::normal_distribution<double> nd;
  simt::clear_stats();
  std::uint64_t allocations_after_first = 0;
  for (const AttentionShape s : {AttentionShape{4, 7, 5, 3, 9, false, true, 0},
                                 AttentionShape{2, 7, 5, 3, 9, false, false, 0},
                                 AttentionShape{4, 7, 5, 3, 9, false, false, 0.5}}) {
    const std::size_t rows = std::size_t(s.batch) * s.n;
    auto random = [&](std::size_t count) {
      std::vector<double> v(count);
      for (double& x : v) x = nd(rng);
      return v;
    };
    const auto x = random(rows * s.d_model), wq = random(s.batch * s.d_model * s.d_k),
               wk = random(wq.size()), wv = random(s.batch * s.d_model * s.d_v);
    std::vector<double> out[2][6];
    for (int side = 0; side < 2; ++side) {
      auto& o = out[side];
      o[0].resize(rows * s.d_k), o[1].resize(rows * s.d_k), o[2].resize(rows * s.d_v);
      o[3].resize(rows * s.n), o[4].resize(rows * s.n), o[5].resize(rows * s.d_v);
      const AttentionProblem<double> p{s,           x.data(),    wq.data(),   wk.data(),
                                       wv.data(),   o[0].data(), o[1].data(), o[2].data(),
                                       o[3].data(), o[4].data(), o[5].data()};
      if (side == 0)
        attention_forward_cpu(p);
      else
        attention_forward_cuda_host(p);
    }
    for (int a = 0; a < 6; ++a) {
      for (std::size_t i = 0; i < out[0][a].size(); ++i) {
        const double c = out[0][a][i], g = out[1][a][i];
        if (!(c == g || std::fabs(c - g) <= 1e-12 * (1 + std::fabs(c)))) {
          ADD_FAILURE() << "output " << a << " at " << i << ": " << g << " vs " << c;
          return;
        }
      }
    }
    if (allocations_after_first == 0)
      allocations_after_first = simt::stats().device_allocations + simt::stats().pinned_allocations;
  }
  const simt::Stats st = simt::stats();
  EXPECT_GE(allocations_after_first, 11u);  // ten device buffers and the staging memory
  EXPECT_EQ(st.device_allocations + st.pinned_allocations, allocations_after_first);
  EXPECT_EQ(st.pageable_copy_bytes, 0u);
  EXPECT_GT(st.pinned_copy_bytes, 0u);
}
TEST(SimtAttention, CallsKeepTheirBuffersAndCopyThroughPinnedMemory) {
  in_fresh_thread(attention_calls);
}

// The general head on the emulated device against the CPU twin: every head case of
// tests/gpu_cases.hpp (heads, causal mask, scales, W_O, Adam, both schedules, many inputs), by
// each kernel, few seeds and steps, every result the CPU twin's bits (the emulated device's exp
// is the CPU's). The warp kernel runs a block of one warp a seed with the seed's workspace as its
// shared memory; the thread kernel a partial block. test_gpu runs every case at full size.
TEST(SimtKernels, HeadKernelsTrainEveryCaseToTheCpuTwinsBits) {
  for (const gpu_cases::HeadCase& c : gpu_cases::head_cases()) {
    for (const head::GpuKernel kernel : {head::GpuKernel::warp, head::GpuKernel::thread}) {
      const bool warp = kernel == head::GpuKernel::warp;
      SCOPED_TRACE(std::string(c.name) + (warp ? ", warp kernel" : ", thread kernel"));
      std::mt19937_64 rng(4);
      std::normal_distribution<double> nd;
      std::vector<std::uint64_t> seeds;
      for (std::uint64_t s = 0; s < (warp ? 3u : 37u); ++s) seeds.push_back(s * 7919 + 3);
      simt::clear_launches();
      const auto r = gpu_cases::head_twins(
          c, seeds, std::min(c.steps, 6), [&] { return nd(rng); }, kernel, true);
      for (const std::string& why : r.first_outside) ADD_FAILURE() << why;
      EXPECT_EQ(r.outside, 0u);
      const auto l = launches_of(warp ? "train_warp_kernel" : "train_kernel");
      ASSERT_EQ(l.size(), 1u);
      if (warp) {
        std::vector<double> x, y, known;
        gpu_cases::head_task(c, x, y, known, [] { return 0.0; });
        EXPECT_EQ(l[0].grid.x, seeds.size());
        EXPECT_EQ(l[0].shared_bytes, static_cast<std::size_t>(head::warp_shared_bytes(
                                         gpu_cases::head_model(c, x, y, known))));
      }
      expect_designed_blocks(c.name);
    }
  }
}

// The warp kernel trained in slices of steps (its state kept in global memory between
// launches) gives one launch's bits.
TEST(SimtKernels, HeadWarpKernelSlicesEqualOneLaunch) {
  const gpu_cases::HeadCase& c = gpu_cases::head_cases()[9];  // 3 inputs, rows from 1, Adam, W_O
  std::vector<double> x, y, known;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> nd;
  gpu_cases::head_task(c, x, y, known, [&] { return nd(rng); });
  head::Model m = gpu_cases::head_model(c, x, y, known);
  m.steps = 7;
  const std::uint64_t seeds[3] = {1, 2, 3};
  std::vector<double> whole(3 * head::result_size(m)), sliced(whole.size());
  head::train_seeds_cuda(m, seeds, 3, whole.data(), 0, silent_monitor(), head::GpuKernel::warp);
  head::train_seeds_cuda(m, seeds, 3, sliced.data(), 3, silent_monitor(), head::GpuKernel::warp);
  EXPECT_EQ(std::memcmp(whole.data(), sliced.data(), whole.size() * sizeof(double)), 0);
}

// Which kernel trains what: the warp kernel where the seed's workspace fits a block's shared
// memory (227 KiB on the emulated H200) and the gradient is analytic, else the thread kernel;
// the warp kernel asked for where it does not fit is an error, before any work.
TEST(SimtKernels, HeadKernelChoice) {
  head::Model m;
  m.n = 8, m.d_model = m.d_k = m.d_v = 16;
  EXPECT_EQ(head::chosen_kernel(m), head::GpuKernel::warp);
  EXPECT_EQ(head::chosen_kernel(m, head::GpuKernel::thread), head::GpuKernel::thread);
  head::Model numeric = m;
  numeric.grad = head::Grad::numeric;
  EXPECT_EQ(head::chosen_kernel(numeric), head::GpuKernel::thread);
  EXPECT_THROW(head::chosen_kernel(numeric, head::GpuKernel::warp), std::invalid_argument);
  head::Model large = m;  // 8 inputs of 64 rows: ~1 MB a seed
  large.n = 64, large.d_model = large.d_k = large.d_v = 64, large.inputs = 8;
  EXPECT_GT(head::warp_shared_bytes(large), 227 * 1024);
  EXPECT_EQ(head::chosen_kernel(large), head::GpuKernel::thread);
  EXPECT_THROW(head::chosen_kernel(large, head::GpuKernel::warp), std::invalid_argument);
}

// ---- Streams -------------------------------------------------------------------------------

void set_kernel(int* x, int value) { x[threadIdx.x] = value; }
// Appends `id` to a log of the order grids ran in (log[0] counts the entries).
void log_kernel(int* log, int id) {
  if (threadIdx.x == 0) log[1 + log[0]++] = id;
}

struct Stream {
  cudaStream_t s = nullptr;
  explicit Stream(unsigned flags) { EXPECT_EQ(cudaStreamCreateWithFlags(&s, flags), cudaSuccess); }
  ~Stream() { cudaStreamDestroy(s); }
};

// Work runs when it is waited for, not when it is issued: the host reads the old contents of a
// page-locked buffer until the stream's copy into it has run.
TEST(SimtStreams, WorkRunsWhenWaitedFor) {
  Stream s(cudaStreamNonBlocking);
  PinnedBuffer<int> host;
  int* h = host.reserve(32);
  std::fill(h, h + 32, -1);
  DeviceBuffer<int> d(32);
  set_kernel % simt::launch_config("set_kernel", 1, 32, 0, s.s) % simt::kernel_args(d.data(), 7);
  ASSERT_EQ(cudaMemcpyAsync(h, d.data(), 32 * sizeof(int), cudaMemcpyDeviceToHost, s.s),
            cudaSuccess);
  EXPECT_EQ(h[0], -1);  // a missing wait reads stale memory
  ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
  EXPECT_EQ(h[0], 7);
  EXPECT_EQ(h[31], 7);
}

// The legacy default stream waits for the blocking streams' earlier work (and they for its), not
// for a non-blocking stream's: a synchronous copy after a kernel on a non-blocking stream reads
// what the memory held before it.
TEST(SimtStreams, TheLegacyStreamWaitsForBlockingStreamsOnly) {
  for (const unsigned flags : {cudaStreamDefault, cudaStreamNonBlocking}) {
    Stream s(flags);
    DeviceBuffer<int> d(32);
    const std::vector<int> zeros(32, 0);
    d.upload(zeros.data());
    set_kernel % simt::launch_config("set_kernel", 1, 32, 0, s.s) % simt::kernel_args(d.data(), 5);
    int got = -1;
    ASSERT_EQ(cudaMemcpy(&got, d.data(), sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, flags == cudaStreamDefault ? 5 : 0) << "flags " << flags;
    ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(&got, d.data(), sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, 5);
  }
}

// An event orders two streams; without the wait, the second stream's copy reads stale memory.
TEST(SimtStreams, AnEventOrdersTwoStreams) {
  for (const bool wait : {true, false}) {
    Stream a(cudaStreamNonBlocking), b(cudaStreamNonBlocking);
    cudaEvent_t e;
    ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
    DeviceBuffer<int> d(32);
    const std::vector<int> zeros(32, 0);
    d.upload(zeros.data());
    PinnedBuffer<int> host;
    int* h = host.reserve(1);
    *h = -1;
    set_kernel % simt::launch_config("set_kernel", 1, 32, 0, a.s) % simt::kernel_args(d.data(), 3);
    ASSERT_EQ(cudaEventRecord(e, a.s), cudaSuccess);
    if (wait) {
      ASSERT_EQ(cudaStreamWaitEvent(b.s, e, 0), cudaSuccess);
    }
    ASSERT_EQ(cudaMemcpyAsync(h, d.data(), sizeof(int), cudaMemcpyDeviceToHost, b.s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(b.s), cudaSuccess);
    EXPECT_EQ(*h, wait ? 3 : 0) << (wait ? "with" : "without") << " the event";
    EXPECT_EQ(finish(), cudaSuccess);
    cudaEventDestroy(e);
  }
}

// Work on two independent streams runs in either order from one wait to the next, as a device
// may run it; within a stream, always in issue order.
TEST(SimtStreams, IndependentStreamsRunInEitherOrder) {
  Stream a(cudaStreamNonBlocking), b(cudaStreamNonBlocking);
  DeviceBuffer<int> log(8);
  int seen[2] = {0, 0};
  for (int trial = 0; trial < 40; ++trial) {
    const std::vector<int> zeros(8, 0);
    log.upload(zeros.data());
    for (int i = 0; i < 2; ++i)
      log_kernel % simt::launch_config("log_kernel", 1, 1, 0, a.s) %
          simt::kernel_args(log.data(), i);
    log_kernel % simt::launch_config("log_kernel", 1, 1, 0, b.s) % simt::kernel_args(log.data(), 9);
    ASSERT_EQ(finish(), cudaSuccess);
    std::vector<int> got(8);
    log.download(got.data());
    ASSERT_EQ(got[0], 3);
    const auto zero = std::find(got.begin() + 1, got.begin() + 4, 0);
    const auto one = std::find(got.begin() + 1, got.begin() + 4, 1);
    EXPECT_LT(zero, one) << "stream a's grids out of issue order";
    ++seen[got[1] == 9 ? 1 : 0];
  }
  EXPECT_GT(seen[0], 0);  // stream a first
  EXPECT_GT(seen[1], 0);  // stream b first
}

// A copy from pageable memory returns when done, whatever the API: the host may reuse its
// buffer at once (CUDA stages it).
TEST(SimtStreams, PageableCopiesKeepTheHostUntilDone) {
  Stream s(cudaStreamNonBlocking);
  DeviceBuffer<int> d(32);
  std::vector<int> h(32, 4), back(32, 0);
  ASSERT_EQ(cudaMemcpyAsync(d.data(), h.data(), 32 * sizeof(int), cudaMemcpyHostToDevice, s.s),
            cudaSuccess);
  std::fill(h.begin(), h.end(), 8);
  ASSERT_EQ(cudaMemcpyAsync(back.data(), d.data(), 32 * sizeof(int), cudaMemcpyDeviceToHost, s.s),
            cudaSuccess);
  EXPECT_EQ(back, std::vector<int>(32, 4));
}

// ---- Device and host memory told apart -------------------------------------------------------

// A host pointer handed to a kernel: the grid faults where it runs (illegal address), pageable
// or page-locked; null and device pointers are fine.
TEST(SimtMemory, AHostPointerHandedToAKernelFaults) {
  std::vector<int> pageable(64);
  PinnedBuffer<int> pinned;
  for (int* host : {pageable.data(), pinned.reserve(64)}) {
    xor_kernel % simt::launch_config("xor_kernel", 1, 64) % simt::kernel_args(host);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // the launch is accepted
    EXPECT_EQ(finish(), cudaErrorIllegalAddress);
  }
  DeviceBuffer<int> d(64);
  xor_kernel % simt::launch_config("xor_kernel", 1, 64) % simt::kernel_args(d.data());
  EXPECT_EQ(finish(), cudaSuccess);
}

#if defined(__SANITIZE_ADDRESS__)
// Device memory read on the host: AddressSanitizer reports it, as a device would fault.
TEST(SimtMemoryDeathTest, DeviceMemoryReadOnTheHostIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  DeviceBuffer<double> d(4);
  EXPECT_DEATH(
      {
        const volatile double* p = d.data();
        std::printf("%f\n", p[1]);
      },
      "use-after-poison");
}

// Memory freed while queued work still uses it: the work touches freed memory when it runs.
TEST(SimtMemoryDeathTest, FreeingMemoryThatQueuedWorkUsesIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Stream s(cudaStreamNonBlocking);
        auto d = std::make_unique<DeviceBuffer<int>>(32);
        set_kernel % simt::launch_config("set_kernel", 1, 32, 0, s.s) %
            simt::kernel_args(d->data(), 1);
        d.reset();  // cudaFree without a wait
        cudaStreamSynchronize(s.s);
      },
      "heap-use-after-free");
}
#endif

// ---- The race check ------------------------------------------------------------------------

struct RaceCheck {
  RaceCheck() { simt::set_race_check(true); }
  ~RaceCheck() { simt::set_race_check(false); }
};

// Each thread writes its element, then reads its neighbour's with no barrier between.
void neighbour_kernel(int* out) {
  __shared__ simt::SharedArray<int, 64> s;
  const unsigned t = threadIdx.x;
  s[t] = static_cast<int>(t);
  out[t] = s[(t + 1) % blockDim.x];
}
// The same with a barrier between the writes and the reads: no race.
void neighbour_barrier_kernel(int* out) {
  __shared__ simt::SharedArray<int, 64> s;
  const unsigned t = threadIdx.x;
  s[t] = static_cast<int>(t);
  __syncthreads();
  out[t] = s[(t + 1) % blockDim.x];
}

TEST(SimtRaceCheck, AnUnorderedSharedAccessIsReported) {
  DeviceBuffer<int> d(64);
  {
    RaceCheck on;
    neighbour_kernel % simt::launch_config("neighbour_kernel", 2, 64) % simt::kernel_args(d.data());
    EXPECT_EQ(finish(), cudaErrorLaunchFailure);
    neighbour_barrier_kernel % simt::launch_config("neighbour_barrier_kernel", 2, 64) %
        simt::kernel_args(d.data());
    EXPECT_EQ(finish(), cudaSuccess);
  }
  // Without the race check the racy kernel runs (its threads switch only at barriers).
  neighbour_kernel % simt::launch_config("neighbour_kernel", 2, 64) % simt::kernel_args(d.data());
  EXPECT_EQ(finish(), cudaSuccess);
}

TEST(SimtRaceCheck, BarriersOrderTheTreeSum) {
  RaceCheck on;
  std::vector<int> in(2 * 256);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i % 97);
  auto d_in = DeviceBuffer<int>::from_host(in.data(), in.size());
  DeviceBuffer<int> d_out(2);
  tree_sum_kernel % simt::launch_config("tree_sum_kernel", 2, 256) %
      simt::kernel_args(d_in.data(), d_out.data());
  ASSERT_EQ(finish(), cudaSuccess);
  std::vector<int> out(2);
  d_out.download(out.data());
  for (int b = 0; b < 2; ++b) {
    int want = 0;
    for (int i = 0; i < 256; ++i) want += in[b * 256 + i];
    EXPECT_EQ(out[b], want);
  }
}

// The dk-std kernel's tree in shared memory (its __shared__ array, as translate.cmake rewrites
// it) under the race check: no race, the CPU's bits.
TEST(SimtRaceCheck, DkStdTreeHasNoRace) {
  RaceCheck on;
  const dk_std::Plan p =
      dk_std::make_plan(2 * dk_std::make_plan(1, 8, 5).chunk_samples() + 3, 8, 5);
  std::vector<Moments> cpu(p.chunks()), gpu(p.chunks());
  dk_std::chunk_moments_cpu(p, 0, p.chunks(), cpu.data());
  dk_std::chunk_moments_cuda(p, 0, p.chunks(), gpu.data());
  for (std::uint64_t i = 0; i < p.chunks(); ++i)
    EXPECT_EQ(std::memcmp(&cpu[i], &gpu[i], sizeof(Moments)), 0) << "chunk " << i;
}

// The head's warp kernel under the race check (each lane switching at every shared access):
// every phase's writes end in a __syncwarp() before another lane reads them, on cases with a
// causal mask, heads, W_O, Adam, both schedules, many inputs and frozen maps (uniform, given); and
// the same bits.
TEST(SimtRaceCheck, HeadWarpKernelHasNoRace) {
  RaceCheck on;
  for (const int i : {0, 3, 6, 9, 11, 13}) {
    const gpu_cases::HeadCase& c = gpu_cases::head_cases()[i];
    SCOPED_TRACE(c.name);
    std::mt19937_64 rng(6);
    std::normal_distribution<double> nd;
    const std::vector<std::uint64_t> seeds = {5, 6};
    gpu_cases::HeadTwins r;
    EXPECT_NO_THROW(r = gpu_cases::head_twins(
                        c, seeds, 2, [&] { return nd(rng); }, head::GpuKernel::warp, true));
    EXPECT_EQ(r.outside, 0u);
  }
}

// A __syncwarp() of the whole warp orders its lanes' shared accesses for the race check; a
// shuffle does not, nor does the warp sync of another warp.
void warp_neighbour_kernel(int* out, int sync) {
  __shared__ simt::SharedArray<int, 64> s;
  const unsigned t = threadIdx.x;
  s[t] = static_cast<int>(t);
  if (sync == 1) __syncwarp();
  if (sync == 2) (void)__shfl_sync(0xffffffffu, 0, 0);
  // sync 0, 1, 2: the next lane of the same warp; 3: the same lane of the other warp, after a
  // __syncwarp().
  if (sync == 3) __syncwarp();
  out[t] = s[sync == 3 ? (t + 32) % 64 : (t / 32) * 32 + (t + 1) % 32];
}

TEST(SimtRaceCheck, AWholeWarpSyncOrdersItsLanesOnly) {
  DeviceBuffer<int> d(64);
  RaceCheck on;
  for (const int sync : {0, 1, 2, 3}) {
    warp_neighbour_kernel % simt::launch_config("warp_neighbour_kernel", 1, 64) %
        simt::kernel_args(d.data(), sync);
    EXPECT_EQ(finish(), sync == 1 ? cudaSuccess : cudaErrorLaunchFailure) << "sync " << sync;
  }
}

// Dynamic shared memory (`extern __shared__ double w[]`): the launch's bytes, and no more.
void reverse_kernel(const double* in, double* out, int n) {
  simt::DynamicShared<double> w;
  const int t = static_cast<int>(threadIdx.x);
  w[t] = in[t];
  __syncthreads();
  out[t] = w[n - 1 - t];
}

TEST(SimtRaceCheck, DynamicSharedMemoryHasTheLaunchsBytes) {
  RaceCheck on;
  std::vector<double> in(48);
  for (int i = 0; i < 48; ++i) in[i] = i;
  auto d_in = DeviceBuffer<double>::from_host(in.data(), in.size());
  DeviceBuffer<double> d_out(48);
  reverse_kernel % simt::launch_config("reverse_kernel", 1, 48, 48 * sizeof(double)) %
      simt::kernel_args(d_in.data(), d_out.data(), 48);
  ASSERT_EQ(finish(), cudaSuccess);
  std::vector<double> out(48);
  d_out.download(out.data());
  for (int i = 0; i < 48; ++i) EXPECT_EQ(out[i], 47 - i);
  // One element short: the last thread's store is outside the launch's shared memory.
  reverse_kernel % simt::launch_config("reverse_kernel", 1, 48, 47 * sizeof(double)) %
      simt::kernel_args(d_in.data(), d_out.data(), 48);
  EXPECT_EQ(finish(), cudaErrorLaunchFailure);
  // More than 48 KiB needs the kernel's opt-in, up to 227 KiB.
  reverse_kernel % simt::launch_config("reverse_kernel", 1, 48, 64 * 1024) %
      simt::kernel_args(d_in.data(), d_out.data(), 48);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  ASSERT_EQ(
      cudaFuncSetAttribute(reverse_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024),
      cudaSuccess);
  reverse_kernel % simt::launch_config("reverse_kernel", 1, 48, 64 * 1024) %
      simt::kernel_args(d_in.data(), d_out.data(), 48);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(finish(), cudaSuccess);
}
}  // namespace
}  // namespace attn
