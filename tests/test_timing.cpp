// test_timing.cpp (test_timing, ctest label `timing`, not run by CI): the promises that are about
// the clock, each checked once by the clock. They depend on the machine and its load, so CI
// asserts their mechanisms instead (test_signals: the stop audit and the ready lines; the
// refusal tests: no work begun) and these run by hand or from scripts/test-timing.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "helpers.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Ctrl-C stops a run within a second, wherever it is: sent 0.8 s into the work.
TEST(Timing, CtrlCStopsWithinASecond) {
  const char* runs[] = {
      "--table dk-std --rng philox --d-k 4096 --samples 1e9 --threads 1",
      "--table dk-std --rng numpy --d-k 512 --samples 1e7",
      "--table attention-sweep --task random --words 32 --d-model 64 --d-k 64 --seeds 0:1000",
      "--table training-sweep --seeds 0:100000",
      "--table softmax-saturation --samples 1e7",
      "--table knob --knob-steps 100000000"};
  for (const char* args : runs) {
    SCOPED_TRACE(args);
    Clock::time_point sent;
    const auto r =
        test::signal_when_ready(std::string(args) + " -v", "device:", SIGINT, "", 120, [&] {
          std::this_thread::sleep_for(std::chrono::milliseconds(800));
          sent = Clock::now();
        });
    const double took = seconds_since(sent);
    EXPECT_EQ(r.exit_code, 130) << r.err;
    EXPECT_LT(took, 1.0);
    testing::Test::RecordProperty("stop_seconds", std::to_string(took));
  }
}

// A run expected to take more than a minute says so within its first seconds.
TEST(Timing, EstimateWithinTheFirstSeconds) {
  const auto r = test::run_demo(
      "--table training-sweep --seeds 0:1000000000 --grad analytic --steps 100 --device cpu",
      "timeout -s INT 3");
  EXPECT_NE(r.err.find("training-sweep: expected to take about"), std::string::npos) << r.err;
}

// A refusal comes before any work: at once.
TEST(Timing, RefusalsComeAtOnce) {
  for (const char* args : {"--table training-sweep --seeds 0:18446744073709551615",
                           "--table training --seeds 0:18446744073709551615",
                           "--table dk-std --d-k 1 --samples 1e30"}) {
    const auto t0 = Clock::now();
    const auto r = test::run_demo(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_LT(seconds_since(t0), 1.0) << args;
  }
}

// Off a terminal, progress is a log line at most every 10 seconds.
TEST(Timing, ProgressOffATerminalAtMostEveryTenSeconds) {
  const auto t0 = Clock::now();
  const auto r = test::run_demo(
      "--device cpu --threads 1 --table dk-std --rng philox --d-k 512 --samples 4e6 --format csv");
  const double took = seconds_since(t0);
  ASSERT_EQ(r.exit_code, 0);
  int lines = 0;
  for (const auto& line : test::lines_of(r.err)) lines += line.find("ETA") != std::string::npos;
  EXPECT_LE(lines, static_cast<int>(took / 10.0)) << r.err;
}

// --checkpoint-every S saves about every S seconds: after a few intervals the file is there.
TEST(Timing, CheckpointEveryInterval) {
  test::TempDir d;
  const std::string ck = d.file("ck.json");
  Clock::time_point started;
  bool saved = false;
  test::signal_when_ready(
      "--table dk-std --rng philox --d-k 4096 --samples 1e9 --threads 1 -v "
      "--checkpoint-every 0.2 --checkpoint " +
          ck,
      "dk-std: started", SIGKILL, "", 120, [&] {
        started = Clock::now();
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        saved = fs::exists(ck);
      });
  EXPECT_TRUE(saved) << "no checkpoint 1.5 s into a run saving every 0.2 s";
}

}  // namespace
}  // namespace attn
