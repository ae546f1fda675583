// test_runs.cpp (test_slow, ctest label `slow`, left out of the sanitizer run): long runs as a
// user meets them: progress on a terminal, none redrawn in pipes, and
// Ctrl-C that stops cleanly (exit 130, no result files, no temporary files left behind).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "helpers.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// A run that takes many seconds on this machine.
const char* kLongRun = "--table dk-std --rng philox --d-k 4096 --samples 1e9";

TEST(LongRuns, CtrlCStopsCleanlyWithoutResults) {
  const fs::path dir = fs::temp_directory_path() / ("attn-sigint-" + std::to_string(getpid()));
  fs::remove_all(dir);
  // Ctrl-C once the run says its work started.
  const auto r = test::signal_when_ready(std::string(kLongRun) + " -v --out " + dir.string(),
                                         "dk-std: started", SIGINT);
  ASSERT_TRUE(r.ready) << r.err;
  EXPECT_FALSE(r.hung) << "the signal was ignored";
  EXPECT_EQ(r.exit_code, 130) << r.err;
  // The run created --out's directory and wrote nothing: it is gone again.
  EXPECT_FALSE(fs::exists(dir));
  fs::remove_all(dir);
}

TEST(LongRuns, ProgressOnATerminalOnly) {
  // `script` gives demo a pseudo-terminal on stderr. One thread and 4e9 normals: several seconds
  // on any CPU, so the progress line (shown after about a second) must appear.
  // Skipped where script(1) is missing or cannot open a pseudo-terminal (a chroot without
  // /dev/pts): nothing here could show a terminal's behaviour.
  if (test::run_command("script -qec true /dev/null >/dev/null 2>&1").exit_code != 0)
    GTEST_SKIP() << "script(1) is missing or cannot open a pseudo-terminal here";
  const std::string args =
      " --device cpu --threads 1 --table dk-std --rng philox --d-k 512 --samples 4e6 --format csv";
  const auto tty =
      test::run_command("script -qec '" + std::string(ATTN_DEMO) + args + "' /dev/null");
  ASSERT_EQ(tty.exit_code, 0) << tty.err;
  EXPECT_NE(tty.out.find("\r"), std::string::npos);
  EXPECT_NE(tty.out.find("normals/s"), std::string::npos);
  EXPECT_NE(tty.out.find("ETA"), std::string::npos);
  EXPECT_NE(tty.out.find("%"), std::string::npos);
  // --quiet: no progress even on a terminal.
  const auto quiet =
      test::run_command("script -qec '" + std::string(ATTN_DEMO) + args + " -q' /dev/null");
  EXPECT_EQ(quiet.out.find("ETA"), std::string::npos);
  // Off a terminal (a pipe): no redrawn line (how often it logs instead is test_timing's).
  const auto pipe = test::run_demo(args);
  ASSERT_EQ(pipe.exit_code, 0);
  EXPECT_EQ(pipe.err.find("\r"), std::string::npos) << pipe.err;
}

}  // namespace
}  // namespace attn
