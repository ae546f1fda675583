// cuda_runtime.h (SIMT emulation): the part of CUDA that kernels/*.cu use, for compiling those
// files unchanged as C++ and running their kernels on the CPU with CUDA's semantics. Used only by
// the test build (ATTNLAB_SIMT, see tests/simt/README.md); never by a build that runs a GPU.
//
// What it emulates, and how:
// - Qualifiers: __global__, __device__, __host__, __forceinline__,
//   __launch_bounds__ vanish; __shared__ becomes `static` (see shared memory below).
// - Built-ins: threadIdx, blockIdx, blockDim, gridDim are the running CUDA thread's values.
// - A launch `k<<<grid, block, shared, stream>>>(args)` (rewritten by tests/simt/translate.cmake
//   into simt::launch_config(...) % simt::kernel_args(...)) is checked (the configuration
//   against an H200's limits, compute capability 9.0; every pointer argument must be null or
//   device memory) and recorded (simt::launches(), so that tests can assert launch geometry),
//   then queued on its stream. When it runs: blocks in a shuffled order, each block's threads as
//   fibers (one per CUDA thread) on one OS thread, resumed in a shuffled order after every
//   barrier. __syncthreads waits for every thread of the block that has not returned; the warp
//   intrinsics (__shfl*_sync, __syncwarp) wait for every lane of their mask, and a lane of the
//   mask that returned, or that does not exist, is an error, as is a deadlock. An error in a
//   kernel ends the grid and is what the call that waited for it returns, as a device fault
//   would be. When the first block of a launch (in that order) calls no barrier or warp
//   intrinsic, the other blocks' threads run as plain calls, one after another in a shuffled
//   order (no fibers, much faster); a barrier or warp intrinsic there is reported as a launch
//   error (the kernel must synchronise alike in every block). The race check
//   (simt::set_race_check, ATTNLAB_SIMT_RACECHECK=1) switches threads at every access to a
//   shared array too and reports two threads that touch one element between the same barriers,
//   one of them writing; a __syncwarp() of a whole warp orders its lanes' accesses (not those of
//   other warps, not a shuffle, not a part of a warp).
// - Streams: launches, copies, memsets, cuBLAS calls and event records are queued and run only
//   when something waits for them (cudaStreamSynchronize, cudaEventSynchronize,
//   cudaDeviceSynchronize, a copy that the host waits for), then only what that wait needs, in a
//   random order that keeps CUDA's: issue order within a stream, the legacy default stream
//   (stream 0) and the blocking streams after each other's earlier work, cudaStreamWaitEvent.
//   Streams made with cudaStreamNonBlocking do not wait for stream 0, nor it for them. So a
//   missing wait reads what the memory held before the work. How long a copy keeps the host is
//   the runtime's documented behaviour: asynchronous copies with page-locked host memory return
//   at once, the others when done.
// - Device memory is host memory from malloc (AddressSanitizer sees every access out of an
//   allocation), filled with 0xff bytes (NaN) at allocation as uninitialised device memory, and
//   poisoned for AddressSanitizer except while device work runs: a host access to it is reported
//   (use-after-poison). cudaFree frees at once (CUDA does not promise to wait), so work still
//   queued on the memory is reported as a use after free. Copies check that their device side
//   lies inside one allocation and the host side in none. Thrust runs on its host system, as one
//   step of stream 0 (simt::host_system, kernels/cuda_check.hpp's thrust_call).
// - Shared memory: `__shared__ T a[N]` (rewritten to simt::SharedArray) is one array per kernel,
//   which the blocks share one after another (blocks run one at a time) and which keeps the
//   previous block's contents, as a block must assume garbage there anyway; `extern __shared__ T
//   a[]` (simt::DynamicShared) is the launch's dynamic shared memory, NaN bytes at the start.
// - The device is visible only where the environment sets ATTNLAB_SIMT_DEVICE=1; otherwise
//   cudaGetDeviceCount reports no device, as on a machine without a GPU.
// Limits (what a GPU shows and this does not) are listed in docs/KERNELS.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __shared__ static

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

// The running CUDA thread's coordinates (set by the scheduler before it resumes a thread).
extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;
constexpr int warpSize = 32;

