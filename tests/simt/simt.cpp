// simt.cpp: the SIMT emulation's scheduler and runtime (see cuda_runtime.h for what it emulates).
//
// A block runs as one fiber (ucontext, with AddressSanitizer's fiber annotations) per CUDA
// thread on the OS thread that runs the device's work. A fiber runs until it returns or waits (a
// block barrier, a warp sync, and in the race check every access to a shared array); the scheduler
// then resumes a ready fiber chosen at random, and when none is ready it releases the block barrier
// if every live thread waits there, or reports a deadlock.
//
// Device work (launches, copies, memsets, cuBLAS calls, event records) is queued as operations,
// each depending on the previous one of its stream and on what CUDA orders before it (the legacy
// default stream and the blocking streams wait for each other; an event wait), and runs only
// when something waits for it: then the operations it needs run, in a random order that keeps
// those dependencies, and nothing else. Device memory is poisoned for AddressSanitizer except
// while device work runs.
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
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
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

// ---- Device work: operations, streams, events ------------------------------------------------
namespace simt::queue {
// One operation of the device (a grid, a copy, a memset, a cuBLAS call, an event's record): it
// runs once every operation it depends on has run.
struct Op {
  std::string what;
  std::function<std::string()> run;  // empty error text, or the fault it met; cleared once run
  cudaError_t fault = cudaErrorLaunchFailure;  // what a fault is reported as
  std::vector<std::shared_ptr<Op>> deps;
  bool done = false;
};
using OpPtr = std::shared_ptr<Op>;
}  // namespace simt::queue

struct CUstream_st {
  bool blocking = true;  // false: created with cudaStreamNonBlocking
  simt::queue::OpPtr last;
};
struct CUevent_st {
  simt::queue::OpPtr op;  // the last record's operation (null before the first record)
};

