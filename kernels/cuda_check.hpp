// cuda_check.hpp: one error check, with file and line, around every CUDA and cuBLAS call and
// every kernel launch. Errors become std::runtime_error, which the driver reports in one line.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

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

#define ATTN_CUDA_CHECK(call) ::attn::cuda_detail::check((call), __FILE__, __LINE__)
// After a launch: reports a bad configuration at once (asynchronous faults surface at the
// next synchronizing call, which is checked too).
#define ATTN_CUDA_CHECK_LAUNCH() ATTN_CUDA_CHECK(cudaGetLastError())
