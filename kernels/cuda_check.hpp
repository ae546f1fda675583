// cuda_check.hpp: one error check, with file and line, around every CUDA and cuBLAS call and
// every kernel launch. Errors become std::runtime_error, which the driver reports in one line.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "cublas_loader.hpp"

namespace attn::cuda_detail {

[[noreturn]] inline void fail(const std::string& what, const char* file, int line) {
  throw std::runtime_error(what + " at " + file + ":" + std::to_string(line));
}
inline void check(cudaError_t e, const char* file, int line) {
  if (e != cudaSuccess) fail(std::string("CUDA error: ") + cudaGetErrorString(e), file, line);
}
inline void check(cublasStatus_t s, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fail(std::string("cuBLAS error: ") + cublas().status_string(s), file, line);
}

}  // namespace attn::cuda_detail

namespace attn {
// The grid size of a launch of `per_block` threads per block covering `threads` (>= 0) threads.
// Throws std::length_error past the device's 2^31 - 1 blocks, where the cast to unsigned that a
// launch takes would silently drop work.
inline unsigned grid_blocks(long long threads, int per_block) {
  const long long blocks = (threads + per_block - 1) / per_block;
  if (blocks > 0x7fffffffLL)
    throw std::length_error("a launch of " + std::to_string(threads) + " threads needs " +
                            std::to_string(blocks) + " blocks, more than a grid holds (2^31 - 1)");
  return static_cast<unsigned>(blocks);
}

namespace cuda_detail {
// Runs a Thrust algorithm called with the thrust::device policy, which runs on stream 0 and
// returns when it is done (Thrust synchronises). Under the SIMT emulation Thrust runs on its host
// system: the call is then one step of the emulated stream 0, after the work queued there, with
// device memory open to the host thread (simt::host_system).
template <class F>
decltype(auto) thrust_call(F&& f) {
#if defined(ATTNLAB_SIMT)
  return ::simt::host_system(std::forward<F>(f));
#else
  return std::forward<F>(f)();
#endif
}
}  // namespace cuda_detail
}  // namespace attn

#define ATTN_CUDA_CHECK(call) ::attn::cuda_detail::check((call), __FILE__, __LINE__)
// After a launch: reports a bad configuration at once (asynchronous faults surface at the
// next synchronizing call, which is checked too).
#define ATTN_CUDA_CHECK_LAUNCH() ATTN_CUDA_CHECK(cudaGetLastError())
