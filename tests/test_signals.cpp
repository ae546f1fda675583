// test_signals.cpp (test_slow, ctest label `slow`): Ctrl-C (SIGINT) and SIGTERM are honoured by
// every long loop (exit 130 and 143, nothing left behind), and a second run into a folder that a
// first run holds is refused. Nothing here reads a clock: the bulk loops are checked by the stop
// audit (host/progress.hpp: the most work done between two stop checks, against a budget in the
// loop's own units), the others by a signal sent once demo says it works (a line on stderr), with
// the outcome asserted. The wall-clock promise itself ("within a second") is test_timing's.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "helpers.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// Runs demo with the stop audit on: after `calls` calls of its work the run is asked to stop as
// by Ctrl-C. It must stop (exit 130, the "interrupted" line) and have asked for a stop at least
// once per `budget` units of work throughout.
void expect_audited(const std::string& args, const std::string& table, double budget,
                    int calls = 3) {
  SCOPED_TRACE("demo " + args);
  const auto r =
      test::run_demo(args + " -q", "ATTNLAB_STOP_AUDIT=" + std::to_string(calls) + " timeout 300");
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  // Off a terminal no progress line is left open: no blank line before it.
  EXPECT_EQ(r.err.find("\n\ndemo"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  const double most = test::stop_audit(r.err, table);
  ASSERT_GE(most, 0) << "no stop audit of " << table << " in:\n" << r.err;
  EXPECT_LE(most, budget) << "units of work between two stop checks";
  testing::Test::RecordProperty("most_units_between_stop_checks", std::to_string(most));
}

// The budgets are each loop's declared piece of work between two stop checks, in its own units:
// a regression that drops a stop check inside a call makes the whole call one piece.
TEST(StopAudit, DkStdBothGenerators) {
  // The samplers are called in parts of at most 2^27 normals on the CPU
  // (Backend::dk_std_normals_per_call).
  constexpr double kPart = double(1 << 27);
  expect_audited("--table dk-std --rng philox --d-k 4096 --samples 1e9 --threads 1", "dk-std",
                 kPart);
  // The largest d_k: a chunk is fewer sampler chunks, each still cut into parts.
  expect_audited("--table dk-std --rng philox --d-k 65536 --samples 1e6 --threads 1", "dk-std",
                 kPart);
  expect_audited("--table dk-std --rng numpy --d-k 512 --samples 1e7", "dk-std", kPart);
}
TEST(StopAudit, TrainingSweepBothGradients) {
  // Its backend call has no stop check inside: the piece of work is a call, at most 2^14 seeds
  // (Backend::seeds_per_call on the CPU) of 3000 steps (paced to about 0.1 s, which the audit
  // does not measure); units: model-steps.
  expect_audited("--table training-sweep --seeds 0:100000", "training-sweep", 16384.0 * 3000);
  expect_audited("--table training-sweep --seeds 0:100000 --grad analytic", "training-sweep",
                 16384.0 * 3000);
}
TEST(StopAudit, AttentionSweep) {
  // The lesson's head: a test at every 16th step of a lane pack of 8 seeds, or oftener: of its
  // 3000 steps, the 2992 before the last test are measured against 187 tests.
  expect_audited("--table attention-sweep --seeds 0:100000", "attention-sweep",
                 16.0 * 8 * 3000 / 2992);
  // A larger head, and the numeric gradient: a test at every step of a lane pack, or inside.
  expect_audited(
      "--table attention-sweep --task random --words 32 --d-model 64 --d-k 64 "
      "--seeds 0:1000 --steps 20",
      "attention-sweep", 8);
  expect_audited(
      "--table attention-sweep --task random --words 16 --d-model 16 --d-k 16 --seeds 0:1000 "
      "--steps 20 --grad numeric",
      "attention-sweep", 8);
}
TEST(StopAudit, SoftmaxSaturation) {
  // Rows go to the backend in calls of about 2^20 normals, at least one normal a row.
  expect_audited("--table softmax-saturation --samples 1e7", "softmax-saturation", 1 << 20);
}

// Loops without a progress meter: a signal once demo says it works ("device: ..." with -v comes
// after every check, just before the first table), then the outcome.
void expect_stops(const std::string& args, int sig) {
  SCOPED_TRACE("demo " + args + (sig == SIGINT ? " + SIGINT" : " + SIGTERM"));
  const auto r = test::signal_when_ready(args + " -v", "device:", sig);
  ASSERT_TRUE(r.ready) << r.err;
  EXPECT_FALSE(r.hung) << "the signal was ignored";
  EXPECT_EQ(r.exit_code, 128 + sig) << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
}

TEST(Signals, KnobWithManySteps) {
  expect_stops("--table knob --knob-steps 100000000", SIGINT);
  expect_stops("--table knob --knob-steps 100000000", SIGTERM);
}
TEST(Signals, TrainingTableWithManySeeds) {
  expect_stops("--table training --seeds 0:20000 --configs qk-random", SIGINT);
  expect_stops("--table training --seeds 0:20000 --configs qk-random", SIGTERM);
}

// Ctrl-C while figures are drawn reaches gnuplot too (one process group): demo must exit 130
// and leave nothing, not "gnuplot not found" (exit 0) or some files (exit 1). A stand-in
// gnuplot waits; the signal goes to the process group once demo says it draws.
TEST(Signals, CtrlCWhileFiguresAreDrawn) {
  test::TempDir dir;
  fs::create_directories(dir.path / "bin");
  dir.write("bin/gnuplot", "#!/bin/sh\ncat >/dev/null\nsleep 600\n");
  fs::permissions(dir.path / "bin" / "gnuplot", fs::perms::owner_all);
  const std::string out = dir.file("out");
  const auto r =
      test::signal_when_ready("--table rnn-decay,qkv --out '" + out + "' -v", "gnuplot started",
                              SIGINT, "PATH='" + dir.file("bin") + "':\"$PATH\"");
  ASSERT_TRUE(r.ready) << r.err;
  EXPECT_FALSE(r.hung) << "the signal was ignored";
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_FALSE(fs::exists(out)) << "files left behind";
}

// Two runs into one --out folder at once: the second is refused at once, and the folder then
// holds the first run's complete set only. The second starts once the first says it works (its
// folder is locked before that line).
TEST(Signals, SecondRunIntoAHeldFolderIsRefused) {
  test::TempDir dir;
  const std::string out = dir.file("out");
  test::ProcessResult second;
  const auto first = test::signal_when_ready(
      "--table knob --knob-steps 0,10000000 -v --out '" + out + "'", "device:", 0, "", 120,
      [&] { second = test::run_demo("--table knob --knob-steps 0,1 -q --out '" + out + "'"); });
  ASSERT_TRUE(first.ready) << first.err;
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_NE(second.err.find("another demo run"), std::string::npos) << second.err;
  const auto j = test::read_json(out + "/knob.json");
  const auto& rows = j["tables"][0]["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["step"], 10000000);  // the first run's
  EXPECT_TRUE(fs::exists(out + "/knob.csv"));
}

// attention-sweep's second pass (each seed's JSD to the mean map, the per-seed rows) asks for a
// stop too.
TEST(Signals, AttentionSweepMeasuresStop) {
  test::TempDir d;
  const auto r = test::signal_when_ready(
      "--table attention-sweep --steps 1 --seeds 0:1000000 --device cpu -v --per-seed " +
          d.file("rows.csv"),
      "attention-sweep: measuring", SIGTERM);
  SCOPED_TRACE(r.err);
  ASSERT_TRUE(r.ready);
  EXPECT_FALSE(r.hung);
  EXPECT_EQ(r.exit_code, 143);
  EXPECT_FALSE(fs::exists(d.file("rows.csv")));
}

}  // namespace
}  // namespace attn
