// monitor.hpp: how long-running numerical code reports progress and learns it should stop,
// without knowing about terminals or signals (host/progress.hpp implements it).
#pragma once

#include <exception>

namespace attn {

// Thrown by a long computation that saw stop_requested(); the driver exits cleanly on it. Not a
// std::runtime_error, so that the handlers that turn a read or parse error into a message
// (catch (const std::runtime_error&)) let a stop pass through.
struct Interrupted : std::exception {
  const char* what() const noexcept override { return "interrupted"; }
};

class Monitor {
 public:
  virtual ~Monitor() = default;
  // `units` more units of work are done (normals, model-steps, ...). Host thread only.
  virtual void advance(double units) { (void)units; }
  // Any thread may ask (a kernel's workers poll it).
  virtual bool stop_requested() const { return false; }
  // Throws Interrupted when a stop was requested; call between chunks of work.
  void stop_point() const {
    if (stop_requested()) throw Interrupted();
  }
};

// A monitor that never reports and never stops (tests, short runs).
inline Monitor& silent_monitor() {
  static Monitor m;
  return m;
}

}  // namespace attn
