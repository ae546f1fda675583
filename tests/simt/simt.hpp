// simt.hpp: kernel launches for the SIMT emulation (see cuda_runtime.h beside it), the streams
// that defer them, shared memory as the race check sees it, and the record of every launch that
// tests read.
//
// tests/simt/translate.cmake rewrites `name<T><<<grid, block, shared, stream>>>(args)` into
//   name<T> % ::simt::launch_config("name", grid, block, shared, stream) %
//   ::simt::kernel_args(args)
// which checks the launch and queues the grid on its stream (simt.cpp); a configuration error is
// what cudaGetLastError reports next, a fault while the grid runs is what the call that waits
// for it returns, as after a real launch. It rewrites `__shared__ T name[N];` into
// `__shared__ ::simt::SharedArray<T, N> name;` and `extern __shared__ T name[];` into
// `::simt::DynamicShared<T> name;`, so that the race check sees every indexed access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace simt {

// One launch as the device would see it.
struct Launch {
  std::string kernel;  // the name at the launch site
  dim3 grid, block;
  std::size_t shared_bytes = 0;
  bool ran = false;  // false: refused (bad configuration) or not executed (dry run)
};

// Every launch since the last clear_launches(), in order of issue.
std::vector<Launch> launches();
void clear_launches();

// Dry run: launches are checked and recorded but not executed, and cuBLAS calls are checked but
// compute nothing, so that tests can watch the geometry of problems too large to run.
void set_dry_run(bool on);
bool dry_run();

// Race check (also ATTNLAB_SIMT_RACECHECK=1), as compute-sanitizer's racecheck: every block runs
// as fibers that switch at each access to a shared array as well as at barriers, in a shuffled
// order, and two threads that touch the same element between the same two barriers, one of them
// writing, fail the launch with both accesses named.
void set_race_check(bool on);
bool race_check();

// The emulated device: an H200 (compute capability 9.0, 132 SMs of 2,048 resident threads and
// 64 Ki registers, blocks of at most 1,024 threads and 227 KiB of shared memory (opted in),
// grids of at most 2^31 - 1 x 65,535 x 65,535).
inline constexpr int kMultiprocessors = 132;
inline constexpr int kThreadsPerMultiprocessor = 2048;
inline constexpr int kRegistersPerBlock = 65536;
inline constexpr int kSharedPerBlockOptin = 227 * 1024;
inline constexpr unsigned kMaxGridX = 0x7fffffffu;
inline constexpr unsigned kMaxGridYZ = 65535;

struct LaunchConfig {
  const char* name;
  dim3 grid, block;
  std::size_t shared_bytes;
  cudaStream_t stream;
};
inline LaunchConfig launch_config(const char* name, dim3 grid, dim3 block,
                                  std::size_t shared_bytes = 0, cudaStream_t stream = nullptr) {
  return {name, grid, block, shared_bytes, stream};
}

namespace detail {
// Checks and records the launch; queues `thread` (run once per CUDA thread of the grid) on the
// launch's stream unless the configuration is refused or this is a dry run. `bad_argument`, when
// not empty, says which argument a device could not reach: the grid then faults where it runs.
void launch_grid(const void* kernel, const LaunchConfig& c, std::function<void()> thread,
                 const std::string& bad_argument);
// Empty when a kernel may be handed p (null, or inside a device allocation), else why not.
std::string kernel_pointer_error(const void* p);

template <class A>
void check_argument(const A& a, int index, std::string& why) {
  if constexpr (std::is_pointer_v<A>) {
    if (!why.empty()) return;
    const std::string e = kernel_pointer_error(static_cast<const void*>(a));
    if (!e.empty()) why = "argument " + std::to_string(index) + ": " + e;
  }
}

// Queues `run` on `stream` (null: the legacy default stream) as one operation of the device;
// run returns empty, or the fault it met. Used by the emulated cuBLAS.
void enqueue(cudaStream_t stream, const std::string& what, std::function<std::string()> run);

// Thrust on its host system stands for a device algorithm on the legacy default stream that
// returns when done: the work queued there runs first, then `body` with device memory open to
// the host thread. One at a time, like every execution of device work.
void begin_host_system();
void end_host_system();

// Race check: the calling thread accesses [p, p + bytes) of shared memory (write or read).
void shared_access(const void* p, std::size_t bytes, bool write, const char* array);
// The dynamic shared memory of the running block (the launch's third argument), after checking
// that `bytes` of it exist.
void* dynamic_shared(std::size_t bytes);
}  // namespace detail