// ---- Runtime types ---------------------------------------------------------------------------
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevice = 101,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorInsufficientDriver = 35,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoKernelImageForDevice = 209,
  cudaErrorUnsupportedPtxVersion = 222,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotReady = 600,
};
using cudaError = cudaError_t;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaDeviceAttr {
  cudaDevAttrComputeMode = 20,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};
enum cudaComputeMode {
  cudaComputeModeDefault = 0,
  cudaComputeModeExclusive = 1,
  cudaComputeModeProhibited = 2,
  cudaComputeModeExclusiveProcess = 3,
};
struct cudaDeviceProp {
  char name[256];
  std::size_t totalGlobalMem;
  std::size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int major;
  int minor;
  int multiProcessorCount;
  int maxThreadsPerMultiProcessor;
  int regsPerMultiprocessor;
  std::size_t sharedMemPerMultiprocessor;
};
struct cudaFuncAttributes {
  std::size_t sharedSizeBytes;
  std::size_t constSizeBytes;
  std::size_t localSizeBytes;
  int maxThreadsPerBlock;
  int numRegs;
  int ptxVersion;
  int binaryVersion;
  int maxDynamicSharedSizeBytes;
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
struct CUstream_st;
struct CUevent_st;
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
constexpr unsigned cudaHostAllocDefault = 0;
constexpr unsigned cudaStreamDefault = 0;
constexpr unsigned cudaStreamNonBlocking = 1;

// ---- Runtime calls (tests/simt/simt.cpp) ---------------------------------------------------
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaRuntimeGetVersion(int* version);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t e);
const char* cudaGetErrorName(cudaError_t e);
cudaError_t cudaMalloc(void** ptr, std::size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMallocHost(void** ptr, std::size_t bytes);
cudaError_t cudaHostAlloc(void** ptr, std::size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes);
cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

namespace simt::detail {
cudaError_t func_attributes(cudaFuncAttributes* attr, const void* fn);
cudaError_t func_set_attribute(const void* fn, cudaFuncAttribute attr, int value);
}  // namespace simt::detail
template <class F>
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, F* fn) {
  return simt::detail::func_attributes(attr, reinterpret_cast<const void*>(fn));
}
template <class F>
cudaError_t cudaFuncSetAttribute(F* fn, cudaFuncAttribute attr, int value) {
  return simt::detail::func_set_attribute(reinterpret_cast<const void*>(fn), attr, value);
}

// ---- Barriers and warp intrinsics ------------------------------------------------------------
namespace simt::detail {
void block_barrier();
// Waits for every lane of `mask` in the calling thread's warp (an error if the caller is not in
// the mask, or a lane of the mask has returned or does not exist). orders: a __syncwarp(), which
// for the race check orders the shared-memory accesses of the lanes when the mask is the whole
// warp (a shuffle does not).
void warp_sync(unsigned mask, bool orders);
// The calling lane offers `bits`; returns what lane `src` offered (src in the mask).
std::uint64_t warp_exchange(unsigned mask, std::uint64_t bits, int src);
int lane_id();

template <class T>
T shuffle(unsigned mask, T v, int src) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "shuffle of a 1-8 byte value");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = warp_exchange(mask, bits, src);
  T r;
  std::memcpy(&r, &bits, sizeof(T));
  return r;
}
}  // namespace simt::detail

inline void __syncthreads() { simt::detail::block_barrier(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { simt::detail::warp_sync(mask, true); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// CUDA's rules for the source lane: within segments of `width` lanes; a source outside the
// caller's segment (xor, down, up) gives the caller's own value.
template <class T>
T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
  const int lane = simt::detail::lane_id();
  const int src = (lane & ~(width - 1)) + (src_lane & (width - 1));
  return simt::detail::shuffle(mask, v, src);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  const int lane = simt::detail::lane_id();
  int src = lane ^ lane_mask;
  if (src >= ((lane + width) & ~(width - 1))) src = lane;
  return simt::detail::shuffle(mask, v, src);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int lane = simt::detail::lane_id();
  int src = lane + static_cast<int>(delta);
  if (src >= ((lane + width) & ~(width - 1))) src = lane;
  return simt::detail::shuffle(mask, v, src);
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int lane = simt::detail::lane_id();
  int src = lane - static_cast<int>(delta);
  if (src < (lane & ~(width - 1))) src = lane;
  return simt::detail::shuffle(mask, v, src);
}

#include "simt.hpp"
