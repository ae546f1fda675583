// backend.hpp: which device runs the kernels, and one entry point per kernel family that sends
// the call to the CUDA path or to its CPU twin. Arguments and results live in host memory;
// the CUDA paths copy in and out. Experiments talk to this class only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention.hpp"
#include "cuda_device.hpp"
#include "head.hpp"
#include "kernels/dk_std.hpp"
#include "kernels/dk_std_numpy.hpp"
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
  // progress and Ctrl-C stay responsive. The d_k sampler: chunks of 256 lanes (kernels/dk_std.hpp);
  // training: seeds.
  std::uint64_t dk_std_chunks_per_call() const { return kind_ == DeviceKind::cuda ? 65536 : 64; }
  // And at most this many of the sampler's normals (2 N d_k) a call: on the CPU a quarter second
  // of two AVX2 cores (5e8 normals/s), so that a stop point comes within the second even when
  // another job shares the cores; on the GPU no more than the chunks say.
  std::uint64_t dk_std_normals_per_call() const {
    return kind_ == DeviceKind::cuda ? ~std::uint64_t{0} : std::uint64_t{1} << 27;
  }
  static constexpr std::uint64_t kGpuSeedsPerCall = 1u << 20, kCpuSeedsPerCall = 1u << 14;
  std::uint64_t seeds_per_call() const {
    return kind_ == DeviceKind::cuda ? kGpuSeedsPerCall : kCpuSeedsPerCall;
  }
  // The fewest seeds a training call (train_seeds, train_heads) should hold: on the CPU one lane
  // pack (kPackLanes seeds, kernels/lanes.hpp) per thread, since a pack trains its lanes in
  // lockstep and a call of fewer seeds takes as long; 1 on the GPU, whose calls are sized to
  // fill it (head_seeds_per_call, seeds_per_call) and not paced.
  std::uint64_t least_seeds_per_call() const;

  // Kernel calls made through this backend so far: a table that made none ran on the host.
  std::uint64_t kernel_calls() const { return calls_; }

  // The batched attention forward (kernels/attention.hpp) on host memory, T float or double:
  // every output of p written, the bits of one whole call on this backend. The work goes in
  // pieces with monitor.stop_point() before each (Interrupted when a stop was asked; the outputs
  // are then partly written): on the CPU pieces of at most kAttentionPieceWork multiply-adds
  // (attention_pieces: a problem larger than that is cut into rows), on the GPU runs of whole
  // problems of at most kGpuAttentionPieceWork. One kernel call counted. One head
  // (p.shape.heads == 1, else std::invalid_argument; attention_compute splits heads).
  template <class T>
  void attention_forward(const AttentionProblem<T>& p,
                         const Monitor& monitor = silent_monitor()) const;
  static constexpr double kAttentionPieceWork = double(1 << 26);
  static constexpr double kGpuAttentionPieceWork = double(1 << 26) * 256;
  void dk_std_chunks(const dk_std::Plan& p, std::uint64_t first, std::uint64_t count,
                     Moments* out) const;
  // numpy's stream (kernels/dk_std_numpy.hpp): a round's pieces decoded on this backend's device
  // (numpy_pieces.hpp's contract), and the split a NumpyStream on this backend uses: the CPU's
  // own threads, or the GPU's decoder with pieces and waves sized for it, queued on a stream
  // with the pieces and values in page-locked host memory, so that a wave decodes while the
  // host takes the previous wave's dot products.
  void numpy_pieces(const numpy_rng::Pcg64& g0, dk_std::Piece* pieces, std::size_t count, int head,
                    double* values) const;
  dk_std::StreamSplit numpy_stream_split() const;
  void saturation_rows(const saturation::Params& p, std::uint64_t first, std::int64_t rows,
                       double* out) const;
  void train_seeds(tiny::Config c, const std::uint64_t* seeds, std::int64_t n,
                   const tiny::TrainOptions& o, Precision precision, tiny::TrainResult* out) const;
  // Runs of mixed configs: out[i] trained from configs[i], seeds[i] (i < n).
  void train_runs(const tiny::Config* configs, const std::uint64_t* seeds, std::int64_t n,
                  const tiny::TrainOptions& o, Precision precision, tiny::TrainResult* out) const;
  // The general head (kernels/head.hpp): trains seeds[0 .. count) of model m; out holds
  // count * head::result_size(m) values (loss, map rows, output rows per seed). m.x, m.y in
  // host memory. Stops on monitor.stop_requested() by throwing Interrupted: the CPU within a
  // step, the GPU between slices of steps (head_sizing::gpu_steps_per_slice: a fraction of a
  // second each), one launch a slice. Does not call monitor.advance: the caller counts a call's
  // count * m.steps seed-steps. The results do not depend on the backend's call or slice sizes.
  void train_heads(const head::Model& m, const std::uint64_t* seeds, std::int64_t count,
                   double* out, const Monitor& monitor = silent_monitor()) const;
  // How many seeds one train_heads call of model m should hold (even, >= 2). CPU: enough to keep
  // the threads busy while a call stays short (head_sizing::cpu_seeds_per_call with
  // seeds_per_call()), and never fewer than least_seeds_per_call(); GPU: one seed per resident
  // thread of the device, fewer where the workspaces or the results would not fit
  // (head_sizing::gpu_seeds_per_call with gpu()).
  std::int64_t head_seeds_per_call(const head::Model& m) const;
  // Bytes of host memory the head's workspaces take while a train_heads call of model m and its
  // evaluation run, for a memory check before any work: per thread, a training workspace
  // (head::layout(m)) and an evaluation one (head::layout(head::one_input(m))), at 512 bytes a
  // pack (eight times a pack's 64, room for the lane groups' scratch).
  double head_workspace_bytes(const head::Model& m) const;
  // Throws std::invalid_argument (one line, ending with what to do) when this backend should not
  // train model m: on the GPU, a head whose single seed's training on one GPU thread is
  // estimated to take longer than head_sizing::kGpuSeedSecondsBudget
  // (head_sizing::check_gpu_head). The CPU refuses nothing.
  void check_head(const head::Model& m) const;
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