template <class F>
decltype(auto) host_system(F&& body) {
  struct Guard {
    Guard() { detail::begin_host_system(); }
    ~Guard() { detail::end_host_system(); }
  } guard;
  return std::forward<F>(body)();
}

// ---- Shared memory as the race check sees it --------------------------------------------------
// An element of a shared array: reading it (conversion to T) and writing it (assignment) are
// the accesses the race check records. Its address (&) is a raw pointer, not tracked.
template <class T>
class SharedRef {
 public:
  SharedRef(T* p, const char* array) : p_(p), array_(array) {}
  operator T() const {
    detail::shared_access(p_, sizeof(T), false, array_);
    return *p_;
  }
  SharedRef& operator=(const T& v) {
    detail::shared_access(p_, sizeof(T), true, array_);
    *p_ = v;
    return *this;
  }
  SharedRef& operator=(const SharedRef& o) { return *this = static_cast<T>(o); }
  T* operator&() const { return p_; }
  // Compound assignment: a read, then a write.
  template <class U>
  SharedRef& operator+=(const U& v) {
    T x = static_cast<T>(*this);
    x += v;
    return *this = x;
  }
  template <class U>
  SharedRef& operator-=(const U& v) {
    T x = static_cast<T>(*this);
    x -= v;
    return *this = x;
  }
  template <class U>
  SharedRef& operator*=(const U& v) {
    T x = static_cast<T>(*this);
    x *= v;
    return *this = x;
  }
  template <class U>
  SharedRef& operator/=(const U& v) {
    T x = static_cast<T>(*this);
    x /= v;
    return *this = x;
  }
  template <class U>
  SharedRef& operator|=(const U& v) {
    T x = static_cast<T>(*this);
    x |= v;
    return *this = x;
  }
  template <class U>
  SharedRef& operator&=(const U& v) {
    T x = static_cast<T>(*this);
    x &= v;
    return *this = x;
  }
  template <class U>
  SharedRef& operator^=(const U& v) {
    T x = static_cast<T>(*this);
    x ^= v;
    return *this = x;
  }

 private:
  T* p_;
  const char* array_;
};

[[noreturn]] void shared_index_error(const char* array, std::size_t index, std::size_t size);

// `__shared__ T name[N]`: one copy per kernel (static storage), shared by the blocks one after
// another. Indexing checks the bounds; the array decays to a raw pointer (untracked accesses).
template <class T, std::size_t N>
struct SharedArray {
  SharedRef<T> operator[](std::size_t i) {
    if (i >= N) shared_index_error("a __shared__ array", i, N);
    return SharedRef<T>(&data[i], "a __shared__ array");
  }
  operator T*() { return data; }
  T data[N];
};

// `extern __shared__ T name[]`: the launch's dynamic shared memory, one buffer per launch that
// the blocks share one after another, filled with 0xff bytes (NaN) when the launch starts.
template <class T>
struct DynamicShared {
  SharedRef<T> operator[](std::size_t i) const {
    T* base = static_cast<T*>(detail::dynamic_shared((i + 1) * sizeof(T)));
    return SharedRef<T>(base + i, "the dynamic shared memory");
  }
  operator T*() const { return static_cast<T*>(detail::dynamic_shared(0)); }
};

// ---- Launch syntax --------------------------------------------------------------------------
template <class... P>
struct PendingLaunch {
  void (*kernel)(P...);
  LaunchConfig config;
};

template <class... A>
std::tuple<std::decay_t<A>...> kernel_args(A&&... a) {
  return std::tuple<std::decay_t<A>...>(std::forward<A>(a)...);
}

template <class... P>
PendingLaunch<P...> operator%(void (*kernel)(P...), const LaunchConfig& c) {
  return {kernel, c};
}

// Arguments are converted to the kernel's parameter types once, as the launch copies them; the
// queued grid owns that copy. Pointer arguments must be null or device memory.
template <class... P, class... A>
void operator%(const PendingLaunch<P...>& k, const std::tuple<A...>& args) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong number of arguments");
  using Params = std::tuple<std::decay_t<P>...>;
  Params params =
      std::apply([](const A&... a) { return Params(static_cast<std::decay_t<P>>(a)...); }, args);
  std::string bad;
  std::apply(
      [&bad](const auto&... p) {
        int index = 0;
        (detail::check_argument(p, index++, bad), ...);
      },
      params);
  void (*kernel)(P...) = k.kernel;
  detail::launch_grid(
      reinterpret_cast<const void*>(kernel), k.config,
      [kernel, params] { std::apply(kernel, params); }, bad);
}

}  // namespace simt