namespace simt {
namespace {

// ---- Process state ---------------------------------------------------------------------------
std::mutex g_mutex;  // launches, allocations, streams and the queue
std::mutex g_exec;   // device work runs on one OS thread at a time (the one that waits for it)
std::vector<Launch> g_launches;
std::map<std::uintptr_t, std::size_t> g_device;           // device allocations: start -> bytes
std::map<std::uintptr_t, std::size_t> g_pinned;           // cudaMallocHost: start -> bytes
std::map<const void*, std::size_t> g_max_dynamic_shared;  // cudaFuncSetAttribute's opt-in
Stats g_stats;
std::atomic<bool> g_dry_run{false};
thread_local cudaError_t t_last_error = cudaSuccess;
std::uint64_t g_launch_count = 0, g_wait_count = 0;
CUstream_st g_legacy;               // the legacy default stream (stream 0)
std::set<CUstream_st*> g_streams;   // streams created and not destroyed
std::vector<queue::OpPtr> g_queue;  // operations issued and not run, in issue order

bool env_is(const char* name, const char* value) {
  const char* e = std::getenv(name);
  return e != nullptr && std::strcmp(e, value) == 0;
}
bool device_visible() { return env_is("ATTNLAB_SIMT_DEVICE", "1"); }
std::atomic<bool> g_race_check{env_is("ATTNLAB_SIMT_RACECHECK", "1")};

cudaError_t set_error(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

std::size_t stack_bytes() {
  const char* e = std::getenv("ATTNLAB_SIMT_STACK_KIB");
  const long kib = e ? std::atol(e) : 0;
  return static_cast<std::size_t>(kib > 0 ? kib : 512) * 1024;
}

std::uint64_t seed_base() {
  const char* e = std::getenv("ATTNLAB_SIMT_SEED");
  return (e ? std::strtoull(e, nullptr, 10) : 1) * 0x9e3779b97f4a7c15ull;
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
  // __syncwarp()s of the whole warp so far in this block: an access made in an earlier epoch
  // is ordered before every access of the warp's lanes now (the race check).
  std::uint64_t epoch = 0;
};

// The race check's record of one shared-memory element since the last barrier: the thread that
// wrote it and up to two threads that read it (two different readers conflict with any writer),
// each with its warp's epoch at the access.
struct Access {
  int writer = -1, reader = -1, other_reader = -1;
  std::uint64_t writer_epoch = 0, reader_epoch = 0, other_epoch = 0;
};

struct Block {
  std::vector<Fiber>* fibers = nullptr;
  int threads = 0;
  int live = 0;
  int at_barrier = 0;
  int current = -1;
  std::vector<int> ready;
  std::vector<Warp> warps;
  std::unordered_map<std::uintptr_t, Access> accesses;  // race check, since the last barrier
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
// The running launch's dynamic shared memory.
thread_local unsigned char* t_dynamic = nullptr;
thread_local std::size_t t_dynamic_bytes = 0;

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
        b.accesses.clear();  // the barrier orders every access before it
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

std::string config_error(const LaunchConfig& c, std::size_t max_dynamic_shared) {
  const dim3 g = c.grid, t = c.block;
  const unsigned long long threads = 1ull * t.x * t.y * t.z;
  if (threads == 0 || threads > 1024 || t.x > 1024 || t.y > 1024 || t.z > 64)
    return "block (" + std::to_string(t.x) + "," + std::to_string(t.y) + "," + std::to_string(t.z) +
           ") outside the device's limits (at most 1024 threads; 1024 x 1024 x 64)";
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > kMaxGridX || g.y > kMaxGridYZ || g.z > kMaxGridYZ)
    return "grid (" + std::to_string(g.x) + "," + std::to_string(g.y) + "," + std::to_string(g.z) +
           ") outside the device's limits (1 .. 2^31 - 1 x 65535 x 65535)";
  if (c.shared_bytes > max_dynamic_shared)
    return std::to_string(c.shared_bytes) + " bytes of dynamic shared memory, more than the " +
           std::to_string(max_dynamic_shared) +
           " the kernel may ask for (48 KiB, or up to 227 KiB after cudaFuncSetAttribute with "
           "cudaFuncAttributeMaxDynamicSharedMemorySize)";
  return "";
}

// Runs a queued grid: its blocks in a shuffled order; the first block's error, empty when none.
std::string execute_grid(const LaunchConfig& c, const std::function<void()>& thread,
                         std::uint64_t seed) {
  const std::uint64_t blocks = 1ull * c.grid.x * c.grid.y * c.grid.z;
  std::vector<std::uint64_t> order(blocks);
  for (std::uint64_t i = 0; i < blocks; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  // Dynamic shared memory: one buffer for the launch, garbage (NaN bytes) at the start.
  std::vector<unsigned char> dynamic(c.shared_bytes, 0xff);
  t_dynamic = dynamic.data();
  t_dynamic_bytes = dynamic.size();
  const dim3 saved_dim = blockDim, saved_grid = gridDim;
  const uint3 saved_block = blockIdx, saved_thread = threadIdx;
  blockDim = c.block;
  gridDim = c.grid;
  bool fibers = true;
  std::string error;
  for (const std::uint64_t i : order) {
    blockIdx = {static_cast<unsigned>(i % c.grid.x),
                static_cast<unsigned>((i / c.grid.x) % c.grid.y),
                static_cast<unsigned>(i / (1ull * c.grid.x * c.grid.y))};
    // The first block with fibers; the rest too if it synchronised (or in the race check),
    // else as plain calls.
    bool synced = false;
    error = fibers ? run_block(thread, rng, synced) : run_block_direct(thread, rng);
    if (i == order.front()) fibers = synced || g_race_check;
    if (!error.empty()) {
      error = "block (" + std::to_string(blockIdx.x) + "," + std::to_string(blockIdx.y) + "," +
              std::to_string(blockIdx.z) + "): " + error;
      break;
    }
  }
  blockDim = saved_dim;
  gridDim = saved_grid;
  blockIdx = saved_block;
  threadIdx = saved_thread;
  t_dynamic = nullptr;
  t_dynamic_bytes = 0;
  return error;
}

const std::map<std::uintptr_t, std::size_t>::const_iterator find_in(
    const std::map<std::uintptr_t, std::size_t>& m, const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = m.upper_bound(a);
  if (it == m.begin()) return m.end();
  --it;
  return a < it->first + std::max<std::size_t>(it->second, 1) ? it : m.end();
}

// ---- The queue -------------------------------------------------------------------------------
CUstream_st* stream_of(cudaStream_t s) { return s == nullptr ? &g_legacy : s; }

// Issues an operation on stream s (under g_mutex): after the previous one of s; the legacy
// stream's after the last of every blocking stream, a blocking stream's after the legacy
// stream's last; after `also` too, when given (an event waited for).
queue::OpPtr enqueue_locked(CUstream_st* s, std::string what, std::function<std::string()> run,
                            cudaError_t fault = cudaErrorLaunchFailure,
                            const queue::OpPtr& also = nullptr) {
  auto op = std::make_shared<queue::Op>();
  op->what = std::move(what);
  op->run = std::move(run);
  op->fault = fault;
  const auto after = [&op](const queue::OpPtr& d) {
    if (d != nullptr && !d->done) op->deps.push_back(d);
  };
  after(s->last);
  if (s == &g_legacy) {
    for (CUstream_st* b : g_streams)
      if (b->blocking) after(b->last);
  } else if (s->blocking) {
    after(g_legacy.last);
  }
  after(also);
  s->last = op;
  g_queue.push_back(op);
  return op;
}
queue::OpPtr enqueue(cudaStream_t s, std::string what, std::function<std::string()> run,
                     cudaError_t fault = cudaErrorLaunchFailure,
                     const queue::OpPtr& also = nullptr) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return enqueue_locked(stream_of(s), std::move(what), std::move(run), fault, also);
}

// Device memory is poisoned for AddressSanitizer except while device work runs (under g_exec),
// so that a host access to it is reported (use-after-poison), as a device pointer dereferenced
// on the host would fault.
void poison_device_memory(bool poison) {
#if SIMT_ASAN
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const auto& [start, bytes] : g_device) {
    void* p = reinterpret_cast<void*>(start);
    if (poison)
      __asan_poison_memory_region(p, bytes);
    else
      __asan_unpoison_memory_region(p, bytes);
  }
#else
  (void)poison;
#endif
}

// Runs every operation that `targets` need and have not run, in a random order that keeps their
// dependencies; work that none of them needs stays queued. The first fault becomes the result.
cudaError_t run_until(const std::vector<queue::OpPtr>& targets) {
  std::lock_guard<std::mutex> exec(g_exec);
  std::vector<queue::OpPtr> todo;
  std::uint64_t seed;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    std::vector<queue::OpPtr> stack(targets.begin(), targets.end());
    std::set<const queue::Op*> seen;
    while (!stack.empty()) {
      queue::OpPtr op = std::move(stack.back());
      stack.pop_back();
      if (op == nullptr || op->done || !seen.insert(op.get()).second) continue;
      for (const queue::OpPtr& d : op->deps) stack.push_back(d);
      todo.push_back(std::move(op));
    }
    seed = seed_base() + 0x5851f42d4c957f2dull * ++g_wait_count;
  }
  if (todo.empty()) return cudaSuccess;
  std::mt19937_64 rng(seed);
  cudaError_t result = cudaSuccess;
  poison_device_memory(false);
  while (!todo.empty()) {
    std::vector<std::size_t> ready;
    for (std::size_t i = 0; i < todo.size(); ++i)
      if (std::all_of(todo[i]->deps.begin(), todo[i]->deps.end(),
                      [](const queue::OpPtr& d) { return d->done; }))
        ready.push_back(i);
    const std::size_t pick =
        ready[std::uniform_int_distribution<std::size_t>(0, ready.size() - 1)(rng)];
    queue::OpPtr op = std::move(todo[pick]);
    todo[pick] = std::move(todo.back());
    todo.pop_back();
    const std::string error = op->run ? op->run() : "";
    if (!error.empty()) {
      std::fprintf(stderr, "simt: %s: %s\n", op->what.c_str(), error.c_str());
      if (result == cudaSuccess) result = op->fault;
    }
    std::lock_guard<std::mutex> lock(g_mutex);
    op->done = true;
    op->run = nullptr;
    op->deps.clear();
  }
  poison_device_memory(true);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_queue.erase(std::remove_if(g_queue.begin(), g_queue.end(),
                                 [](const queue::OpPtr& op) { return op->done; }),
                  g_queue.end());
  }
  return set_error(result);
}
cudaError_t run_until(const queue::OpPtr& target) {
  return run_until(std::vector<queue::OpPtr>{target});
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
void set_race_check(bool on) { g_race_check = on; }
bool race_check() { return g_race_check; }

Stats stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_stats;
}
void clear_stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_stats = Stats{};
}

