// test_runs.cpp (test_slow, ctest label `slow`, left out of the sanitizer run): long runs as a
// user meets them: progress on a terminal, quiet in pipes, and
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
const char* kLongRun = "--table dk-std --rng philox --dk 4096 --samples 1e9";

TEST(LongRuns, CtrlCStopsCleanlyWithoutResults) {
  const fs::path dir = fs::temp_directory_path() / ("attn-sigint-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const std::string cmd = std::string(ATTN_DEMO) + " " + kLongRun + " -q --out " + dir.string();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >/dev/null 2>&1").c_str(), nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto sent = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_LT(seconds, 10.0) << "took too long to stop";
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
      " --device cpu --threads 1 --table dk-std --rng philox --dk 512 --samples 4e6 --format csv";
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
  // Off a terminal (a pipe): no redrawn line, and at most one log line per 10 seconds.
  const auto start = std::chrono::steady_clock::now();
  const auto pipe = test::run_demo(args);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(pipe.exit_code, 0);
  EXPECT_EQ(pipe.err.find("\r"), std::string::npos) << pipe.err;
  int lines = 0;
  for (const auto& line : test::lines_of(pipe.err)) lines += line.find("ETA") != std::string::npos;
  EXPECT_LE(lines, static_cast<int>(seconds / 10.0)) << pipe.err;
}

}  // namespace
}  // namespace attn
