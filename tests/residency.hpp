// residency.hpp: what the device can hold of a kernel at once, and what each of attnlab's
// kernels needs. tests/test_residency.cpp (the CUDA build) reads the build's ptxas report and
// checks every kernel against its design below; tests/test_simt.cpp checks that the launches
// use the block sizes these designs assume.
//
// Resident blocks per multiprocessor on sm_90 (H100, H200), as the CUDA occupancy calculator
// computes them from the CUDA C++ Programming Guide's table for compute capability 9.0: at most
// 64 warps and 32 blocks; 65,536 registers, allocated per warp in units of 256 (a thread's count
// rounded up to 8); 228 KiB of shared memory, allocated per block in units of 128 bytes plus
// 1 KiB the system reserves for each block.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace attn::residency {

struct Sm90 {
  static constexpr int kWarps = 64, kBlocks = 32, kRegisters = 65536, kRegisterUnit = 256;
  static constexpr int kMaxRegistersPerThread = 255;
  static constexpr std::size_t kShared = 228 * 1024, kSharedUnit = 128, kSharedReserved = 1024;
  static constexpr int kMultiprocessors = 132;  // an H200 (an H100 SXM has as many)
};

struct Resident {
  int blocks = 0;  // per multiprocessor
  int warps = 0;
  const char* limited_by = "";
};

// Blocks of `threads` threads, each thread using `registers` registers and each block
// `shared_bytes` of shared memory (static and dynamic), resident on one sm_90 multiprocessor.
inline Resident resident(int threads, int registers, std::size_t shared_bytes) {
  using S = Sm90;
  const int warps = (threads + 31) / 32;
  const int per_warp =
      (std::max(registers, 1) * 32 + S::kRegisterUnit - 1) / S::kRegisterUnit * S::kRegisterUnit;
  const int by_registers = S::kRegisters / per_warp / warps;
  const std::size_t shared =
      (shared_bytes + S::kSharedUnit - 1) / S::kSharedUnit * S::kSharedUnit + S::kSharedReserved;
  const int by_shared = static_cast<int>(S::kShared / shared);
  const int by_warps = S::kWarps / warps;
  Resident r{S::kBlocks, 0, "the 32-block limit"};
  if (by_warps < r.blocks) r = {by_warps, 0, "the 64-warp limit"};
  if (by_registers < r.blocks) r = {by_registers, 0, "registers"};
  if (by_shared < r.blocks) r = {by_shared, 0, "shared memory"};
  r.warps = r.blocks * warps;
  return r;
}

// A kernel's design: its block size and the resident warps per multiprocessor it needs to keep
// its pipes busy, with why.
struct Design {
  const char* kernel;  // as ptxas names it, demangled, without "(anonymous namespace)::"
  const char* launch;  // the name at its launch sites (tests/test_simt.cpp's launch record)
  int threads;         // per block (the smallest its launches use)
  int warps;           // resident warps per multiprocessor it needs; 0: not a bulk kernel
  bool stack;          // may keep a stack frame (local arrays indexed at run time)
  const char* why;
  long spill_bytes = 0;  // the spill stores and loads (bytes) its design accepts
  // Dynamic shared memory a block of it has at the configuration its design is for (bytes), on
  // top of the static shared memory the report gives.
  long dynamic_shared = 0;
};

// The head's warp kernel's design configuration: the 8×16 head (n = 8, d_model = d_k = d_v = 16,
// one head, --train qkv, SGD, one input) of tests/gpu_cases.hpp, whose workspace is 1,921
// doubles (head::warp_shared_bytes; tests/test_residency.cpp checks the figure).
inline constexpr long kHeadWarpSharedBytes = 15368;

