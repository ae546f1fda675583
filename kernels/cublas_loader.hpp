// cublas_loader.hpp: cuBLAS, opened on first use.
//
// cuBLAS is large: merely loading it at program start is a cost that every run would
// pay, GPU or not. So the CUDA build does not link it; the first GPU call that needs a GEMM
// opens it (dlopen) and takes the few entry points attnlab uses. Errors (library missing,
// symbol missing) throw std::runtime_error naming the library.
#pragma once

#include <cublas_v2.h>

namespace attn::cuda_detail {

struct CublasApi {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasGetStatusString) status_string;
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasDgemm_v2) dgemm;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched;
};

// The process's cuBLAS entry points (opened once, thread-safe).
const CublasApi& cublas();

// The calling thread's cuBLAS handle, created on first use (on the thread's current device).
cublasHandle_t cublas_handle();

}  // namespace attn::cuda_detail
