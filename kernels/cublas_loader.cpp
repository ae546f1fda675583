// cublas_loader.cpp: see cublas_loader.hpp.
#include "cublas_loader.hpp"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "cuda_check.hpp"

namespace attn::cuda_detail {
namespace {

void* open_cublas() {
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  const std::string candidates[] = {
#if defined(ATTNLAB_CUDA_LIBRARY_DIR)
    std::string(ATTNLAB_CUDA_LIBRARY_DIR) + "/" + soname,
#endif
    soname,
    "libcublas.so"
  };
  for (const std::string& name : candidates)
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  const char* why = dlerror();
  throw std::runtime_error("cannot load cuBLAS (" + soname + "): " + (why ? why : "not found"));
}

template <class F>
F symbol(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) throw std::runtime_error(std::string("cuBLAS has no ") + name);
  return reinterpret_cast<F>(p);
}

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = [] {
    void* lib = open_cublas();
    CublasApi a;
    a.create = symbol<decltype(a.create)>(lib, "cublasCreate_v2");
    a.status_string = symbol<decltype(a.status_string)>(lib, "cublasGetStatusString");
    a.sgemm = symbol<decltype(a.sgemm)>(lib, "cublasSgemm_v2");
    a.dgemm = symbol<decltype(a.dgemm)>(lib, "cublasDgemm_v2");
    a.sgemm_strided_batched =
        symbol<decltype(a.sgemm_strided_batched)>(lib, "cublasSgemmStridedBatched");
    a.dgemm_strided_batched =
        symbol<decltype(a.dgemm_strided_batched)>(lib, "cublasDgemmStridedBatched");
    return a;
  }();
  return api;
}

cublasHandle_t cublas_handle() {
  thread_local cublasHandle_t handle = [] {
    cublasHandle_t h;
    ATTN_CUDA_CHECK(cublas().create(&h));
    return h;
  }();
  return handle;
}

}  // namespace attn::cuda_detail