inline const std::vector<Design>& designs() {
  // Latency arguments, per multiprocessor (4 schedulers): an arithmetic chain of 4 to 6 cycles
  // per dependent instruction is covered by 4 warps a scheduler with some independent work in
  // each thread (16 warps); a thread that waits on global memory (~600 cycles at 4.8 TB/s over
  // 132 SMs) needs 32 warps or more with a few loads in flight each.
  static const std::vector<Design> d = {
      {"attn::dk_std::dk_std_chunks_kernel", "dk_std_chunks_kernel", 256, 16, false,
       "Philox rounds and Box-Muller in registers, 4 independent normals per Philox call: "
       "arithmetic-bound, 16 warps"},
      {"attn::dk_std::numpy_pieces_kernel", "numpy_pieces_kernel", 128, 32, true,
       "a piece's PCG64 steps form one dependent chain of 128-bit multiplies per thread: 32 "
       "warps; the piece's record (its array of recorded starts, indexed at run time) is a local "
       "copy"},
      {"attn::tiny::train_kernel<double>", "train_kernel", 128, 16, false,
       "the whole training in registers, FP64 chains with a few independent products each: 16 "
       "warps; parameters in registers (no stack frame)"},
      {"attn::tiny::train_kernel<float>", "train_kernel", 128, 16, false,
       "as the double kernel, in FP32"},
      {"attn::head::train_kernel", "train_kernel", 128, 8, true,
       "one seed per thread, every operand in global memory, 255 registers a thread: 8 warps; "
       "a stack frame, and with many inputs the fused products' accumulators spill (a bounded "
       "few hundred bytes: this design's limit; the warp kernel trains whatever fits shared "
       "memory instead)",
       256},
      {"attn::head::train_warp_kernel", "train_warp_kernel", 32, 8, false,
       "a warp per seed (a block), the seed's workspace in shared memory (15 KiB at the 8x16 "
       "head): each lane's FP64 chain waits on shared loads (~30 cycles), 2 warps a scheduler "
       "with the next operands' loads in flight cover it: 8 warps; shared memory limits it to 14",
       0, kHeadWarpSharedBytes},
      {"attn::saturation::fill_kernel", "fill_kernel", 256, 32, false,
       "Philox then stores of q and k: memory-bound, 32 warps"},
      {"attn::saturation::stats_kernel", "stats_kernel", 256, 32, false,
       "reads a row of weights: memory-bound, 32 warps"},
      {"attn::softmax_rows_v1_kernel<double>", "softmax_rows_v1_kernel", 256, 32, false,
       "a row per thread, reads and writes it: memory-bound, 32 warps"},
      {"attn::softmax_rows_v1_kernel<float>", "softmax_rows_v1_kernel", 256, 32, false,
       "as the double kernel"},
      {"attn::softmax_rows_v2_kernel<double>", "softmax_rows_v2_kernel", 256, 32, false,
       "a row per warp, coalesced reads: memory-bound, 32 warps"},
      {"attn::softmax_rows_v2_kernel<float>", "softmax_rows_v2_kernel", 256, 32, false,
       "as the double kernel"},
      {"attn::finish_scores_kernel<double>", "finish_scores_kernel", 256, 32, false,
       "a score per thread, read and written: memory-bound, 32 warps"},
      {"attn::finish_scores_kernel<float>", "finish_scores_kernel", 256, 32, false,
       "as the double kernel"},
      {"attn::causal_weighted_sum_kernel<double>", "causal_weighted_sum_kernel", 32, 32, false,
       "a query row per block over the values: memory-bound, 32 warps at its smallest block "
       "(d_v <= 32, one warp)"},
      {"attn::causal_weighted_sum_kernel<float>", "causal_weighted_sum_kernel", 32, 32, false,
       "as the double kernel"},
      {"attn::probe_kernel", "probe_kernel", 1, 0, false,
       "never launched: cuda_device.cu asks whether the build's code loads on a device"},
  };
  return d;
}

inline const Design* design_of(const std::string& kernel) {
  for (const Design& d : designs())
    if (kernel == d.kernel) return &d;
  return nullptr;
}

}  // namespace attn::residency