[[noreturn]] void shared_index_error(const char* array, std::size_t index, std::size_t size) {
  if (t_block != nullptr && t_block->current >= 0) {
    record(std::string("index ") + std::to_string(index) + " outside " + array + " of " +
           std::to_string(size) + " elements");
    abandon();
  }
  if (t_direct) direct_sync("an index outside a __shared__ array");
  std::fprintf(stderr, "simt: index %zu outside %s of %zu elements\n", index, array, size);
  std::abort();
}

namespace detail {

void launch_grid(const void* kernel, const LaunchConfig& c, std::function<void()> thread,
                 const std::string& bad_argument) {
  Launch rec{c.name, c.grid, c.block, c.shared_bytes, false};
  std::uint64_t seed;
  std::string bad;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = g_max_dynamic_shared.find(kernel);
    bad = config_error(c, it != g_max_dynamic_shared.end() ? it->second : 48 * 1024);
    seed = seed_base() + ++g_launch_count;
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
  const std::string what = std::string("kernel ") + c.name;
  if (!bad_argument.empty()) {
    // A device faults where the kernel dereferences such a pointer: reported when it runs.
    simt::enqueue(
        c.stream, what, [bad_argument] { return bad_argument; }, cudaErrorIllegalAddress);
    return;
  }
  simt::enqueue(c.stream, what,
                [c, thread = std::move(thread), seed] { return execute_grid(c, thread, seed); });
}

std::string kernel_pointer_error(const void* p) {
  if (p == nullptr) return "";
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_device.upper_bound(a);
  if (it != g_device.begin() && a <= std::prev(it)->first + std::prev(it)->second) return "";
  char where[32];
  std::snprintf(where, sizeof where, "%p", p);
  if (find_in(g_pinned, p) != g_pinned.end())
    return std::string("page-locked host memory at ") + where +
           " (reached by a kernel only as mapped zero-copy memory, one PCIe transfer per load: "
           "copy it to device memory)";
  return std::string("host memory at ") + where + ", which a kernel cannot reach";
}

void enqueue(cudaStream_t stream, const std::string& what, std::function<std::string()> run) {
  simt::enqueue(stream, what, std::move(run));
}

void begin_host_system() {
  queue::OpPtr marker = simt::enqueue(nullptr, "a Thrust algorithm", {});
  run_until(marker);
  g_exec.lock();
  poison_device_memory(false);
}
void end_host_system() {
  poison_device_memory(true);
  g_exec.unlock();
}

void shared_access(const void* p, std::size_t bytes, bool write, const char* array) {
  (void)bytes;
  if (!g_race_check || t_direct || t_block == nullptr || t_block->current < 0) return;
  Block& b = *t_block;
  const int t = linear_id(current_fiber().tid);
  const std::uint64_t now = b.warps[t / 32].epoch;
  Access& a = b.accesses[reinterpret_cast<std::uintptr_t>(p)];
  // Thread u's access in its warp's epoch `at` conflicts with this one unless u is this thread
  // or a lane of this warp that made it before a __syncwarp() of the whole warp since.
  const auto other = [t, now](int u, std::uint64_t at) {
    return u >= 0 && u != t && !(u / 32 == t / 32 && at < now);
  };
  int conflict = -1;
  const char* kind = nullptr;
  if (write && other(a.writer, a.writer_epoch)) {
    conflict = a.writer, kind = " wrote";
  } else if (write && (other(a.reader, a.reader_epoch) || other(a.other_reader, a.other_epoch))) {
    conflict = other(a.reader, a.reader_epoch) ? a.reader : a.other_reader, kind = " read";
  } else if (!write && other(a.writer, a.writer_epoch)) {
    conflict = a.writer, kind = " wrote";
  }
  if (kind != nullptr) {
    record(std::string("racecheck: thread ") + std::to_string(t) + (write ? " writes" : " reads") +
           " an element of " + array + " that thread " + std::to_string(conflict) + kind +
           " since the last barrier (a shared-memory race)");
    abandon();
  }
  if (write) {  // every earlier access is ordered before it, or this one conflicted
    a = Access{};
    a.writer = t, a.writer_epoch = now;
  } else if (a.reader < 0 || a.reader == t || !other(a.reader, a.reader_epoch)) {
    a.reader = t, a.reader_epoch = now;
  } else if (a.other_reader < 0 || a.other_reader == t || !other(a.other_reader, a.other_epoch)) {
    a.other_reader = t, a.other_epoch = now;
  }
  // Another thread may run before this access: the race check interleaves threads here.
  current_fiber().state = State::ready;
  b.ready.push_back(b.current);
  to_scheduler();
}

void* dynamic_shared(std::size_t bytes) {
  if (bytes > t_dynamic_bytes) {
    if (t_block != nullptr && t_block->current >= 0) {
      record(std::to_string(bytes) + " bytes of dynamic shared memory used, the launch gave " +
             std::to_string(t_dynamic_bytes));
      abandon();
    }
    if (t_direct) direct_sync("dynamic shared memory past the launch's bytes");
    std::fprintf(stderr, "simt: %zu bytes of dynamic shared memory used, the launch gave %zu\n",
                 bytes, t_dynamic_bytes);
    std::abort();
  }
  return t_dynamic;
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

void warp_sync(unsigned mask, bool orders) {
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
    // A __syncwarp() of every lane of the warp orders their shared-memory accesses (CUDA's
    // memory ordering among the participating threads); a shuffle or part of a warp does not,
    // for the race check.
    const int lanes = std::min(32, b.threads - w * 32);
    if (orders && mask == (lanes == 32 ? ~0u : (1u << lanes) - 1u)) ++wp.epoch;
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
  warp_sync(mask, false);
  if (src < 0 || src > 31 || (mask >> src & 1u) == 0) {
    record("shuffle from lane " + std::to_string(src) + ", outside the mask " +
           std::to_string(mask));
    abandon();
  }
  const std::uint64_t r = b.warps[w].slot[src];
  warp_sync(mask, false);  // no lane offers its next value before every lane has read this one
  return r;
}

cudaError_t func_attributes(cudaFuncAttributes* attr, const void* fn) {
  if (attr == nullptr || fn == nullptr) return set_error(cudaErrorInvalidValue);
  if (!device_visible()) return set_error(cudaErrorNoDevice);
  *attr = cudaFuncAttributes{};
  attr->maxThreadsPerBlock = 1024;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_max_dynamic_shared.find(fn);
  attr->maxDynamicSharedSizeBytes =
      static_cast<int>(it != g_max_dynamic_shared.end() ? it->second : 48 * 1024);
  return cudaSuccess;
}

cudaError_t func_set_attribute(const void* fn, cudaFuncAttribute attr, int value) {
  if (fn == nullptr) return set_error(cudaErrorInvalidDeviceFunction);
  if (!device_visible()) return set_error(cudaErrorNoDevice);
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 ||
      value > simt::kSharedPerBlockOptin)
    return set_error(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_max_dynamic_shared[fn] = static_cast<std::size_t>(value);
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
  *value = attr == cudaDevAttrMultiProcessorCount            ? simt::kMultiprocessors
           : attr == cudaDevAttrMaxSharedMemoryPerBlockOptin ? simt::kSharedPerBlockOptin
                                                             : cudaComputeModeDefault;
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
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  std::vector<simt::queue::OpPtr> all;
  {
    std::lock_guard<std::mutex> lock(simt::g_mutex);
    all = simt::g_queue;
  }
  return simt::run_until(all);
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
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
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
    case cudaErrorNotReady:
      return "device not ready";
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
#if SIMT_ASAN
  __asan_poison_memory_region(p, bytes);  // open to device work only
#endif
  std::lock_guard<std::mutex> lock(simt::g_mutex);
  simt::g_device[reinterpret_cast<std::uintptr_t>(p)] = bytes;
  ++simt::g_stats.device_allocations;
  simt::g_stats.device_bytes_allocated += bytes;
  *ptr = p;
  return cudaSuccess;
}
// Frees at once, without waiting for queued work (CUDA says cudaFree may synchronise, not that
// it does): work still queued on the memory then touches freed memory, which AddressSanitizer
// reports.
cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return simt::device_visible() ? cudaSuccess : set_error(cudaErrorNoDevice);
  std::size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(simt::g_mutex);
    const auto it = simt::g_device.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == simt::g_device.end()) return set_error(cudaErrorInvalidValue);
    bytes = it->second;
    simt::g_device.erase(it);
  }
