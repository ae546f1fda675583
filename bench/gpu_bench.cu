// gpu_bench.cu: times the CUDA kernels with CUDA events, after a warm-up, as the median of
// several repeats, and sets each figure against this device's measured peaks.
//   gpu_bench [--quick] [--json FILE]
// Figures: dk-std sampler normals/s at d_k 512 (each repeat >= 1 s); training sweep
// model-steps/s at 10^6 seeds (analytic and numeric); batched attention forward GFLOP/s and
// GB/s at a few shapes; peaks: cuBLAS DGEMM/SGEMM FLOP/s and device-to-device copy GB/s.
// Without a GPU it says so and exits 3.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attention.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"
#include "dkstd.hpp"
#include "tiny_model.hpp"

namespace attn {
namespace {

// Median seconds of `repeats` timed calls after one warm-up, timed with CUDA events.
double median_seconds(const std::function<void()>& f, int repeats) {
  f();
  ATTN_CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  ATTN_CUDA_CHECK(cudaEventCreate(&a));
  ATTN_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    ATTN_CUDA_CHECK(cudaEventRecord(a));
    f();
    ATTN_CUDA_CHECK(cudaEventRecord(b));
    ATTN_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    ATTN_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms / 1e3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <class T>
double gemm_peak(int n) {
  T *a, *b, *c;
  ATTN_CUDA_CHECK(cudaMalloc(&a, sizeof(T) * n * n));
  ATTN_CUDA_CHECK(cudaMalloc(&b, sizeof(T) * n * n));
  ATTN_CUDA_CHECK(cudaMalloc(&c, sizeof(T) * n * n));
  ATTN_CUDA_CHECK(cudaMemset(a, 0, sizeof(T) * n * n));
  ATTN_CUDA_CHECK(cudaMemset(b, 0, sizeof(T) * n * n));
  const T one = 1, zero = 0;
  const double s = median_seconds(
      [&] {
        if constexpr (sizeof(T) == 8)
          ATTN_CUDA_CHECK(cuda_detail::cublas().dgemm(cuda_detail::cublas_handle(), CUBLAS_OP_N,
                                                      CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero,
                                                      c, n));
        else
          ATTN_CUDA_CHECK(cuda_detail::cublas().sgemm(cuda_detail::cublas_handle(), CUBLAS_OP_N,
                                                      CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero,
                                                      c, n));
      },
      5);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 2.0 * n * double(n) * n / s;
}

double copy_peak_bytes_per_s(std::size_t bytes) {
  void *a, *b;
  ATTN_CUDA_CHECK(cudaMalloc(&a, bytes));
  ATTN_CUDA_CHECK(cudaMalloc(&b, bytes));
  const double s = median_seconds(
      [&] { ATTN_CUDA_CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice)); }, 10);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes / s;  // read + write
}

template <class T>
nlohmann::json attention_case(int batch, int n, int d, int repeats) {
  const AttentionShape sh{batch, n, d, d, d, true, false, 0};
  const std::size_t rows = std::size_t(batch) * n;
  T *x, *w, *q, *k, *v, *s, *p, *o;
  for (T** ptr : {&x, &q, &k, &v, &o}) ATTN_CUDA_CHECK(cudaMalloc(ptr, sizeof(T) * rows * d));
  ATTN_CUDA_CHECK(cudaMalloc(&w, sizeof(T) * d * d));
  ATTN_CUDA_CHECK(cudaMalloc(&s, sizeof(T) * rows * n));
  ATTN_CUDA_CHECK(cudaMalloc(&p, sizeof(T) * rows * n));
  ATTN_CUDA_CHECK(cudaMemset(x, 0, sizeof(T) * rows * d));
  ATTN_CUDA_CHECK(cudaMemset(w, 0, sizeof(T) * d * d));
  const AttentionProblem<T> prob{sh, x, w, w, w, q, k, v, s, p, o};
  const double sec = median_seconds([&] { attention_forward_cuda(prob); }, repeats);
  for (T* ptr : {x, w, q, k, v, s, p, o}) cudaFree(ptr);
  // 3 projections + scores + weighted sum (2 flops per multiply-add); bytes: every array
  // written once and read once by the next step (a lower bound on traffic).
  const double flops = 2.0 * rows * d * d * 3 + 2.0 * rows * n * d * 2;
  const double bytes = sizeof(T) * (rows * d * (1 + 3 * 2 + 1) + 3.0 * rows * n + 3.0 * d * d);
  return {{"batch", batch},
          {"n", n},
          {"d", d},
          {"dtype", sizeof(T) == 8 ? "f64" : "f32"},
          {"seconds", sec},
          {"gflop_per_s", flops / sec / 1e9},
          {"gb_per_s", bytes / sec / 1e9}};
}

}  // namespace
}  // namespace attn

