// backend.hpp: which device runs the kernels, and one entry point per kernel family that sends
// the call to the CUDA path or to its CPU twin. Arguments and results live in host memory;
// the CUDA paths copy in and out. Experiments talk to this class only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention.hpp"
#include "cuda_device.hpp"
#include "dkstd.hpp"
#include "dkstd_numpy.hpp"
#include "head.hpp"
#include "moments.hpp"
#include "saturation.hpp"
#include "tiny_model.hpp"

namespace attn {

enum class DeviceKind { cpu, cuda };
// The floating-point type a kernel computes in.
enum class Precision { f64, f32 };

// Prints the notices Backend::select held back (the CPU fallback, a GPU passed over), once:
// called where work starts (a Progress is made, results are printed), never before a refusal.
void announce_backend();

class Backend {
 public:
  // requested: "auto" (CUDA when built with it and a device answers, else CPU with one notice on
  // stderr, held back until announce_backend() so that a refusal stays one line), "cpu" or "cuda"
  // (throws std::runtime_error when no GPU answers). threads: CPU threads for the OpenMP loops (0:
  // all cores). gpu: the CUDA device ordinal to use (-1: the first usable one, counting from
  // local_rank % devices; kernels/cuda_device.hpp says what usable means). local_rank: an MPI
  // rank's rank on its node (0 for one process).
  static Backend select(const std::string& requested, int threads, int gpu = -1,
                        int local_rank = 0);

  DeviceKind kind() const { return kind_; }
  const char* name() const { return kind_ == DeviceKind::cuda ? "cuda" : "cpu"; }
  int threads() const { return threads_; }
  const GpuInfo& gpu() const { return gpu_; }
  // "NVIDIA H200 (cc 9.0, driver 13.0)" or "AMD EPYC, 2 threads".
  std::string device_description() const;

  // How much work one call should take: enough to fill a GPU, small enough on the CPU that
  // progress and Ctrl-C stay responsive. The d_k sampler: chunks of 256 lanes (kernels/dkstd.hpp);
  // training: seeds.
  std::uint64_t dkstd_chunks_per_call() const { return kind_ == DeviceKind::cuda ? 65536 : 64; }
  // And at most this many of the sampler's normals (2 N d_k) a call: on the CPU a quarter second
  // of two AVX2 cores (5e8 normals/s), so that a stop point comes within the second even when
  // another job shares the cores; on the GPU no more than the chunks say.
  std::uint64_t dkstd_normals_per_call() const {
    return kind_ == DeviceKind::cuda ? ~std::uint64_t{0} : std::uint64_t{1} << 27;
  }
  std::uint64_t seeds_per_call() const {
    return kind_ == DeviceKind::cuda ? (1u << 20) : (1u << 14);
  }

  // Kernel calls made through this backend so far: a table that made none ran on the host.
  std::uint64_t kernel_calls() const { return calls_; }

  void attention_forward(const AttentionProblem<double>& host_problem) const;
  void dkstd_chunks(const dkstd::Plan& p, std::uint64_t first, std::uint64_t count,
                    Moments* out) const;
  // numpy's stream (kernels/dkstd_numpy.hpp): a round's pieces decoded on this backend's device
  // (numpy_pieces.hpp's contract), and the split a NumpyStream on this backend uses: the CPU's
  // own threads, or the GPU's decoder with pieces and waves sized for it.
  void numpy_pieces(const numpy_rng::Pcg64& g0, dkstd::Piece* pieces, std::size_t count, int head,
                    double* values) const;
  dkstd::StreamSplit numpy_stream_split() const;
  void saturation_rows(const saturation::Params& p, std::uint64_t first, std::int64_t rows,
                       double* out) const;
  void train_seeds(tiny::Config c, const std::uint64_t* seeds, std::int64_t n,
                   const tiny::TrainOptions& o, Precision precision, tiny::TrainResult* out) const;
  // Runs of mixed configs: out[i] trained from configs[i], seeds[i] (i < n).
  void train_runs(const tiny::Config* configs, const std::uint64_t* seeds, std::int64_t n,
                  const tiny::TrainOptions& o, Precision precision, tiny::TrainResult* out) const;
  // The general head (kernels/head.hpp): trains seeds[0 .. count) of model m; out holds
  // count * head::result_size(m) values (loss, map rows, output rows per seed). m.x, m.y in
  // host memory. The CPU stops within a step of monitor.stop_requested() and throws
  // Interrupted; a GPU call runs to its end (the caller sizes calls by time).
  void train_heads(const head::Model& m, const std::uint64_t* seeds, std::int64_t count,
                   double* out, const Monitor& monitor = silent_monitor()) const;
  // Sorts `values` (moved in: a sweep's weights can be large) and returns the quantiles.
  std::vector<double> quantiles(std::vector<double> values, const std::vector<double>& probs) const;

 private:
  DeviceKind kind_ = DeviceKind::cpu;
  int threads_ = 1;
  GpuInfo gpu_;
  mutable std::uint64_t calls_ = 0;
};

// The CPU's model name from /proc/cpuinfo ("unknown CPU" elsewhere).
std::string cpu_model();

}  // namespace attn
