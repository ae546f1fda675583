// simt.cpp: the SIMT emulation's scheduler and runtime (see cuda_runtime.h for what it emulates).
//
// A block runs as one fiber (ucontext, with AddressSanitizer's fiber annotations) per CUDA
// thread on the launching OS thread. A fiber runs until it returns or waits (a block barrier, a
// warp sync); the scheduler then resumes a ready fiber chosen at random, and when none is ready
// it releases the block barrier if every live thread waits there, or reports a deadlock.
#include <sys/mman.h>
#include <ucontext.h>

#include <unistd.h>
#include <csetjmp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "cuda_runtime.h"
#include "simt_memory.hpp"

// getcontext returns twice, as setjmp does; GCC warns of locals it might clobber, but no caller
// of getcontext here reads a local after the second return (the fiber starts in fiber_entry).
#pragma GCC diagnostic ignored "-Wclobbered"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define SIMT_ASAN 1
#else
#define SIMT_ASAN 0
#endif

thread_local uint3 threadIdx{0, 0, 0};
thread_local uint3 blockIdx{0, 0, 0};
thread_local dim3 blockDim;
thread_local dim3 gridDim;

namespace simt {
namespace {

// ---- Process state ---------------------------------------------------------------------------
std::mutex g_mutex;  // launches, allocations, the last error
std::vector<Launch> g_launches;
std::map<std::uintptr_t, std::size_t> g_device;  // device allocations: start -> bytes
std::map<std::uintptr_t, std::size_t> g_pinned;  // cudaMallocHost: start -> bytes
Stats g_stats;
std::atomic<bool> g_dry_run{false};
thread_local cudaError_t t_last_error = cudaSuccess;
std::uint64_t g_launch_count = 0;

bool device_visible() {
  const char* e = std::getenv("ATTNLAB_SIMT_DEVICE");
  return e != nullptr && std::strcmp(e, "1") == 0;
}

cudaError_t set_error(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

std::size_t stack_bytes() {
  const char* e = std::getenv("ATTNLAB_SIMT_STACK_KIB");
  const long kib = e ? std::atol(e) : 0;
  return static_cast<std::size_t>(kib > 0 ? kib : 512) * 1024;
}

// ---- Fibers ----------------------------------------------------------------------------------
enum class State { ready, barrier, warp, done, abandoned };

struct Fiber {
  ucontext_t ctx{};
  char* stack = nullptr;  // usable part, above a guard page
  std::size_t size = 0;
  State state = State::ready;
  uint3 tid{0, 0, 0};
};

struct Warp {
  unsigned arrived = 0;
  std::uint64_t slot[32] = {};
};

struct Block {
  std::vector<Fiber>* fibers = nullptr;
  int threads = 0;
  int live = 0;
  int at_barrier = 0;
  int current = -1;
  std::vector<int> ready;
  std::vector<Warp> warps;
  std::string error;
  bool synced = false;  // a thread called a barrier or a warp intrinsic
  const std::function<void()>* body = nullptr;
  ucontext_t scheduler{};
  const void* scheduler_bottom = nullptr;
  std::size_t scheduler_size = 0;
};

thread_local Block* t_block = nullptr;
// Direct mode: the block's threads run one after another as plain calls (no fibers), for the
// blocks of a launch whose first block synchronised nowhere. A barrier or warp intrinsic there
// ends the block through t_direct_exit with t_direct_error set.
thread_local bool t_direct = false;
thread_local std::jmp_buf t_direct_exit;
thread_local const char* t_direct_error = nullptr;

[[noreturn]] void direct_sync(const char* what) {
  t_direct_error = what;
  std::longjmp(t_direct_exit, 1);
}
thread_local std::vector<Fiber> t_fibers;  // stacks kept from launch to launch

void start_switch(void** fake, const void* bottom, std::size_t size) {
#if SIMT_ASAN
  __sanitizer_start_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}
void finish_switch(void* fake, const void** bottom, std::size_t* size) {
#if SIMT_ASAN
  __sanitizer_finish_switch_fiber(fake, bottom, size);
#else
  (void)fake, (void)bottom, (void)size;
#endif
}

Fiber& current_fiber() {
  if (t_block == nullptr || t_block->current < 0) {
    std::fprintf(stderr, "simt: a barrier or warp intrinsic called outside a kernel\n");
    std::abort();
  }
  return (*t_block->fibers)[t_block->current];
}

int linear_id(const uint3& t) {
  return static_cast<int>(t.x + blockDim.x * (t.y + blockDim.y * t.z));
}

// From a fiber back to the scheduler; a finished or abandoned fiber never comes back.
void to_scheduler() {
  Block& b = *t_block;
  Fiber& f = (*b.fibers)[b.current];
  const bool dying = f.state == State::done || f.state == State::abandoned;
  void* fake = nullptr;
  start_switch(dying ? nullptr : &fake, b.scheduler_bottom, b.scheduler_size);
  swapcontext(&f.ctx, &b.scheduler);
  finish_switch(fake, &b.scheduler_bottom, &b.scheduler_size);
}

// An error in a kernel: record(what) notes it; abandon() then leaves the fiber for good. Two
// calls, so that no temporary of the message is left on the abandoned stack (never unwound).
void record(const std::string& what) {
  Block& b = *t_block;
  Fiber& f = current_fiber();
  if (b.error.empty())
    b.error = what + " (thread " + std::to_string(f.tid.x) + "," + std::to_string(f.tid.y) + "," +
              std::to_string(f.tid.z) + ")";
}
[[noreturn]] void abandon() {
  current_fiber().state = State::abandoned;
  to_scheduler();
  std::abort();  // not reached: an abandoned fiber is never resumed
}

void fiber_entry() {
  Block& b = *t_block;
  finish_switch(nullptr, &b.scheduler_bottom, &b.scheduler_size);
  (*b.body)();
  Fiber& f = (*b.fibers)[b.current];
  f.state = State::done;
  --b.live;
  to_scheduler();
  std::abort();
}

void ensure_stacks(int n) {
  const std::size_t size = stack_bytes(), page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  while (static_cast<int>(t_fibers.size()) < n) {
    void* p =
        mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "simt: cannot map a fiber stack\n");
      std::abort();
    }
    mprotect(p, page, PROT_NONE);  // a guard page: an overflowing fiber faults
    Fiber f;
    f.stack = static_cast<char*>(p) + page;
    f.size = size;
    t_fibers.push_back(f);
  }
}

// Runs one block; returns the error, empty when none.
// Runs one block in direct mode (see t_direct): its threads in a shuffled order, each to its end.
std::string run_block_direct(const std::function<void()>& body, std::mt19937_64& rng) {
  const unsigned n = blockDim.x * blockDim.y * blockDim.z;
  std::vector<unsigned> order(n);
  for (unsigned i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  t_direct = true;
  t_direct_error = nullptr;
  for (const unsigned i : order) {
    threadIdx = {i % blockDim.x, (i / blockDim.x) % blockDim.y, i / (blockDim.x * blockDim.y)};
    if (setjmp(t_direct_exit) == 0) body();
    if (t_direct_error != nullptr) break;
  }
  t_direct = false;
  if (t_direct_error == nullptr) return "";
  return std::string(t_direct_error) +
         " in a block of a launch whose first block never synchronised (the emulation runs such "
         "launches without fibers; the kernel must synchronise alike in every block)";
}

// Runs one block with a fiber per thread; returns the error, empty when none. synced: whether a
// thread called a barrier or a warp intrinsic.
std::string run_block(const std::function<void()>& body, std::mt19937_64& rng, bool& synced) {
  const int n = static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
  ensure_stacks(n);
  Block b;
  b.fibers = &t_fibers;
  b.threads = n;
  b.live = n;
  b.body = &body;
  b.warps.assign(static_cast<std::size_t>((n + 31) / 32), Warp{});
  for (int i = 0; i < n; ++i) {
    Fiber& f = t_fibers[i];
    f.state = State::ready;
    f.tid = {i % blockDim.x, (i / blockDim.x) % blockDim.y, i / (blockDim.x * blockDim.y)};
#if SIMT_ASAN
    __asan_unpoison_memory_region(f.stack, f.size);
#endif
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = f.size;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, fiber_entry, 0);
    b.ready.push_back(i);
  }
  Block* outer = t_block;
  t_block = &b;
  while (b.error.empty()) {
    if (b.ready.empty()) {
      if (b.live == 0) break;
      if (b.at_barrier == b.live) {  // every live thread waits at __syncthreads
        for (int i = 0; i < n; ++i)
          if (t_fibers[i].state == State::barrier) {
            t_fibers[i].state = State::ready;
            b.ready.push_back(i);
          }
        b.at_barrier = 0;
        continue;
      }
      int warp_waiting = 0;
      for (int i = 0; i < n; ++i) warp_waiting += t_fibers[i].state == State::warp;
      b.error = "deadlock: " + std::to_string(b.at_barrier) + " thread(s) wait at __syncthreads, " +
                std::to_string(warp_waiting) + " at a warp sync whose lanes never all arrive, " +
                std::to_string(n - b.live) + " returned";
      break;
    }
    const std::size_t pick = std::uniform_int_distribution<std::size_t>(0, b.ready.size() - 1)(rng);
    const int i = b.ready[pick];
    b.ready[pick] = b.ready.back();
    b.ready.pop_back();
    b.current = i;
    threadIdx = t_fibers[i].tid;
    void* fake = nullptr;
    start_switch(&fake, t_fibers[i].stack, t_fibers[i].size);
    swapcontext(&b.scheduler, &t_fibers[i].ctx);
    finish_switch(fake, nullptr, nullptr);
  }
  b.current = -1;
  t_block = outer;
  synced = b.synced;
  return b.error;
}

std::uint64_t launch_seed() {
  const char* e = std::getenv("ATTNLAB_SIMT_SEED");
  return e ? std::strtoull(e, nullptr, 10) : 1;
}

std::string config_error(const LaunchConfig& c) {
  const dim3 g = c.grid, t = c.block;
  const unsigned long long threads = 1ull * t.x * t.y * t.z;
  if (threads == 0 || threads > 1024 || t.x > 1024 || t.y > 1024 || t.z > 64)
    return "block (" + std::to_string(t.x) + "," + std::to_string(t.y) + "," + std::to_string(t.z) +
           ") outside the device's limits (at most 1024 threads; 1024 x 1024 x 64)";
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > kMaxGridX || g.y > kMaxGridYZ || g.z > kMaxGridYZ)
    return "grid (" + std::to_string(g.x) + "," + std::to_string(g.y) + "," + std::to_string(g.z) +
           ") outside the device's limits (1 .. 2^31 - 1 x 65535 x 65535)";
  if (c.shared_bytes > 48 * 1024) return "more than 48 KiB of dynamic shared memory";
  return "";
}

