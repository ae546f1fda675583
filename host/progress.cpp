// progress.cpp: see progress.hpp.
#include "host/progress.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "host/backend.hpp"

namespace attn {
namespace {

std::atomic<int> g_stop{0};  // the signal number, 0 while none came

// The stop audit (ATTNLAB_STOP_AUDIT=N, a test switch; progress.hpp): the calls a Progress may
// count before the run is asked to stop, 0 when the audit is off; the stop checks made so far.
const long g_audit_calls = [] {
  const char* v = std::getenv("ATTNLAB_STOP_AUDIT");
  return v ? std::max(1L, std::atol(v)) : 0L;
}();
// ATTNLAB_TEST_KILL_AT_CALL=N (a test switch): the process kills itself with SIGKILL at the N-th
// call a Progress counts, a crash at a chosen moment of the run (checkpoints are tested so).
const long g_kill_at_call = [] {
  const char* v = std::getenv("ATTNLAB_TEST_KILL_AT_CALL");
  return v ? std::max(1L, std::atol(v)) : 0L;
}();
std::atomic<long> g_calls{0};
std::atomic<std::uint64_t> g_checks{0};

extern "C" void on_stop_signal(int sig) {
  int none = 0;
  g_stop.compare_exchange_strong(none, sig);  // the first signal decides the exit status
}

}  // namespace

void install_stop_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested_by_signal() {
  if (g_audit_calls > 0) g_checks.fetch_add(1, std::memory_order_relaxed);
  return g_stop.load() != 0;
}
int stop_signal() { return g_stop.load(); }
void stop_point() {
  if (stop_requested_by_signal()) throw Interrupted();
}

StopScope::StopScope(bool install) : installed_(install) {
  g_stop.store(0);
  if (!install) return;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &previous_);
}

StopScope::~StopScope() {
  if (installed_) sigaction(SIGINT, &previous_, nullptr);
  g_stop.store(0);
}

bool StopScope::interrupted() const { return g_stop.load() == SIGINT; }

StopMeter::StopMeter(std::string label, std::string unit, double every)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      every_(every),
      checks_seen_(g_checks.load()) {}

StopMeter::~StopMeter() {
  if (g_audit_calls > 0)
    std::fprintf(stderr, "stop audit: %s: at most %.10g %s between two stop checks (%ld pieces)\n",
                 label_.c_str(), most_, unit_.c_str(), calls_);
}

void StopMeter::add(double units) {
  if (g_audit_calls > 0) {
    const std::uint64_t checks = g_checks.load();
    if (checks != checks_seen_) since_check_ = 0;
    checks_seen_ = checks;
    since_check_ += units;
    most_ = std::max(most_, since_check_);
    if (++calls_ >= g_audit_calls) {
      int none = 0;
      g_stop.compare_exchange_strong(none, SIGINT);  // as Ctrl-C: the phase stops at its next check
    }
  }
  if ((due_ += units) >= every_) {
    due_ = 0;
    stop_point();
  }
}

ChunkPacer::ChunkPacer(std::uint64_t first, std::uint64_t min, std::uint64_t max,
                       double target_seconds, std::uint64_t multiple)
    : size_(std::min(std::max(first, min), max)),
      min_(min),
      max_(max),
      target_(target_seconds),
      multiple_(std::max<std::uint64_t>(1, multiple)) {}

std::uint64_t ChunkPacer::next(std::uint64_t remaining) {
  start_ = std::chrono::steady_clock::now();
  return std::min(std::max(multiple_, size_ - size_ % multiple_), remaining);
}

void ChunkPacer::done() {
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (t < target_ / 2 && size_ <= max_ / 2)
    size_ *= 2;
  else if (t > target_ * 2)  // far too long: straight to the size that fits the target
    size_ = std::max(min_, static_cast<std::uint64_t>(static_cast<double>(size_) * target_ / t));
}

std::string human_duration(double s) {
  char buf[32];
  if (s < 9.5)  // two digits: an adversarial row's 0.071s, not 0s
    std::snprintf(buf, sizeof buf, "%.2gs", s);
  else if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  else if (s < 86400 * 10)
    std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, (int(s) % 3600) / 60);
  else if (s < 86400 * 365.25 * 10)
    std::snprintf(buf, sizeof buf, "%.0f days", s / 86400);
  else
    std::snprintf(buf, sizeof buf, "%.3g years", s / (86400 * 365.25));
  return buf;
}

Progress::Progress(std::string label, double total, std::string unit, bool quiet)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      quiet_(quiet),
      tty_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_),
      audit_checks_(g_checks.load()) {
  announce_backend();  // work starts: the device notices held back by Backend::select
  spdlog::debug("{}: started, {:.6g} {} to do", label_, total_, unit_);
}

Progress::~Progress() { finish(); }

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::advance(double units) {
  done_ += units;
  if (g_kill_at_call > 0 && ++g_calls >= g_kill_at_call) raise(SIGKILL);
  if (g_audit_calls > 0) {
    // The work of this call over the stop checks made during it (at least the one before it).
    const std::uint64_t checks = g_checks.load();
    const double during = static_cast<double>(std::max<std::uint64_t>(checks - audit_checks_, 1));
    audit_checks_ = checks;
    audit_most_ = std::max(audit_most_, units / during);
    if (++audit_calls_ >= g_audit_calls) {
      int none = 0;
      g_stop.compare_exchange_strong(none, SIGINT);  // as Ctrl-C: the run stops at its next check
    }
  }
  if (quiet_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since_start = std::chrono::duration<double>(now - start_).count();
  const double since_draw = std::chrono::duration<double>(now - last_draw_).count();
  if (!estimated_ && since_start >= 0.1 && done_ > 0) {
    estimated_ = true;
    const double expected = since_start * total_ / done_;
    if (expected > 60) {
      if (tty_ && drawn_) std::fprintf(stderr, "\r\033[K");
      spdlog::warn("{}: expected to take about {} (estimated from its first {})", label_,
                   human_duration(expected), human_duration(since_start));
    }
  }
  if (tty_ ? (since_start >= 1.0 && since_draw >= 0.1) : since_draw >= 10.0) {
    last_draw_ = now;
    draw(false);
  }
}

void Progress::draw(bool final_line) {
  const double t = elapsed_seconds();
  const double rate = t > 0 ? done_ / t : 0;
  const double pct = total_ > 0 ? 100.0 * done_ / total_ : 0;
  const double eta = rate > 0 ? (total_ - done_) / rate : 0;
  char line[256];
  std::snprintf(line, sizeof line, "%s: %5.1f%%  %.3g %s/s  %s %s", label_.c_str(), pct, rate,
                unit_.c_str(), final_line ? "took" : "ETA",
                human_duration(final_line ? t : eta).c_str());
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", line);
    std::fflush(stderr);
    drawn_ = true;
  } else {
    spdlog::info("{}", line);
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (g_audit_calls > 0)
    std::fprintf(stderr, "stop audit: %s: at most %.6g %s between two stop checks (%ld calls)\n",
                 label_.c_str(), audit_most_, unit_.c_str(), audit_calls_);
  if (tty_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

}  // namespace attn
