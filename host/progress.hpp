// progress.hpp: progress for long runs, and Ctrl-C.
//
// On a terminal: one line on stderr, redrawn at most 10 times a second, with percent, rate and
// ETA; it appears only once a run has taken about a second. A run expected to take more than a
// minute says so once, at its first progress after 0.1 s (on or off a terminal, not --quiet):
// "NAME: expected to take about 12m30s (estimated from its first 2s)". Off a terminal: a log line
// at most every 10 seconds. Nothing with --quiet. Ctrl-C (SIGINT) or SIGTERM sets a flag; long
// loops see it at their next checkpoint (at least every ~0.2 s: ChunkPacer sizes chunks of work
// by time) and throw Interrupted, and the driver exits without writing results, with status
// 128 + the signal's number: 130 for SIGINT, 143 for SIGTERM (the shell's convention).
//
// The stop audit, a test switch: with ATTNLAB_STOP_AUDIT=N in the environment every stop check
// is counted, and each Progress notes, for each advance (a call of the table's work), its units
// over the stop checks made during that call; after N advances the run is asked to stop as
// Ctrl-C would, and finish() prints "stop audit: NAME: at most X UNITS between two stop checks".
// Tests compare X with a budget in work units: the mechanism of Ctrl-C, not the clock. With
// ATTNLAB_TEST_KILL_AT_CALL=N the process kills itself (SIGKILL) at the N-th such call: a crash
// at a chosen moment, for the checkpoint tests. With -v each Progress says when it starts
// ("NAME: started, ..."), a line tests wait for before they send a signal.
#pragma once

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "monitor.hpp"

namespace attn {

// Installs the SIGINT/SIGTERM handler (once, from main).
void install_stop_handler();
bool stop_requested_by_signal();
// The signal that asked to stop (SIGINT or SIGTERM), 0 when none did.
int stop_signal();
// Throws Interrupted when a signal asked to stop; for loops that have no Monitor.
void stop_point();

// For a process that outlives one computation (the Python module): while a StopScope lives,
// SIGINT sets the stop flag that stop_requested_by_signal() reads (as install_stop_handler's
// handler does), and the handler it replaced is back when the scope ends. The flag is cleared
// when the scope begins and when it ends, so that one Ctrl-C stops one computation. With
// install = false the scope only clears the flag (a thread other than the one that receives the
// interpreter's signals: its handler is left alone).
class StopScope {
 public:
  explicit StopScope(bool install);
  ~StopScope();
  StopScope(const StopScope&) = delete;
  StopScope& operator=(const StopScope&) = delete;
  // Whether SIGINT arrived while the scope lived.
  bool interrupted() const;

 private:
  bool installed_ = false;
  struct sigaction previous_ {};
};

// Stop points for a phase that reads, parses or converts input (a file's bytes, a CSV's
// characters, an array's values): add(units) asks for a stop once every `every` units. Under the
// stop audit it is audited as a Progress is (each add() a call; at the calls' limit the run is
// asked to stop as by Ctrl-C), and when the phase ends (its destructor, also when it ends by a
// stop or an error) it prints "stop audit: LABEL: at most X UNITS between two stop checks (N
// pieces)": X the most units added between two stop checks of the whole process (pieces, not
// calls: ATTNLAB_TEST_KILL_AT_CALL counts a Progress's calls alone).
class StopMeter {
 public:
  StopMeter(std::string label, std::string unit, double every);
  ~StopMeter();
  StopMeter(const StopMeter&) = delete;
  StopMeter& operator=(const StopMeter&) = delete;
  void add(double units);

 private:
  std::string label_, unit_;
  double every_, due_ = 0;
  // The stop audit: units since the process's last stop check, the most of them, calls.
  std::uint64_t checks_seen_ = 0;
  double since_check_ = 0, most_ = 0;
  long calls_ = 0;
};

// Calls stop_point() once every `every` units of work counted with add(): for loops whose
// passes are too short to ask at each one (units: whatever the loop counts, elements or rows).
class StopEvery {
 public:
  explicit StopEvery(double every) : every_(every) {}
  void add(double units) {
    if ((done_ += units) >= every_) {
      done_ = 0;
      stop_point();
    }
  }

 private:
  double every_, done_ = 0;
};

// Sizes the chunks of a loop over many independent items so that each chunk takes about
// target_seconds: the first chunk has `first` items, the size doubles after a chunk that took
// less than half the target and shrinks to fit the target after one that took more than twice
// it, within [min, max]. Every chunk but a last one that takes all that remains is a multiple of
// `multiple` (items that pair up). Results must not depend on how the items are chunked (each
// item independent).
class ChunkPacer {
 public:
  ChunkPacer(std::uint64_t first, std::uint64_t min, std::uint64_t max, double target_seconds = 0.1,
             std::uint64_t multiple = 1);
  // The size of the next chunk (at most remaining); starts its clock.
  std::uint64_t next(std::uint64_t remaining);
  // The chunk ended: adapts the size for the next one.
  void done();

 private:
  std::uint64_t size_, min_, max_;
  double target_;
  std::uint64_t multiple_;
  std::chrono::steady_clock::time_point start_;
};

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
  std::uint64_t audit_checks_ = 0;  // the stop audit (see the top of this file)
  long audit_calls_ = 0;
  double audit_most_ = 0;
};

// A duration as a person reads it: "0.071s", "2.5s", "42s", "1m05s", "3h07m", "12 days",
// "23.6 years".
std::string human_duration(double seconds);

}  // namespace attn
