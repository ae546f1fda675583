// gpu_bench.cu: times the device-resident entry points of every kernel family on the cases of
// tests/gpu_cases.hpp, with CUDA events, and sets each figure against this device's measured
// peaks.
//   gpu_bench [--quick] [--gpu N] [--json FILE]
// Method: inputs are made and copied to the device once, outside the timing (that copy is timed
// on its own and reported as host-to-device cost); each case runs once to warm up, then
// `repeats` times, each timed with a pair of CUDA events around the device-resident call alone
// (no allocation, no copy inside); the median is reported. Before each repeat whose working set
// fits in L2 the L2 is flushed (a memset of twice its size), so the figure is not a warm-cache
// one. Figures: dk-std normals/s, training model-steps/s, attention GFLOP/s and GB/s, both
// row-softmax versions' GB/s, saturation rows/s; peaks: cuBLAS DGEMM/SGEMM FLOP/s, device copy
// GB/s, host-to-device GB/s. Without a usable GPU it says why and exits 3.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "attention.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"
#include "device_buffer.hpp"
#include "gpu_cases.hpp"
#include "host/json.hpp"
#include "kernels/dk_std.hpp"
#include "saturation.hpp"
#include "tiny_model.hpp"

namespace attn {
namespace {

using gpu_cases::DType;

class Timer {
 public:
  explicit Timer(std::size_t l2_bytes) : flush_(2 * l2_bytes), l2_(l2_bytes) {
    ATTN_CUDA_CHECK(cudaEventCreate(&a_));
    ATTN_CUDA_CHECK(cudaEventCreate(&b_));
  }
  ~Timer() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  // Median seconds of `repeats` timed calls after one warm-up. working_set: bytes the call
  // touches; when it fits in L2, L2 is flushed before each repeat.
  double median_seconds(const std::function<void()>& f, int repeats, double working_set) {
    f();
    ATTN_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<double> t;
    for (int i = 0; i < repeats; ++i) {
      if (working_set <= double(l2_) && flush_.size() > 0)
        ATTN_CUDA_CHECK(cudaMemset(flush_.data(), i & 0xff, flush_.bytes()));
      ATTN_CUDA_CHECK(cudaEventRecord(a_));
      f();
      ATTN_CUDA_CHECK(cudaEventRecord(b_));
      ATTN_CUDA_CHECK(cudaEventSynchronize(b_));
      float ms = 0;
      ATTN_CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
      t.push_back(ms / 1e3);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }

 private:
  DeviceBuffer<unsigned char> flush_;
  std::size_t l2_;
  cudaEvent_t a_, b_;
};

template <class T>
double gemm_peak(Timer& timer, int n) {
  DeviceBuffer<T> a(std::size_t(n) * n), b(a.size()), c(a.size());
  ATTN_CUDA_CHECK(cudaMemset(a.data(), 0, a.bytes()));
  ATTN_CUDA_CHECK(cudaMemset(b.data(), 0, b.bytes()));
  const T one = 1, zero = 0;
  const double s = timer.median_seconds(
      [&] {
        if constexpr (sizeof(T) == 8)
          ATTN_CUDA_CHECK(cuda_detail::cublas().dgemm(cuda_detail::cublas_handle(), CUBLAS_OP_N,
                                                      CUBLAS_OP_N, n, n, n, &one, a.data(), n,
                                                      b.data(), n, &zero, c.data(), n));
        else
          ATTN_CUDA_CHECK(cuda_detail::cublas().sgemm(cuda_detail::cublas_handle(), CUBLAS_OP_N,
                                                      CUBLAS_OP_N, n, n, n, &one, a.data(), n,
                                                      b.data(), n, &zero, c.data(), n));
      },
      5, 3.0 * a.bytes());
  return 2.0 * n * double(n) * n / s;
}

double copy_peak_bytes_per_s(Timer& timer, std::size_t bytes) {
  DeviceBuffer<unsigned char> a(bytes), b(bytes);
  const double s = timer.median_seconds(
      [&] { ATTN_CUDA_CHECK(cudaMemcpy(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice)); }, 10,
      2.0 * bytes);
  return 2.0 * bytes / s;  // read + write
}

// Host-to-device: seconds to copy `bytes` from pageable host memory (what the host wrappers
// do), the median of 3.
double h2d_seconds(std::size_t bytes) {
  std::vector<unsigned char> host(bytes, 1);
  DeviceBuffer<unsigned char> d(bytes);
  std::vector<double> t;
  for (int i = 0; i < 3; ++i) {
    ATTN_CUDA_CHECK(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    d.upload(host.data());
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[1];
}

template <class T>
nlohmann::json attention_case(Timer& timer, const gpu_cases::AttentionCase& c, DType t, int repeats,
                              std::mt19937_64& rng) {
  const AttentionShape& sh = c.shape;
  const std::size_t rows = std::size_t(sh.batch) * sh.n, wc = sh.shared_weights ? 1 : sh.batch;
  std::normal_distribution<double> nd;
  auto random = [&](std::size_t n, double sd) {
    std::vector<T> v(n);
    for (T& x : v) x = T(nd(rng) * sd);
    return v;
  };
  const double w_sd = 1 / std::sqrt(double(sh.d_model));
  const auto hx = random(rows * sh.d_model, 1), hwq = random(wc * sh.d_model * sh.d_k, w_sd),
             hwk = random(wc * sh.d_model * sh.d_k, w_sd),
             hwv = random(wc * sh.d_model * sh.d_v, w_sd);
  const auto t0 = std::chrono::steady_clock::now();
  const auto x = DeviceBuffer<T>::from_host(hx.data(), hx.size());
  const auto wq = DeviceBuffer<T>::from_host(hwq.data(), hwq.size());
  const auto wk = DeviceBuffer<T>::from_host(hwk.data(), hwk.size());
  const auto wv = DeviceBuffer<T>::from_host(hwv.data(), hwv.size());
  const double upload_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  DeviceBuffer<T> q(rows * sh.d_k), k(rows * sh.d_k), v(rows * sh.d_v), s(rows * sh.n),
      p(rows * sh.n), o(rows * sh.d_v);
  const AttentionProblem<T> prob{sh,       x.data(), wq.data(), wk.data(), wv.data(), q.data(),
                                 k.data(), v.data(), s.data(),  p.data(),  o.data()};
  const double flops = gpu_cases::attention_flops(sh), bytes = gpu_cases::attention_bytes(sh, t);
  const double sec = timer.median_seconds([&] { attention_forward_cuda(prob); }, repeats, bytes);
  return {{"case", c.name},
          {"batch", sh.batch},
          {"n", sh.n},
          {"d_model", sh.d_model},
          {"d_k", sh.d_k},
          {"d_v", sh.d_v},
          {"d", sh.d_k},
          {"dtype", gpu_cases::name(t)},
          {"seconds", sec},
          {"upload_seconds", upload_s},
          {"gflop_per_s", flops / sec / 1e9},
          {"gb_per_s", bytes / sec / 1e9}};
}

template <class T>
nlohmann::json softmax_case(Timer& timer, const gpu_cases::SoftmaxCase& c, DType t, int repeats,
                            std::mt19937_64& rng) {
  std::normal_distribution<double> nd(0, 2);
  std::vector<T> hs(std::size_t(c.rows) * c.n);
  for (T& x : hs) x = T(nd(rng));
  const auto s = DeviceBuffer<T>::from_host(hs.data(), hs.size());
  DeviceBuffer<T> w(hs.size());
  nlohmann::json j = {
      {"case", c.name}, {"rows", c.rows}, {"n", c.n}, {"dtype", gpu_cases::name(t)}};
  const double bytes = gpu_cases::softmax_bytes(c, t);
  for (const auto& version : {std::pair{SoftmaxKernel::thread_per_row, "v1"},
                              std::pair{SoftmaxKernel::warp_per_row, "v2"}}) {
    const SoftmaxKernel v = version.first;
    const char* key = version.second;
    const double sec = timer.median_seconds(
        [&] { softmax_rows_cuda<T>(s.data(), w.data(), c.rows, c.n, T(1), c.causal, v); }, repeats,
        bytes);
    j[key] = {{"seconds", sec}, {"gb_per_s", bytes / sec / 1e9}};
  }
  return j;
}

}  // namespace
}  // namespace attn

int main(int argc, char** argv) {
  using namespace attn;
  bool quick = false;
  int gpu = -1;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      json_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--gpu") && i + 1 < argc) {
      char* end = nullptr;
      const long n = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || n < 0 || n > 1023) {
        std::fprintf(stderr, "gpu_bench: --gpu takes a device ordinal, got %s\n", argv[i]);
        return 2;
      }
      gpu = static_cast<int>(n);
    } else {
      std::fprintf(stderr,
                   "gpu_bench: unknown argument %s (usage: gpu_bench [--quick] [--gpu N] "
                   "[--json FILE])\n",
                   argv[i]);
      return 2;
    }
  }
  const GpuInfo g = select_gpu(gpu);
  if (!g.present) {
    std::fprintf(stderr, "gpu_bench: no usable GPU (%s)\n", g.why_not.c_str());
    return 3;
  }
  nlohmann::json r;
  try {
    cudaDeviceProp prop{};
    ATTN_CUDA_CHECK(cudaGetDeviceProperties(&prop, g.index));
    r["device"] = {{"name", g.name},
                   {"index", g.index},
                   {"gpus_seen", g.count},
                   {"compute_capability", g.compute_capability},
                   {"driver", g.driver},
                   {"multiprocessors", g.multiprocessors},
                   {"l2_bytes", prop.l2CacheSize}};
    std::printf("GPU %d of %d: %s (cc %s, %d SMs, L2 %d MB)\n", g.index, g.count, g.name.c_str(),
                g.compute_capability.c_str(), g.multiprocessors, prop.l2CacheSize >> 20);
    Timer timer(static_cast<std::size_t>(prop.l2CacheSize));
    const std::size_t h2d_bytes = std::size_t(1) << 28;
    const double h2d = h2d_seconds(h2d_bytes);
    r["peak"] = {{"dgemm_flop_per_s", gemm_peak<double>(timer, 8192)},
                 {"sgemm_flop_per_s", gemm_peak<float>(timer, 8192)},
                 {"copy_bytes_per_s", copy_peak_bytes_per_s(timer, std::size_t(1) << 31)},
                 {"h2d_bytes_per_s", h2d_bytes / h2d}};
    const auto& peak = r["peak"];
    std::printf(
        "peaks: DGEMM %.1f TFLOP/s, SGEMM %.1f TFLOP/s, device copy %.0f GB/s, "
        "host-to-device %.1f GB/s\n",
        peak["dgemm_flop_per_s"].get<double>() / 1e12,
        peak["sgemm_flop_per_s"].get<double>() / 1e12, peak["copy_bytes_per_s"].get<double>() / 1e9,
        peak["h2d_bytes_per_s"].get<double>() / 1e9);

    // dk-std: the case list's d_k, N grown until one call takes >= 0.5 s (0.1 s with --quick):
    // far above launch overhead, and three d_k in about 20 s.
    r["dk_std"] = nlohmann::json::array();
    for (std::uint32_t d_k : {64u, 512u, 4096u}) {
      std::uint64_t n = 1u << 20;
      dk_std::Plan plan;
      DeviceBuffer<Moments> parts;
      auto run = [&] { dk_std::chunk_moments_cuda_device(plan, 0, plan.chunks(), parts.data()); };
      for (;;) {
        plan = dk_std::make_plan(n, d_k, 0);
        parts = DeviceBuffer<Moments>(plan.chunks());
        if (timer.median_seconds(run, 1, 1e30) >= (quick ? 0.1 : 0.5) || n >= (1ull << 40)) break;
        n *= 4;
      }
      const double sec = timer.median_seconds(run, quick ? 1 : 3, 1e30);
      const double normals = gpu_cases::dk_std_normals(d_k, plan.samples);
      r["dk_std"].push_back({{"d_k", d_k},
                             {"samples", plan.samples},
                             {"seconds", sec},
                             {"normals_per_s", normals / sec}});
      std::printf("dk-std d_k %u: %.3e normals/s (%llu samples, %.2f s)\n", d_k, normals / sec,
                  static_cast<unsigned long long>(plan.samples), sec);
    }

    // Training: each case's configuration at 10^6 seeds (10^5 with --quick).
    const std::int64_t seeds_n = quick ? 100000 : 1000000;
    std::vector<std::uint64_t> hseeds(seeds_n);
    for (std::int64_t i = 0; i < seeds_n; ++i) hseeds[i] = i;
    const auto t0 = std::chrono::steady_clock::now();
    const auto seeds = DeviceBuffer<std::uint64_t>::from_host(hseeds.data(), hseeds.size());
    const double seeds_upload =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    DeviceBuffer<tiny::TrainResult> out(seeds_n);
    r["training"] = nlohmann::json::array();
    for (const auto& c : gpu_cases::training_cases()) {
      tiny::TrainOptions o;
      o.grad = c.grad;
      o.steps = c.steps;
      const double sec = timer.median_seconds(
          [&] {
            if (c.dtype == DType::f64)
              tiny::train_seeds_cuda_device<double>(c.config, seeds.data(), seeds_n, o, out.data());
            else
              tiny::train_seeds_cuda_device<float>(c.config, seeds.data(), seeds_n, o, out.data());
          },
          quick ? 1 : 3, 1e30);
      const double rate = seeds_n * double(o.steps) / sec;
      r["training"].push_back({{"case", c.name},
                               {"grad", c.grad == tiny::Grad::analytic ? "analytic" : "numeric"},
                               {"dtype", gpu_cases::name(c.dtype)},
                               {"seeds", seeds_n},
                               {"steps", o.steps},
                               {"seconds", sec},
                               {"upload_seconds", seeds_upload},
                               {"model_steps_per_s", rate}});
      std::printf("training %s: %.3e model-steps/s (%lld seeds x %d steps, %.2f s)\n", c.name, rate,
                  static_cast<long long>(seeds_n), o.steps, sec);
    }

    // Batched attention forward, every case, f32 and f64.
    std::mt19937_64 rng(1);
    r["attention"] = nlohmann::json::array();
    for (const auto& c : gpu_cases::attention_cases()) {
      for (auto j : {attention_case<float>(timer, c, DType::f32, quick ? 3 : 20, rng),
                     attention_case<double>(timer, c, DType::f64, quick ? 3 : 20, rng)}) {
        const double peak_flops = j["dtype"] == "f64" ? peak["dgemm_flop_per_s"].get<double>()
                                                      : peak["sgemm_flop_per_s"].get<double>();
        j["fraction_of_gemm_peak"] = j["gflop_per_s"].get<double>() * 1e9 / peak_flops;
        j["fraction_of_copy_peak"] =
            j["gb_per_s"].get<double>() * 1e9 / peak["copy_bytes_per_s"].get<double>();
        std::printf(
            "attention %-16s %s: %8.1f GFLOP/s (%5.1f%% of GEMM peak), %6.0f GB/s "
            "(%5.1f%% of copy); upload %.2f ms\n",
            c.name, j["dtype"].get<std::string>().c_str(), j["gflop_per_s"].get<double>(),
            100 * j["fraction_of_gemm_peak"].get<double>(), j["gb_per_s"].get<double>(),
            100 * j["fraction_of_copy_peak"].get<double>(),
            1e3 * j["upload_seconds"].get<double>());
        r["attention"].push_back(j);
      }
    }

    // Row softmax, v1 and v2 side by side.
    r["softmax"] = nlohmann::json::array();
    for (const auto& c : gpu_cases::softmax_cases()) {
      for (auto j : {softmax_case<float>(timer, c, DType::f32, quick ? 3 : 20, rng),
                     softmax_case<double>(timer, c, DType::f64, quick ? 3 : 20, rng)}) {
        std::printf("softmax %-16s %s: v1 %6.0f GB/s, v2 %6.0f GB/s\n", c.name,
                    j["dtype"].get<std::string>().c_str(), j["v1"]["gb_per_s"].get<double>(),
                    j["v2"]["gb_per_s"].get<double>());
        r["softmax"].push_back(j);
      }
    }

    // Softmax saturation: the whole device-resident pipeline per call.
    r["saturation"] = nlohmann::json::array();
    for (const auto& c : gpu_cases::saturation_cases()) {
      const saturation::Params p{0, c.d_k, c.keys};
      const std::size_t rows = c.rows, n = c.keys, d = c.d_k;
      DeviceBuffer<double> q(rows * d), k(rows * n * d), s(rows * n), w(rows * n),
          stats(rows * saturation::kStats);
      const double sec = timer.median_seconds(
          [&] {
            saturation::row_stats_cuda_device(
                p, 0, c.rows, {q.data(), k.data(), s.data(), w.data()}, stats.data());
          },
          quick ? 3 : 10, gpu_cases::saturation_bytes(c));
      r["saturation"].push_back({{"d_k", c.d_k},
                                 {"keys", c.keys},
                                 {"rows", c.rows},
                                 {"seconds", sec},
                                 {"rows_per_s", c.rows / sec},
                                 {"gb_per_s", gpu_cases::saturation_bytes(c) / sec / 1e9}});
      std::printf("saturation d_k %u keys %d rows %lld: %.3e rows/s (%.2f ms)\n", c.d_k, c.keys,
                  static_cast<long long>(c.rows), c.rows / sec, 1e3 * sec);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_bench: error: %s\n", e.what());
    return 1;
  }
  if (!json_path.empty()) {
    std::FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "gpu_bench: cannot write %s\n", json_path.c_str());
      return 1;
    }
    const std::string s = r.dump(2) + "\n";
    std::fwrite(s.data(), 1, s.size(), f);
    std::fclose(f);
  }
  return 0;
}
