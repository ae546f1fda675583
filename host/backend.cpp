// backend.cpp: see backend.hpp.
#include "host/backend.hpp"

#include <omp.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "cpu_threads.hpp"
#include "host/format.hpp"
#include "host/progress.hpp"
#include "lanes.hpp"
#include "quantiles.hpp"

namespace attn {

// Read once: the kernel formats /proc/cpuinfo anew on every read, and the provenance and the
// debug log (formatted even when off) both ask.
std::string cpu_model() {
  static const std::string model = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("model name", 0) == 0) {
        const auto colon = line.find(':');
        if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
      }
    }
    return std::string("unknown CPU");
  }();
  return model;
}

namespace {

// The CPU team bound one thread to a CPU (kernels/cpu_threads.hpp says why and when), unless
// the user binds threads (OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY). Not on the GPU
// backend: threads the CUDA runtime starts would inherit the main thread's binding.
void bind_cpu_team(int threads) {
  for (const char* v : {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"})
    if (std::getenv(v) != nullptr) return;
  const std::vector<int> allowed = allowed_cpus();
  if (!team_binds(threads, allowed.size())) return;
  start_team(threads);  // before the main thread is bound: the workers inherit its CPU mask
  set_thread_cpus(team_cpus(threads, allowed, sched_getcpu()));  // where main runs after it
  bind_this_thread();
}

std::vector<std::string> g_held_notices;  // Backend::select's, until announce_backend()

}  // namespace

void announce_backend() {
  for (const std::string& line : g_held_notices) spdlog::info("{}", line);
  g_held_notices.clear();
}

Backend Backend::select(const std::string& requested, int threads, int gpu, int local_rank) {
  Backend b;
  if (threads > 0) omp_set_num_threads(threads);
  b.threads_ = omp_get_max_threads();
  if (requested != "cpu") {
    b.gpu_ = select_gpu(gpu, local_rank);
    if (b.gpu_.present) {
      if (!b.gpu_.passed_over.empty())
        g_held_notices.push_back(
            fmt::format("passed over {}; using GPU {}", b.gpu_.passed_over, b.gpu_.index));
      b.kind_ = DeviceKind::cuda;
      return b;
    }
    if (requested == "cuda")
      throw std::runtime_error("--device cuda: no GPU answers (" + b.gpu_.why_not + ")");
    g_held_notices.push_back(
        fmt::format("no GPU ({}); running on the CPU with {}", b.gpu_.why_not,
                    human_count(static_cast<std::uint64_t>(b.threads_), "thread", "threads")));
  }
  bind_cpu_team(b.threads_);
  return b;
}

std::string Backend::device_description() const {
  if (kind_ == DeviceKind::cuda)
    return gpu_.name + " (GPU " + std::to_string(gpu_.index) + " of " + std::to_string(gpu_.count) +
           ", cc " + gpu_.compute_capability + ", driver " + gpu_.driver + ")";
  return cpu_model() + ", " +
         human_count(static_cast<std::uint64_t>(threads_), "thread", "threads");
}

namespace {

// Entries [b0, b1) of a problem, as a problem of their own.
template <class T>
AttentionProblem<T> entries(const AttentionProblem<T>& p, int b0, int b1) {
  const AttentionShape& s = p.shape;
  const std::size_t n = s.n, wq = s.shared_weights ? 0 : std::size_t(s.d_model) * s.d_k,
                    wv = s.shared_weights ? 0 : std::size_t(s.d_model) * s.d_v;
  AttentionProblem<T> e = p;
  e.shape.batch = b1 - b0;
  const std::size_t b = std::size_t(b0);
  e.x += b * n * s.d_model;
  e.w_q += b * wq;
  e.w_k += b * wq;
  e.w_v += b * wv;
  e.q += b * n * s.d_k;
  e.k += b * n * s.d_k;
  e.v += b * n * s.d_v;
  e.scores += b * n * n;
  e.weights += b * n * n;
  e.out += b * n * s.d_v;
  return e;
}

}  // namespace

template <class T>
void Backend::attention_forward(const AttentionProblem<T>& p, const Monitor& monitor) const {
  if (p.mask && kind_ == DeviceKind::cuda)
    throw std::invalid_argument("mask: the CUDA path takes no mask; use the CPU (--device cpu)");
  if (p.map && kind_ == DeviceKind::cuda)
    throw std::invalid_argument("map: the CUDA path takes no map; use the CPU (--device cpu)");
  p.shape.validate_one_head();
  ++calls_;
#if defined(ATTNLAB_WITH_CUDA)
  if (kind_ == DeviceKind::cuda) {
    const AttentionShape& s = p.shape;
    const int per = static_cast<int>(
        std::clamp(std::floor(kGpuAttentionPieceWork / attention_work(s)), 1.0, double(s.batch)));
    for (int b = 0; b < s.batch; b += per) {
      monitor.stop_point();
      attention_forward_cuda_host(entries(p, b, std::min(s.batch, b + per)));
    }
    return;
  }
#endif
  for (const AttentionPiece& piece : attention_pieces(p.shape, kAttentionPieceWork)) {
    monitor.stop_point();
    attention_forward_cpu(p, piece);
  }
}

template void Backend::attention_forward<float>(const AttentionProblem<float>&,
                                                const Monitor&) const;
template void Backend::attention_forward<double>(const AttentionProblem<double>&,
                                                 const Monitor&) const;

void Backend::dk_std_chunks(const dk_std::Plan& p, std::uint64_t first, std::uint64_t count,
                            Moments* out) const {
  ++calls_;
#if defined(ATTNLAB_WITH_CUDA)
  if (kind_ == DeviceKind::cuda) return dk_std::chunk_moments_cuda(p, first, count, out);
#endif
  dk_std::chunk_moments_cpu(p, first, count, out);
}

void Backend::numpy_pieces(const numpy_rng::Pcg64& g0, dk_std::Piece* pieces, std::size_t count,
                           int head, double* values) const {
  ++calls_;
#if defined(ATTNLAB_WITH_CUDA)
  if (kind_ == DeviceKind::cuda) return dk_std::decode_pieces_cuda(g0, pieces, count, head, values);
#endif
  dk_std::decode_pieces_cpu(g0, pieces, count, head, values, threads_);
}

dk_std::StreamSplit Backend::numpy_stream_split() const {
#if defined(ATTNLAB_WITH_CUDA)
  // The GPU's decoder queued (pieces and values in page-locked memory), waited for after the
  // host's dot products of the previous wave (kernels/numpy_random/numpy_decode.hpp).
  if (kind_ == DeviceKind::cuda)
    return dk_std::device_split(
        [this](const numpy_rng::Pcg64& g0, dk_std::Piece* p, std::size_t n, int head, double* v) {
          ++calls_;
          dk_std::decode_pieces_cuda_start(g0, p, n, head, v);
        },
        [] { dk_std::decode_pieces_cuda_wait(); }, dk_std::pinned_host_memory());
#endif
  dk_std::StreamSplit s;
  s.threads = threads_;
  return s;
}

void Backend::saturation_rows(const saturation::Params& p, std::uint64_t first, std::int64_t rows,
                              double* out) const {
  ++calls_;
#if defined(ATTNLAB_WITH_CUDA)
  if (kind_ == DeviceKind::cuda) return saturation::row_stats_cuda(p, first, rows, out);
#endif
  saturation::row_stats_cpu(p, first, rows, out);
}

void Backend::train_seeds(tiny::Config c, const std::uint64_t* seeds, std::int64_t n,
                          const tiny::TrainOptions& o, Precision precision,
                          tiny::TrainResult* out) const {
  ++calls_;
#if defined(ATTNLAB_WITH_CUDA)
  if (kind_ == DeviceKind::cuda) {
    if (precision == Precision::f32) return tiny::train_seeds_cuda<float>(c, seeds, n, o, out);
    return tiny::train_seeds_cuda<double>(c, seeds, n, o, out);
  }
#endif
  if (precision == Precision::f32) return tiny::train_seeds_cpu<float>(c, seeds, n, o, out);
  tiny::train_seeds_cpu<double>(c, seeds, n, o, out);
}

void Backend::train_runs(const tiny::Config* configs, const std::uint64_t* seeds, std::int64_t n,
                         const tiny::TrainOptions& o, Precision precision,
                         tiny::TrainResult* out) const {
  if (kind_ == DeviceKind::cpu) {
    ++calls_;
    if (precision == Precision::f32) return tiny::train_runs_cpu<float>(configs, seeds, n, o, out);
    return tiny::train_runs_cpu<double>(configs, seeds, n, o, out);
  }
  // The device: a launch per stretch of one config.
  tiny::for_each_config_stretch([configs](std::int64_t i) { return configs[i]; }, n,
                                [&](std::int64_t first, std::int64_t end) {
                                  train_seeds(configs[first], seeds + first, end - first, o,
                                              precision, out + first);
                                });
}

void Backend::train_heads(const head::Model& m, const std::uint64_t* seeds, std::int64_t count,
                          double* out, const Monitor& monitor) const {
  ++calls_;
#if defined(ATTNLAB_WITH_CUDA)
  if (kind_ == DeviceKind::cuda)
    return head::train_seeds_cuda(
        m, seeds, count, out,
        head_sizing::gpu_steps_per_slice(m, std::max<std::int64_t>(count, 1), gpu_.multiprocessors),
        monitor);
#endif
  head::train_seeds_cpu(m, seeds, count, out, monitor);
}

std::uint64_t Backend::least_seeds_per_call() const {
  if (kind_ == DeviceKind::cuda) return 1;
  return static_cast<std::uint64_t>(kPackLanes) * static_cast<std::uint64_t>(std::max(1, threads_));
}

std::int64_t Backend::head_seeds_per_call(const head::Model& m) const {
  const auto per_call = static_cast<std::int64_t>(seeds_per_call());
  if (kind_ == DeviceKind::cuda)
    return head_sizing::gpu_seeds_per_call(m, gpu_.multiprocessors,
                                           gpu_.memory_gib * 1024.0 * 1024.0 * 1024.0, per_call);
  // kPackLanes is even: so is the least.
  return std::max(head_sizing::cpu_seeds_per_call(m, per_call),
                  static_cast<std::int64_t>(least_seeds_per_call()));
}

double Backend::head_workspace_bytes(const head::Model& m) const {
  return 64.0 * 8 * (head::layout(m).total + head::layout(head::one_input(m)).total) *
         std::max(1, threads_);
}

void Backend::check_head(const head::Model& m) const {
  if (kind_ == DeviceKind::cuda) head_sizing::check_gpu_head(m);
}

std::vector<double> Backend::quantiles(std::vector<double> values,
                                       const std::vector<double>& probs) const {
  ++calls_;
#if defined(ATTNLAB_WITH_CUDA)
  if (kind_ == DeviceKind::cuda) return quantiles_cuda(values, probs);
#endif
  return quantiles_cpu(std::move(values), probs);
}

namespace head_sizing {
namespace {

// Rounds a seed count down to an even number, at least 2 (pairs of seeds never straddle calls).
std::int64_t even_at_least_two(double seeds) {
  auto c = static_cast<std::int64_t>(std::fmin(std::fmax(seeds, 2.0), 0x1p62));
  return std::max<std::int64_t>(c - c % 2, 2);
}

}  // namespace

namespace {

// The factor flops_per_seed_step puts on head::flops_per_step.
double numeric_factor(const head::Model& m) {
  const double weights = static_cast<double>(head::trained_weights(m));
  return m.grad == head::Grad::numeric ? 2 * weights : 1.0;
}

}  // namespace

double flops_per_seed_step(const head::Model& m) {
  return head::flops_per_step(m) * numeric_factor(m);
}

std::int64_t cpu_seeds_per_call(const head::Model& m, std::int64_t per_call) {
  const double per_seed_bytes =
      8.0 * static_cast<double>(head::result_size(m) + head::layout(m).total);
  // The rule's product in its defined order (steps, FLOPs a step, factor), rounding included.
  const double work = m.steps * head::flops_per_step(m) * numeric_factor(m);
  const double calls = static_cast<double>(per_call);
  return even_at_least_two(std::min({calls, 4e9 / per_seed_bytes, calls * 5e6 / work}));
}

std::int64_t gpu_seeds_per_call(const head::Model& m, int multiprocessors, double memory_bytes,
                                std::int64_t per_call) {
  const double fill = multiprocessors > 0
                          ? static_cast<double>(multiprocessors) * kGpuThreadsPerMultiprocessor
                          : static_cast<double>(per_call);
  const double result = 8.0 * static_cast<double>(head::result_size(m));
  const double device_per_seed = 8.0 * static_cast<double>(head::layout(m).total) + result + 8;
  const double device = memory_bytes > 0 ? memory_bytes / 2 : 4e9;
  return even_at_least_two(std::min({fill, device / device_per_seed, 4e9 / result}));
}

double gpu_seed_seconds(const head::Model& m) {
  return m.steps * flops_per_seed_step(m) / kGpuThreadFlops;
}

double gpu_step_seconds(const head::Model& m, std::int64_t count, int multiprocessors) {
  const double device = std::max(multiprocessors, 1) * kGpuMultiprocessorFlops;
  return flops_per_seed_step(m) *
         std::max(1 / kGpuThreadFlops, static_cast<double>(count) / device);
}

int gpu_steps_per_slice(const head::Model& m, std::int64_t count, int multiprocessors) {
  const double steps = std::floor(kGpuSliceSeconds / gpu_step_seconds(m, count, multiprocessors));
  return static_cast<int>(std::clamp(steps, 1.0, static_cast<double>(std::max(m.steps, 1))));
}

void check_gpu_head(const head::Model& m) {
  const double seconds = gpu_seed_seconds(m);
  if (seconds <= kGpuSeedSecondsBudget) return;
  throw std::invalid_argument(fmt::format(
      "a head of n {}, d_model {}, d_k {}, d_v {} over {} steps is about {:.3g} FLOPs a seed, "
      "about {} on one GPU thread (the GPU trains one seed per thread; the limit is {}); use "
      "--device cpu",
      m.n, m.d_model, m.d_k, m.d_v, m.steps, m.steps * flops_per_seed_step(m),
      human_duration(seconds), human_duration(kGpuSeedSecondsBudget)));
}

}  // namespace head_sizing

}  // namespace attn
