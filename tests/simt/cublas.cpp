// cublas.cpp: cuBLAS's GEMMs on the host for the SIMT emulation (see cublas_v2.h), and the
// loader's entry points (kernels/cublas_loader.hpp) pointing at them.
#include <cstdio>
#include <string>

#include "cublas_loader.hpp"
#include "cuda_check.hpp"
#include "cuda_runtime.h"
#include "simt_memory.hpp"

struct cublasContext {
  int magic = 0xb1a5;
};

namespace {

// Element (row, col) of op(X), X column-major with leading dimension ld.
template <class T>
T at(const T* x, cublasOperation_t op, int ld, long long row, long long col) {
  return op == CUBLAS_OP_N ? x[row + col * ld] : x[col + row * ld];
}

// The matrix stored as `rows` x `cols` (before op) at x + b * stride, for every batch entry,
// inside one device allocation; empty when so.
template <class T>
std::string check_extent(const char* name, const T* x, int rows, int cols, int ld, long long stride,
                         int batch) {
  if (rows == 0 || cols == 0 || batch == 0) return "";
  const std::size_t span = static_cast<std::size_t>(cols - 1) * ld + rows;
  for (int b = 0; b < batch; ++b) {
    const std::string why = simt::detail::device_range(x + b * stride, span * sizeof(T));
    if (!why.empty())
      return std::string(name) + " of batch entry " + std::to_string(b) + ": " + why;
    if (stride == 0) break;
  }
  return "";
}

template <class T>
cublasStatus_t gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const T* alpha, const T* a, int lda, long long stride_a, const T* b,
                    int ldb, long long stride_b, const T* beta, T* c, int ldc, long long stride_c,
                    int batch) {
  if (handle == nullptr || handle->magic != 0xb1a5) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto op_ok = [](cublasOperation_t o) {
    return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C;
  };
  // cuBLAS's argument checks: sizes, leading dimensions (of op's operand as stored), batch.
  const int a_rows = ta == CUBLAS_OP_N ? m : k, a_cols = ta == CUBLAS_OP_N ? k : m;
  const int b_rows = tb == CUBLAS_OP_N ? k : n, b_cols = tb == CUBLAS_OP_N ? n : k;
  if (!op_ok(ta) || !op_ok(tb) || m < 0 || n < 0 || k < 0 || batch < 0 || alpha == nullptr ||
      beta == nullptr || lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) ||
      ldc < (m > 1 ? m : 1))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0 || batch == 0 || simt::dry_run()) return CUBLAS_STATUS_SUCCESS;
  const bool read_c = *beta != T(0);
  std::string why = check_extent("C", c, m, n, ldc, stride_c, batch);
  if (why.empty() && k > 0) why = check_extent("A", a, a_rows, a_cols, lda, stride_a, batch);
  if (why.empty() && k > 0) why = check_extent("B", b, b_rows, b_cols, ldb, stride_b, batch);
  if (!why.empty()) {
    std::fprintf(stderr, "simt: cuBLAS gemm (m %d n %d k %d, lda %d ldb %d ldc %d): %s\n", m, n, k,
                 lda, ldb, ldc, why.c_str());
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  // Queued on stream 0 (the handle's stream), as cuBLAS queues its kernels; alpha and beta are
  // read now (host pointer mode).
  const T al = *alpha, be = *beta;
  simt::detail::enqueue(nullptr, "cuBLAS gemm", [=] {
    for (int e = 0; e < batch; ++e) {
      const T* ae = a + e * stride_a;
      const T* bt = b + e * stride_b;
      T* ce = c + e * stride_c;
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          T acc = 0;
          for (int l = 0; l < k; ++l) acc += at(ae, ta, lda, i, l) * at(bt, tb, ldb, l, j);
          T& out = ce[i + static_cast<long long>(j) * ldc];
          out = al * acc + (read_c ? be * out : T(0));
        }
    }
    return std::string();
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  static cublasContext context;  // handles hold no state here: one serves every caller
  *handle = &context;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (handle == nullptr || handle->magic != 0xb1a5) return CUBLAS_STATUS_NOT_INITIALIZED;
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    default:
      return "CUBLAS_STATUS_UNKNOWN";
  }
}
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const float* alpha, const float* a, int lda,
                              const float* b, int ldb, const float* beta, float* c, int ldc) {
  return gemm<float>(h, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}
cublasStatus_t cublasDgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const double* alpha, const double* a, int lda,
                              const double* b, int ldb, const double* beta, double* c, int ldc) {
  return gemm<double>(h, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float* alpha, const float* a, int lda, long long sa,
                                         const float* b, int ldb, long long sb, const float* beta,
                                         float* c, int ldc, long long sc, int batch) {
  return gemm<float>(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
}
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const double* alpha, const double* a, int lda,
                                         long long sa, const double* b, int ldb, long long sb,
                                         const double* beta, double* c, int ldc, long long sc,
                                         int batch) {
  return gemm<double>(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch);
}

namespace attn::cuda_detail {

const CublasApi& cublas() {
  static const CublasApi api{cublasCreate_v2, cublasGetStatusString,     cublasSgemm_v2,
                             cublasDgemm_v2,  cublasSgemmStridedBatched, cublasDgemmStridedBatched};
  return api;
}

cublasHandle_t cublas_handle() {
  // One handle per thread for the process's life, as the loader's (never destroyed).
  thread_local cublasHandle_t handle = [] {
    cublasHandle_t h;
    ATTN_CUDA_CHECK(cublas().create(&h));
    return h;
  }();
  return handle;
}

}  // namespace attn::cuda_detail