int main(int argc, char** argv) {
  using namespace attn;
  bool quick = false;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
      json_path = argv[++i];
  }
  const GpuInfo g = query_gpu();
  if (!g.present) {
    std::fprintf(stderr, "gpu_bench: no GPU (%s)\n", g.why_not.c_str());
    return 3;
  }
  nlohmann::json r;
  try {
    r["device"] = {{"name", g.name},
                   {"compute_capability", g.compute_capability},
                   {"driver", g.driver},
                   {"multiprocessors", g.multiprocessors}};
    r["peak"] = {{"dgemm_flop_per_s", gemm_peak<double>(8192)},
                 {"sgemm_flop_per_s", gemm_peak<float>(8192)},
                 {"copy_bytes_per_s", copy_peak_bytes_per_s(std::size_t(1) << 31)}};
    std::printf("peaks: DGEMM %.1f TFLOP/s, SGEMM %.1f TFLOP/s, copy %.0f GB/s\n",
                r["peak"]["dgemm_flop_per_s"].get<double>() / 1e12,
                r["peak"]["sgemm_flop_per_s"].get<double>() / 1e12,
                r["peak"]["copy_bytes_per_s"].get<double>() / 1e9);

    // dk-std at d_k 512: grow N until one run takes >= 1 s, then the median of 3.
    std::uint64_t n = 1u << 20;
    dkstd::Plan plan;
    std::vector<Moments> parts;
    auto run_dk = [&] { dkstd::chunk_moments_cuda(plan, 0, plan.chunks(), parts.data()); };
    for (;;) {
      plan = dkstd::make_plan(n, 512, 0);
      parts.resize(plan.chunks());
      if (median_seconds(run_dk, 1) >= 1.0 || quick) break;
      n *= 4;
    }
    const double dk_s = median_seconds(run_dk, quick ? 1 : 3);
    const double normals = 2.0 * 512 * plan.samples;
    r["dkstd"] = {{"d_k", 512},
                  {"samples", plan.samples},
                  {"seconds", dk_s},
                  {"normals_per_s", normals / dk_s}};
    std::printf("dk-std d_k 512: %.3e normals/s (%llu samples, %.2f s)\n", normals / dk_s,
                static_cast<unsigned long long>(plan.samples), dk_s);

    // Training sweep, 10^6 seeds, 3000 steps.
    const std::int64_t seeds_n = quick ? 100000 : 1000000;
    std::vector<std::uint64_t> seeds(seeds_n);
    for (std::int64_t i = 0; i < seeds_n; ++i) seeds[i] = i;
    std::vector<tiny::TrainResult> out(seeds_n);
    for (tiny::Grad grad : {tiny::Grad::analytic, tiny::Grad::numeric}) {
      tiny::TrainOptions o;
      o.grad = grad;
      const double s = median_seconds(
          [&] {
            tiny::train_seeds_cuda<double>(tiny::Config::all_random, seeds.data(), seeds_n, o,
                                           out.data());
          },
          quick ? 1 : 3);
      const char* name = grad == tiny::Grad::analytic ? "analytic" : "numeric";
      r["training"][name] = {{"seeds", seeds_n},
                             {"steps", o.steps},
                             {"seconds", s},
                             {"model_steps_per_s", seeds_n * double(o.steps) / s}};
      std::printf("training %s: %.3e model-steps/s (%lld seeds, %.2f s)\n", name,
                  seeds_n * double(o.steps) / s, static_cast<long long>(seeds_n), s);
    }

    // Batched attention forward.
    r["attention"] = nlohmann::json::array();
    for (auto [b, n_, d] :
         {std::tuple{16384, 16, 64}, {4096, 64, 64}, {1024, 128, 128}, {64, 512, 64}}) {
      for (auto c : {attention_case<float>(b, n_, d, quick ? 3 : 20),
                     attention_case<double>(b, n_, d, quick ? 3 : 20)}) {
        const double peak = c["dtype"] == "f64" ? r["peak"]["dgemm_flop_per_s"].get<double>()
                                                : r["peak"]["sgemm_flop_per_s"].get<double>();
        c["fraction_of_gemm_peak"] = c["gflop_per_s"].get<double>() * 1e9 / peak;
        c["fraction_of_copy_peak"] =
            c["gb_per_s"].get<double>() * 1e9 / r["peak"]["copy_bytes_per_s"].get<double>();
        std::printf(
            "attention %s B=%d n=%d d=%d: %.1f GFLOP/s (%.1f%% of GEMM peak), %.0f GB/s (%.1f%% of "
            "copy)\n",
            c["dtype"].get<std::string>().c_str(), b, n_, d, c["gflop_per_s"].get<double>(),
            100 * c["fraction_of_gemm_peak"].get<double>(), c["gb_per_s"].get<double>(),
            100 * c["fraction_of_copy_peak"].get<double>());
        r["attention"].push_back(c);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_bench: error: %s\n", e.what());
    return 1;
  }
  if (!json_path.empty()) {
    std::FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) return 1;
    const std::string s = r.dump(2) + "\n";
    std::fwrite(s.data(), 1, s.size(), f);
    std::fclose(f);
  }
  return 0;
}
