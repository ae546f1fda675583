// test_simt.cpp: the SIMT emulation of the CUDA path (kernels/simt/, label `simt`): its own
// semantics (barriers, warp shuffles, errors a device would raise, cuBLAS's column-major
// conventions) and what only a GPU would otherwise show of attnlab's launches: their geometry
// against the device's limits, recorded by the emulated runtime.
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
#include <vector>

#include "attention.hpp"
#include "cublas_loader.hpp"
#include "device_buffer.hpp"
#include "dkstd.hpp"
#include "dkstd_numpy.hpp"
#include "head.hpp"
#include "moments.hpp"
#include "numpy_random.hpp"
#include "simt_memory.hpp"
#include "softmax.hpp"
#include "tiny_model.hpp"

namespace attn {
namespace {

// ---- The emulation's semantics ---------------------------------------------------------------

// A block's tree sum in shared memory, with a barrier after every level: needs every thread's
// store before any thread reads it, whatever order the fibers run in.
void tree_sum_kernel(const int* in, int* out) {
  __shared__ int s[256];
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

TEST(SimtRuntime, AWarpSyncWithoutItsLanesIsALaunchError) {
  DeviceBuffer<int> d(64);
  early_exit_kernel % simt::launch_config("early_exit_kernel", 1, 32) % simt::kernel_args(d.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  deadlock_kernel % simt::launch_config("deadlock_kernel", 1, 64) % simt::kernel_args(d.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  // A warp-sized kernel launched with 48 threads: lanes 48..63 of the second warp do not exist.
  xor_kernel % simt::launch_config("xor_kernel", 1, 48) % simt::kernel_args(d.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  // The emulation goes on after an error, as a fresh context would.
  xor_kernel % simt::launch_config("xor_kernel", 1, 64) % simt::kernel_args(d.data());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
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
    const dkstd::Plan p =
        dkstd::make_plan(3 * dkstd::make_plan(1, d_k, 5).chunk_samples() + 11, d_k, 5);
    std::vector<Moments> cpu(p.chunks()), gpu(p.chunks());
    dkstd::chunk_moments_cpu(p, 0, p.chunks(), cpu.data());
    dkstd::chunk_moments_cuda(p, 0, p.chunks(), gpu.data());
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
constexpr std::uint64_t kResident =
    std::uint64_t{simt::kMultiprocessors} * simt::kThreadsPerMultiprocessor;

// Dry runs: launches recorded and checked, nothing executed, no device memory touched.
struct DryRun {
  DryRun() {
    simt::clear_launches();
    simt::set_dry_run(true);
  }
  ~DryRun() { simt::set_dry_run(false); }
};

TEST(SimtGeometry, DkStdWavesFillTheDeviceButTheLast) {
  DryRun dry;
  const dkstd::Plan p = dkstd::make_plan(std::uint64_t{1} << 40, 64, 1);
  const std::uint64_t count = 2 * dkstd::kChunksPerLaunch + 77;
  dkstd::chunk_moments_cuda_device(p, 0, count, nullptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const auto l = launches_of("dkstd_chunks_kernel");
  ASSERT_EQ(l.size(), 3u);
  std::uint64_t blocks = 0;
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (i + 1 < l.size()) {
      EXPECT_GE(threads(l[i]), kResident) << "launch " << i;
    }
    blocks += l[i].grid.x;
  }
  EXPECT_EQ(blocks, count);
}

TEST(SimtGeometry, TrainingLaunchCoversEverySeedAndFillsTheDevice) {
  DryRun dry;
  const std::int64_t n = (std::int64_t{1} << 20) + 3;  // the backend's seeds per call, and a few
  tiny::train_seeds_cuda_device<double>(tiny::Config::all_random, nullptr, n, tiny::TrainOptions{},
                                        nullptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const auto l = simt::launches();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_GE(threads(l[0]), static_cast<std::uint64_t>(n));
  EXPECT_LT(threads(l[0]) - n, l[0].block.x);  // no block beyond the last seed's
  EXPECT_GE(threads(l[0]), kResident);
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
  }
}

// numpy's stream on the device: a wave of device_split's size is one launch of a thread per
// piece, and fills the device; the pieces' buffers are allocated once, not once per wave.
TEST(SimtGeometry, NumpyDecoderWavesFillTheDeviceAndAllocateOnce) {
  const dkstd::StreamSplit split =
      dkstd::device_split([](const numpy_rng::Pcg64& g0, dkstd::Piece* p, std::size_t n, int h,
                             double* v) { dkstd::decode_pieces_cuda(g0, p, n, h, v); });
  // A wave's q normals take at least as many words: at least this many pieces, one thread each.
  EXPECT_GE(split.wave_normals / split.piece_words, kResident * 95 / 100);

  simt::clear_launches();
  simt::clear_stats();
  numpy_rng::Pcg64 a(11), b(11);
  std::vector<double> want(3000);
  for (double& x : want) x = numpy_rng::standard_normal(a);
  for (int wave = 0; wave < 3; ++wave) {
    const std::vector<double> got = dkstd::parallel_normals(b, 1000, split);
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
    dkstd::StreamSplit gpu =
        dkstd::device_split([](const numpy_rng::Pcg64& g0, dkstd::Piece* p, std::size_t n, int h,
                               double* v) { dkstd::decode_pieces_cuda_start(g0, p, n, h, v); },
                            [] { dkstd::decode_pieces_cuda_wait(); }, dkstd::pinned_host_memory());
    gpu.wave_normals = keep_q ? kSamples * kDk : kWave;
    gpu.k_wave_normals = kWave;
    dkstd::StreamSplit cpu;
    cpu.threads = 2;
    cpu.wave_normals = gpu.wave_normals;
    cpu.k_wave_normals = kWave;

    simt::clear_launches();
    simt::clear_stats();
    dkstd::NumpyStream on_gpu(20240611, gpu), on_cpu(20240611, cpu);
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

// Registers a thread of each kernel uses on sm_90 (nvcc -Xptxas -v of the CUDA build): a block
// must fit the 64 Ki registers of one multiprocessor, or the launch fails on the device.
TEST(SimtGeometry, HeadBlocksFitTheirRegisters) {
  DryRun dry;
  std::vector<double> x(4, 0.0), y(4, 0.0);
  head::Model m;
  m.n = 2;
  m.d_model = m.d_k = m.d_v = 2;
  m.r0 = 1;
  m.steps = 3;
  m.x = x.data();
  m.y = y.data();
  head::train_seeds_cuda_device(m, nullptr, 100000, nullptr, nullptr, 0, 3);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const auto l = simt::launches();
  ASSERT_EQ(l.size(), 1u);
  constexpr int kHeadRegisters = 255;
  const int allocated = (kHeadRegisters + 7) / 8 * 8;  // allocated per thread in units of 8
  EXPECT_LE(allocated * static_cast<int>(l[0].block.x), simt::kRegistersPerBlock);
}

}  // namespace
}  // namespace attn