const std::map<std::uintptr_t, std::size_t>::const_iterator find_in(
    const std::map<std::uintptr_t, std::size_t>& m, const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = m.upper_bound(a);
  if (it == m.begin()) return m.end();
  --it;
  return a < it->first + std::max<std::size_t>(it->second, 1) ? it : m.end();
}

}  // namespace

// ---- Launches --------------------------------------------------------------------------------
std::vector<Launch> launches() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_launches;
}
void clear_launches() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_launches.clear();
}
void set_dry_run(bool on) { g_dry_run = on; }
bool dry_run() { return g_dry_run; }

Stats stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_stats;
}
void clear_stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_stats = Stats{};
}

namespace detail {

void run_grid(const LaunchConfig& c, const std::function<void()>& thread) {
  Launch rec{c.name, c.grid, c.block, c.shared_bytes, false};
  const std::string bad = config_error(c);
  std::uint64_t seed;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    seed = launch_seed() * 0x9e3779b97f4a7c15ull + ++g_launch_count;
    rec.ran = bad.empty() && device_visible() && !g_dry_run;
    g_launches.push_back(rec);
  }
  if (!device_visible()) {
    set_error(cudaErrorNoDevice);
    return;
  }
  if (!bad.empty()) {
    std::fprintf(stderr, "simt: launch of %s refused: %s\n", c.name, bad.c_str());
    set_error(cudaErrorInvalidConfiguration);
    return;
  }
  if (!rec.ran) return;
  // Blocks in a shuffled order: a kernel that assumes an order between blocks fails.
  const std::uint64_t blocks = 1ull * c.grid.x * c.grid.y * c.grid.z;
  std::vector<std::uint64_t> order(blocks);
  for (std::uint64_t i = 0; i < blocks; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  const dim3 saved_dim = blockDim, saved_grid = gridDim;
  const uint3 saved_block = blockIdx, saved_thread = threadIdx;
  blockDim = c.block;
  gridDim = c.grid;
  bool fibers = true;
  for (const std::uint64_t i : order) {
    blockIdx = {static_cast<unsigned>(i % c.grid.x),
                static_cast<unsigned>((i / c.grid.x) % c.grid.y),
                static_cast<unsigned>(i / (1ull * c.grid.x * c.grid.y))};
    // The first block with fibers; the rest too if it synchronised, else as plain calls.
    bool synced = false;
    const std::string error =
        fibers ? run_block(thread, rng, synced) : run_block_direct(thread, rng);
    if (i == order.front()) fibers = synced;
    if (!error.empty()) {
      std::fprintf(stderr, "simt: kernel %s, block (%u,%u,%u): %s\n", c.name, blockIdx.x,
                   blockIdx.y, blockIdx.z, error.c_str());
      set_error(cudaErrorLaunchFailure);
      break;
    }
  }
  blockDim = saved_dim;
  gridDim = saved_grid;
  blockIdx = saved_block;
  threadIdx = saved_thread;
}

void block_barrier() {
  if (t_direct) direct_sync("__syncthreads");
  t_block->synced = true;
  Fiber& f = current_fiber();
  f.state = State::barrier;
  ++t_block->at_barrier;
  to_scheduler();
}

int lane_id() { return linear_id(threadIdx) % 32; }

void warp_sync(unsigned mask) {
  if (t_direct) direct_sync("a warp intrinsic");
  t_block->synced = true;
  Block& b = *t_block;
  Fiber& f = current_fiber();
  const int id = linear_id(f.tid), w = id / 32, lane = id % 32;
  if ((mask >> lane & 1u) == 0) {
    record("warp sync with mask " + std::to_string(mask) + " that leaves out the calling lane " +
           std::to_string(lane));
    abandon();
  }
  for (int l = 0; l < 32; ++l) {
    if ((mask >> l & 1u) == 0) continue;
    const int t = w * 32 + l;
    if (t >= b.threads) {
      record("warp sync with mask " + std::to_string(mask) + " naming lane " + std::to_string(l) +
             ", which does not exist (block of " + std::to_string(b.threads) + " threads)");
      abandon();
    }
    if ((*b.fibers)[t].state == State::done) {
      record("warp sync naming lane " + std::to_string(l) + ", which has returned");
      abandon();
    }
  }
  Warp& wp = b.warps[w];
  wp.arrived |= 1u << lane;
  if ((wp.arrived & mask) == mask) {  // the last lane to arrive releases the others
    wp.arrived &= ~mask;
    for (int l = 0; l < 32; ++l) {
      const int t = w * 32 + l;
      if (l != lane && (mask >> l & 1u) && (*b.fibers)[t].state == State::warp) {
        (*b.fibers)[t].state = State::ready;
        b.ready.push_back(t);
      }
    }
    return;
  }
  f.state = State::warp;
  to_scheduler();
}

std::uint64_t warp_exchange(unsigned mask, std::uint64_t bits, int src) {
  if (t_direct) direct_sync("a warp shuffle");
  Block& b = *t_block;
  const int id = linear_id(current_fiber().tid), w = id / 32;
  b.warps[w].slot[id % 32] = bits;
  warp_sync(mask);
  if (src < 0 || src > 31 || (mask >> src & 1u) == 0) {
    record("shuffle from lane " + std::to_string(src) + ", outside the mask " +
           std::to_string(mask));
    abandon();
  }
  const std::uint64_t r = b.warps[w].slot[src];
  warp_sync(mask);  // no lane offers its next value before every lane has read this one
  return r;
}

cudaError_t func_attributes(cudaFuncAttributes* attr, const void* fn) {
  if (attr == nullptr || fn == nullptr) return set_error(cudaErrorInvalidValue);
  if (!device_visible()) return set_error(cudaErrorNoDevice);
  *attr = cudaFuncAttributes{};
  attr->maxThreadsPerBlock = 1024;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  return cudaSuccess;
}

std::string device_range(const void* p, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = find_in(g_device, p);
  if (it == g_device.end())
    return "address " + std::to_string(reinterpret_cast<std::uintptr_t>(p)) +
           " is not in device memory";
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (a + bytes > it->first + it->second)
    return std::to_string(bytes) + " bytes at offset " + std::to_string(a - it->first) +
           " run past the end of a device allocation of " + std::to_string(it->second) + " bytes";
  return "";
}

bool is_device(const void* p) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return find_in(g_device, p) != g_device.end();
}

}  // namespace detail
}  // namespace simt

