// backend.cpp: see backend.hpp.
#include "host/backend.hpp"

#include <omp.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include "cpu_threads.hpp"
#include "host/format.hpp"
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

void Backend::attention_forward(const AttentionProblem<double>& p) const {
  ++calls_;
#if defined(ATTNLAB_WITH_CUDA)
  if (kind_ == DeviceKind::cuda) return attention_forward_cuda_host(p);
#endif
  attention_forward_cpu(p);
}

void Backend::dkstd_chunks(const dkstd::Plan& p, std::uint64_t first, std::uint64_t count,
                           Moments* out) const {
  ++calls_;
#if defined(ATTNLAB_WITH_CUDA)
  if (kind_ == DeviceKind::cuda) return dkstd::chunk_moments_cuda(p, first, count, out);
#endif
  dkstd::chunk_moments_cpu(p, first, count, out);
}

void Backend::numpy_pieces(const numpy_rng::Pcg64& g0, dkstd::Piece* pieces, std::size_t count,
                           int head, double* values) const {
  ++calls_;
#if defined(ATTNLAB_WITH_CUDA)
  if (kind_ == DeviceKind::cuda) return dkstd::decode_pieces_cuda(g0, pieces, count, head, values);
#endif
  dkstd::decode_pieces_cpu(g0, pieces, count, head, values, threads_);
}

dkstd::StreamSplit Backend::numpy_stream_split() const {
  if (kind_ == DeviceKind::cuda)
    return dkstd::device_split([this](const numpy_rng::Pcg64& g0, dkstd::Piece* p, std::size_t n,
                                      int head, double* v) { numpy_pieces(g0, p, n, head, v); });
  dkstd::StreamSplit s;
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
  if (kind_ == DeviceKind::cuda) return head::train_seeds_cuda(m, seeds, count, out);
#endif
  head::train_seeds_cpu(m, seeds, count, out, monitor);
}

std::vector<double> Backend::quantiles(std::vector<double> values,
                                       const std::vector<double>& probs) const {
  ++calls_;
#if defined(ATTNLAB_WITH_CUDA)
  if (kind_ == DeviceKind::cuda) return quantiles_cuda(values, probs);
#endif
  return quantiles_cpu(std::move(values), probs);
}

}  // namespace attn