#if SIMT_ASAN
  __asan_unpoison_memory_region(ptr, bytes);
#endif
  (void)bytes;
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

// A copy of either API, checked and counted, queued on `stream`. How long the host waits is
// CUDA's (the runtime API's "API synchronization behavior"): a synchronous copy returns when it
// is done, except between two device addresses; an asynchronous one at once when its host side is
// page-locked, else as the synchronous one (after the stream's earlier work, for a pageable
// source).
cudaError_t copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                 cudaStream_t stream, bool async) {
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
  const bool pinned = src_dev != dst_dev && is_pinned(src_dev ? dst : src);
  {
    std::lock_guard<std::mutex> lock(simt::g_mutex);
    if (src_dev != dst_dev)
      (pinned ? simt::g_stats.pinned_copy_bytes : simt::g_stats.pageable_copy_bytes) += bytes;
  }
  const bool device_to_device = src_dev && dst_dev;
  const bool host_waits = async ? !(device_to_device || pinned) : !device_to_device;
  if (async && host_waits && !src_dev) {
    // From pageable memory: after the stream's earlier work, as CUDA stages it.
    if (const cudaError_t e = cudaStreamSynchronize(stream)) return e;
  }
  const char* what = src_dev ? (dst_dev ? "device-to-device copy" : "device-to-host copy")
                             : (dst_dev ? "host-to-device copy" : "host-to-host copy");
  const simt::queue::OpPtr op = simt::enqueue(stream, what, [dst, src, bytes] {
    std::memmove(dst, src, bytes);
    return std::string();
  });
  return host_waits ? simt::run_until(op) : cudaSuccess;
}
}  // namespace

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  return copy(dst, src, bytes, kind, nullptr, false);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return copy(dst, src, bytes, kind, stream, true);
}
// Asynchronous for device memory, in either API: queued on the stream (the legacy one for
// cudaMemset).
cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t stream) {
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  if (bytes == 0) return cudaSuccess;
  if (const cudaError_t e = check_side(ptr, bytes, true, "memset")) return e;
  simt::enqueue(stream, "memset", [ptr, value, bytes] {
    std::memset(ptr, value, bytes);
    return std::string();
  });
  return cudaSuccess;
}
cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes) {
  return cudaMemsetAsync(ptr, value, bytes, nullptr);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  if (s == nullptr) return set_error(cudaErrorInvalidValue);
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  *s = new CUstream_st;
  (*s)->blocking = (flags & cudaStreamNonBlocking) == 0;
  std::lock_guard<std::mutex> lock(simt::g_mutex);
  simt::g_streams.insert(*s);
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) {
  return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}