// ---- The runtime API -------------------------------------------------------------------------
using simt::set_error;

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return set_error(cudaErrorInvalidValue);
  *count = simt::device_visible() ? 1 : 0;
  return simt::device_visible() ? cudaSuccess : set_error(cudaErrorNoDevice);
}
cudaError_t cudaSetDevice(int device) {
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  return device == 0 ? cudaSuccess : set_error(cudaErrorInvalidDevice);
}
cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return set_error(cudaErrorInvalidValue);
  *device = 0;
  return simt::device_visible() ? cudaSuccess : set_error(cudaErrorNoDevice);
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (p == nullptr) return set_error(cudaErrorInvalidValue);
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof p->name, "%s", "SIMT emulation of an NVIDIA H200");
  p->totalGlobalMem = std::size_t{141} << 30;
  p->sharedMemPerBlock = 48 * 1024;
  p->regsPerBlock = simt::kRegistersPerBlock;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = static_cast<int>(simt::kMaxGridX);
  p->maxGridSize[1] = static_cast<int>(simt::kMaxGridYZ);
  p->maxGridSize[2] = static_cast<int>(simt::kMaxGridYZ);
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = simt::kMultiprocessors;
  p->maxThreadsPerMultiProcessor = simt::kThreadsPerMultiprocessor;
  p->regsPerMultiprocessor = 65536;
  p->sharedMemPerMultiprocessor = 228 * 1024;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return set_error(cudaErrorInvalidValue);
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  if (device != 0) return set_error(cudaErrorInvalidDevice);
  *value = attr == cudaDevAttrMultiProcessorCount ? simt::kMultiprocessors : cudaComputeModeDefault;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  if (v == nullptr) return set_error(cudaErrorInvalidValue);
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  if (v == nullptr) return set_error(cudaErrorInvalidValue);
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  return simt::device_visible() ? cudaSuccess : set_error(cudaErrorNoDevice);
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = simt::t_last_error;
  simt::t_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return simt::t_last_error; }
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    default:
      return "cudaError";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    default:
      return "unknown error";
  }
}

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) {
  if (ptr == nullptr) return set_error(cudaErrorInvalidValue);
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  void* p = std::malloc(bytes > 0 ? bytes : 1);
  if (p == nullptr) return set_error(cudaErrorMemoryAllocation);
  std::memset(p, 0xff, bytes);  // uninitialised device memory: NaN in every float and double
  std::lock_guard<std::mutex> lock(simt::g_mutex);
  simt::g_device[reinterpret_cast<std::uintptr_t>(p)] = bytes;
  ++simt::g_stats.device_allocations;
  simt::g_stats.device_bytes_allocated += bytes;
  *ptr = p;
  return cudaSuccess;
}
cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return simt::device_visible() ? cudaSuccess : set_error(cudaErrorNoDevice);
  {
    std::lock_guard<std::mutex> lock(simt::g_mutex);
    const auto it = simt::g_device.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == simt::g_device.end()) return set_error(cudaErrorInvalidValue);
    simt::g_device.erase(it);
  }
  std::free(ptr);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** ptr, std::size_t bytes) {
  if (ptr == nullptr) return set_error(cudaErrorInvalidValue);
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  void* p = std::malloc(bytes > 0 ? bytes : 1);
  if (p == nullptr) return set_error(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(simt::g_mutex);
  simt::g_pinned[reinterpret_cast<std::uintptr_t>(p)] = bytes;
  ++simt::g_stats.pinned_allocations;
  *ptr = p;
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void** ptr, std::size_t bytes, unsigned) {
  return cudaMallocHost(ptr, bytes);
}
cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(simt::g_mutex);
    const auto it = simt::g_pinned.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == simt::g_pinned.end()) return set_error(cudaErrorInvalidValue);
    simt::g_pinned.erase(it);
  }
  std::free(ptr);
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  if (free_bytes) *free_bytes = std::size_t{140} << 30;
  if (total_bytes) *total_bytes = std::size_t{141} << 30;
  return cudaSuccess;
}