// The sizes of the general head's calls and GPU launches (Backend::head_seeds_per_call,
// check_head, train_heads): pure arithmetic, tested without a GPU. The GPU trains one seed per
// thread, so a launch lasts as long as one seed's steps while the seeds fit the device's
// resident threads and its memory bandwidth, and longer in proportion beyond that; the rates
// below are deliberately low estimates for that kernel, whose operands are loads from each
// seed's workspace in device memory.
namespace head_sizing {

// FP64 FLOPs of one training step of one seed: head::flops_per_step(m), times the
// 2 d_model (2 d_k + d_v) forward passes of a step when m.grad is numeric.
double flops_per_seed_step(const head::Model& m);

// FP64 FLOP/s of one GPU thread training one seed while the device is not saturated.
inline constexpr double kGpuThreadFlops = 2e7;
// FP64 FLOP/s of one multiprocessor's resident threads together (memory-bound then).
inline constexpr double kGpuMultiprocessorFlops = 4e9;
// Resident threads of one multiprocessor (compute capability 7.0 to 9.0 hold 1024 to 2048; where
// fewer fit, the extra seeds of a call wait for a free slot and the launch takes longer).
inline constexpr int kGpuThreadsPerMultiprocessor = 2048;
// The longest single-seed training, in seconds at kGpuThreadFlops, the GPU path accepts.
inline constexpr double kGpuSeedSecondsBudget = 3600;
// What one slice of steps (one launch) should last, in seconds.
inline constexpr double kGpuSliceSeconds = 0.25;

// The CPU rule: min(per_call, 4e9 bytes / (8 (result_size + layout.total)) bytes a seed,
// per_call * 5e6 / (steps * flops_per_seed_step)), even, >= 2. per_call: the backend's
// seeds_per_call() (> 0).
std::int64_t cpu_seeds_per_call(const head::Model& m, std::int64_t per_call);
// The GPU rule: multiprocessors * kGpuThreadsPerMultiprocessor seeds (per_call when
// multiprocessors is 0, unknown), at most as many as fill half of memory_bytes (0: unknown, then
// 4e9 bytes) with their workspaces, results and seeds, and as have 4e9 bytes of results in host
// memory; even, >= 2.
std::int64_t gpu_seeds_per_call(const head::Model& m, int multiprocessors, double memory_bytes,
                                std::int64_t per_call);
// Estimated seconds of one seed's whole training (m.steps steps) on one GPU thread.
double gpu_seed_seconds(const head::Model& m);
// Estimated seconds of one step of `count` seeds (> 0) in one launch on a GPU of
// `multiprocessors` multiprocessors (0: unknown, counted as 1): the longer of one thread's step
// and the device's share of all count steps.
double gpu_step_seconds(const head::Model& m, std::int64_t count, int multiprocessors);
// Steps per launch for train_heads on the GPU: as many as last about kGpuSliceSeconds
// (gpu_step_seconds), at least 1, at most max(m.steps, 1).
int gpu_steps_per_slice(const head::Model& m, std::int64_t count, int multiprocessors);
// Throws std::invalid_argument when gpu_seed_seconds(m) exceeds kGpuSeedSecondsBudget: one line
// naming the shape, the FLOPs a seed and the estimate, and suggesting --device cpu.
void check_gpu_head(const head::Model& m);

}  // namespace head_sizing

}  // namespace attn