// The stream's queued work stays queued (it runs when waited for through the device or an
// event), as CUDA releases a stream once its work is done.
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (s == nullptr) return set_error(cudaErrorInvalidResourceHandle);
  {
    std::lock_guard<std::mutex> lock(simt::g_mutex);
    if (simt::g_streams.erase(s) == 0) return set_error(cudaErrorInvalidResourceHandle);
  }
  delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (!simt::device_visible()) return set_error(cudaErrorNoDevice);
  simt::queue::OpPtr last;
  {
    std::lock_guard<std::mutex> lock(simt::g_mutex);
    last = simt::stream_of(s)->last;
  }
  return simt::run_until(last);
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
  if (e == nullptr) return set_error(cudaErrorInvalidResourceHandle);
  simt::queue::OpPtr recorded;
  {
    std::lock_guard<std::mutex> lock(simt::g_mutex);
    recorded = e->op;
  }
  simt::enqueue(s, "an event wait", {}, cudaErrorLaunchFailure, recorded);
  return cudaSuccess;
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
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (e == nullptr) return set_error(cudaErrorInvalidResourceHandle);
  simt::queue::OpPtr op = simt::enqueue(s, "an event record", {});
  std::lock_guard<std::mutex> lock(simt::g_mutex);
  e->op = std::move(op);
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (e == nullptr) return set_error(cudaErrorInvalidResourceHandle);
  simt::queue::OpPtr op;
  {
    std::lock_guard<std::mutex> lock(simt::g_mutex);
    op = e->op;
  }
  return simt::run_until(op);
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (ms == nullptr || a == nullptr || b == nullptr) return set_error(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(simt::g_mutex);
  if (a->op == nullptr || b->op == nullptr) return set_error(cudaErrorInvalidResourceHandle);
  if (!a->op->done || !b->op->done) return set_error(cudaErrorNotReady);
  *ms = 0;  // the emulation keeps no device clock
  return cudaSuccess;
}