namespace {
// The copy's sides: device ranges inside one allocation, host ranges in none.
cudaError_t check_side(const void* p, std::size_t bytes, bool device, const char* side) {
  if (device) {
    const std::string why = simt::detail::device_range(p, bytes);
    if (why.empty()) return cudaSuccess;
    std::fprintf(stderr, "simt: cudaMemcpy %s: %s\n", side, why.c_str());
    return set_error(cudaErrorInvalidValue);
  }
  if (simt::detail::is_device(p)) {
    std::fprintf(stderr, "simt: cudaMemcpy %s: a device address where host memory is named\n",
                 side);
    return set_error(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}
bool is_pinned(const void* p) {
  std::lock_guard<std::mutex> lock(simt::g_mutex);
  return simt::find_in(simt::g_pinned, p) != simt::g_pinned.end();
}
}  // namespace

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return set_error(cudaErrorInvalidValue);
  if (kind == cudaMemcpyDefault) {
    kind = simt::detail::is_device(src)
               ? (simt::detail::is_device(dst) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
               : (simt::detail::is_device(dst) ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  }
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  if (const cudaError_t e = check_side(dst, bytes, dst_dev, "destination")) return e;
  if (const cudaError_t e = check_side(src, bytes, src_dev, "source")) return e;
  std::memmove(dst, src, bytes);
  const bool pinned = src_dev != dst_dev && is_pinned(src_dev ? dst : src);
  std::lock_guard<std::mutex> lock(simt::g_mutex);
  if (src_dev != dst_dev) {
    (pinned ? simt::g_stats.pinned_copy_bytes : simt::g_stats.pageable_copy_bytes) += bytes;
  }
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes) {
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  if (bytes == 0) return cudaSuccess;
  if (const cudaError_t e = check_side(ptr, bytes, true, "memset")) return e;
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t) {
  return cudaMemset(ptr, value, bytes);
}

// Streams and events: every operation completes when issued, so they only need to exist.
struct CUstream_st {
  int magic = 0x5157;
};
struct CUevent_st {
  bool recorded = false;
};
cudaError_t cudaStreamCreate(cudaStream_t* s) {
  if (s == nullptr) return set_error(cudaErrorInvalidValue);
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  *s = new CUstream_st;
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { return cudaStreamCreate(s); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (s == nullptr) return set_error(cudaErrorInvalidResourceHandle);
  delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaDeviceSynchronize(); }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t e, unsigned) {
  return e != nullptr ? cudaSuccess : set_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  if (e == nullptr) return set_error(cudaErrorInvalidValue);
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  *e = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (e == nullptr) return set_error(cudaErrorInvalidResourceHandle);
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  if (e == nullptr) return set_error(cudaErrorInvalidResourceHandle);
  e->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return e != nullptr ? cudaSuccess : set_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (ms == nullptr || a == nullptr || b == nullptr || !a->recorded || !b->recorded)
    return set_error(cudaErrorInvalidResourceHandle);
  *ms = 0;  // the emulation keeps no device clock
  return cudaSuccess;
}
