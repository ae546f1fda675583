// progress.hpp: progress for long runs, and Ctrl-C.
//
// On a terminal: one line on stderr, redrawn at most 10 times a second, with percent, rate and
// ETA; it appears only once a run has taken about a second. A run expected to take more than a
// minute says so once, at its first progress after 0.1 s (on or off a terminal, not --quiet):
// "NAME: expected to take about 12m30s (estimated from its first 2s)". Off a terminal: a log line
// at most every 10 seconds. Nothing with --quiet. Ctrl-C (SIGINT) or SIGTERM sets a flag; long
// loops see it at their next checkpoint and throw Interrupted, and the driver exits with status 130
// without writing results.
#pragma once

#include <chrono>
#include <string>

#include "monitor.hpp"

namespace attn {

// Installs the SIGINT/SIGTERM handler (once, from main).
void install_stop_handler();
bool stop_requested_by_signal();

class Progress : public Monitor {
 public:
  // label: what runs (a table name); total: units of work; unit: their name ("normals").
  Progress(std::string label, double total, std::string unit, bool quiet);
  ~Progress() override;
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(double units) override;
  bool stop_requested() const override { return stop_requested_by_signal(); }
  // Clears the terminal line; called by the destructor too.
  void finish();

  double elapsed_seconds() const;

 private:
  void draw(bool final_line);

  std::string label_, unit_;
  double total_, done_ = 0;
  bool quiet_, tty_, drawn_ = false, finished_ = false, estimated_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// "1.23e+09" style rate, "1m05s" style durations.
std::string human_duration(double seconds);

}  // namespace attn
