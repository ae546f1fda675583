// simt.hpp: kernel launches for the SIMT emulation (see cuda_runtime.h beside it), and the
// record of every launch that tests read.
//
// kernels/simt/translate.cmake rewrites `name<T><<<grid, block, shared, stream>>>(args)` into
//   name<T> % ::simt::launch_config("name", grid, block, shared, stream) %
//   ::simt::kernel_args(args)
// which runs the grid before it returns (simt.cpp); a launch error is what cudaGetLastError
// reports next, as after a real launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
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

// Every launch since the last clear_launches(), in order.
std::vector<Launch> launches();
void clear_launches();

// Dry run: launches are checked and recorded but not executed, and cuBLAS calls are checked but
// compute nothing, so that tests can watch the geometry of problems too large to run.
void set_dry_run(bool on);
bool dry_run();

// The emulated device: an H200 (compute capability 9.0, 132 SMs of 2,048 resident threads and
// 64 Ki registers, blocks of at most 1,024 threads, grids of at most 2^31 - 1 x 65,535 x 65,535).
inline constexpr int kMultiprocessors = 132;
inline constexpr int kThreadsPerMultiprocessor = 2048;
inline constexpr int kRegistersPerBlock = 65536;
inline constexpr unsigned kMaxGridX = 0x7fffffffu;
inline constexpr unsigned kMaxGridYZ = 65535;

struct LaunchConfig {
  const char* name;
  dim3 grid, block;
  std::size_t shared_bytes;
};
inline LaunchConfig launch_config(const char* name, dim3 grid, dim3 block,
                                  std::size_t shared_bytes = 0, cudaStream_t = nullptr) {
  return {name, grid, block, shared_bytes};
}

namespace detail {
// Checks and records the launch; runs `thread` once per CUDA thread of the grid unless the
// configuration is refused or this is a dry run. Errors become the next cudaGetLastError().
void run_grid(const LaunchConfig& c, const std::function<void()>& thread);
}  // namespace detail

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

// Arguments are converted to the kernel's parameter types once, as the launch copies them.
template <class... P, class... A>
void operator%(const PendingLaunch<P...>& k, const std::tuple<A...>& args) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong number of arguments");
  std::tuple<std::decay_t<P>...> params = std::apply(
      [](const A&... a) { return std::tuple<std::decay_t<P>...>(static_cast<P>(a)...); }, args);
  detail::run_grid(k.config, [&] { std::apply(k.kernel, params); });
}

}  // namespace simt
