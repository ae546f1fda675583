// test_scale.cpp (test_scale, ctest label `mpi`): one answer however the work is split. Each bulk
// table run under `mpirun -np 2` and `-np 3`, as shards 0..2 of 3 merged, and killed with
// SIGKILL and resumed from its checkpoint, must print the bytes of one uninterrupted process;
// every mismatched or damaged part or checkpoint, and one that is not a regular file or cannot
// be written, is refused with one line naming it. Sample counts are
// small: each run takes well under a second of CPU.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "helpers.hpp"
#include "host/chunks.hpp"
#include "host/cluster.hpp"
#include "moments.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// The bulk experiments, with a few chunks each (dk-std 5, saturation 13, the sweeps 6).
const std::vector<std::string> kBulk = {
    "--table dk-std --rng philox --d-k 2,64,512 --samples 6e5",
    "--table softmax-saturation --samples 2000 --keys 3",
    "--table training-sweep --seeds 0:10000 --steps 200 --grad analytic",
    // attention-sweep, 6 chunks: its second pass from the kept results, and by training again.
    "--table attention-sweep --task random --words 4 --d-model 6 --d-k 4 --seeds 0:3000 "
    "--steps 200",
    "--table attention-sweep --task random --words 4 --d-model 6 --d-k 4 --seeds 0:3000 "
    "--steps 200 --map-memory 0",
    // A grid of four configurations (a job each; the two with two heads train their second pass
    // again, their results past --map-memory), heads,
    // a causal mask, Adam, a known map.
    "--table attention-sweep --task previous --words 4 --d-model 4 --d-k 4 --heads 1,2 "
    "--train qk,qkv --causal --optimizer adam --lr 0.05 --seeds 0:600 --steps 40 "
    "--map-memory 150000",
    // Many inputs, a few chunks each: a grid over --inputs of a token task (a vocabulary,
    // held-out inputs, the nudged second runs), and the planted teacher with two heads training
    // its second pass again (without the adversarial map: its 64 held-out inputs make 1.5
    // million rows of it in each of the test's runs; the other sweeps search it).
    "--table attention-sweep --task previous --vocab 3 --words 4 --d-model 7 --d-k 4 "
    "--inputs 2,4 --test-inputs 3 --lr 0.1 --nudge --seeds 0:1200 --steps 300",
    "--table attention-sweep --task teacher --words 4 --d-model 4 --d-k 4 --heads 2 --inputs 2 "
    "--seeds 0:3000 --steps 100 --map-memory 0 --nudge --adversary off"};

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d.parent_path());
  return d;
}

std::string mpirun(int np) {
  return std::string(ATTN_MPIRUN) + " --allow-run-as-root --oversubscribe -np " +
         std::to_string(np) + " " + ATTN_DEMO + " ";
}

bool have_mpi() { return cluster::built_with_mpi() && std::string(ATTN_MPIRUN) != ""; }

TEST(Mpi, EveryBulkTablePrintsTheBytesOfOneProcess) {
  if (!have_mpi()) GTEST_SKIP() << "built without MPI or no mpirun";
  for (const std::string& args : kBulk) {
    const auto one = test::run_demo(args + " --format csv -q");
    ASSERT_EQ(one.exit_code, 0) << args << ": " << one.err;
    ASSERT_FALSE(one.out.empty());
    for (int np : {2, 3}) {
      const auto many = test::run_command(mpirun(np) + args + " --format csv -q --threads 1");
      ASSERT_EQ(many.exit_code, 0) << args << " -np " << np << ": " << many.err;
      EXPECT_EQ(many.out, one.out) << args << " -np " << np;
    }
  }
}

TEST(Mpi, RankZeroAloneWritesAndProvenanceNamesTheRanks) {
  if (!have_mpi()) GTEST_SKIP() << "built without MPI or no mpirun";
  const fs::path dir = scratch("mpi-out");
  const auto r = test::run_command(mpirun(3) + kBulk[0] + " -q --no-plots --format json --out " +
                                   dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["provenance"]["ranks"].get<std::string>().find("3 MPI ranks"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "dk-std.csv"));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 2u);  // dk-std.csv and dk-std.json, once, no temporary files
  fs::remove_all(dir.parent_path());
}

TEST(Mpi, NumpyStreamStaysOnRankZeroAndSaysSo) {
  if (!have_mpi()) GTEST_SKIP() << "built without MPI or no mpirun";
  const std::string args = "--table dk-std --rng numpy --d-k 2,64 --samples 1000 --format csv";
  const auto one = test::run_demo(args + " -q");
  const auto many = test::run_command(mpirun(2) + args);
  ASSERT_EQ(many.exit_code, 0) << many.err;
  EXPECT_EQ(many.out, one.out);
  EXPECT_NE(many.err.find("rank 0 alone"), std::string::npos) << many.err;
}

// Commands and tables that run as one process, under a launcher: rank 0 alone prints and
// writes. Before, `demo attention` printed its result once per rank (and with --out the second
// rank hit the first's lock), and a table without chunks ran on every rank, whose --per-seed
// files collided (exit 1, with the file left complete).
TEST(Mpi, OneProcessCommandsPrintAndWriteOnceUnderALauncher) {
  if (!have_mpi()) GTEST_SKIP() << "built without MPI or no mpirun";
  const std::string data = std::string(ATTN_TEST_DATA) + "/attention/";
  const std::string attention = "attention --x " + data + "x.npy --w-q " + data + "w_q.npy --w-k " +
                                data + "w_k.npy --w-v " + data + "w_v.npy --device cpu -q";
  const auto one = test::run_demo(attention + " --format csv");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const fs::path dir = scratch("mpi-one-process");
  for (int np : {2, 3}) {
    SCOPED_TRACE("-np " + std::to_string(np));
    const auto many = test::run_command(mpirun(np) + attention + " --format csv");
    ASSERT_EQ(many.exit_code, 0) << many.err;
    EXPECT_EQ(many.out, one.out);
    const fs::path out = dir / ("attention-" + std::to_string(np));
    const auto files =
        test::run_command(mpirun(np) + attention + " --no-plots --out " + out.string());
    EXPECT_EQ(files.exit_code, 0) << files.err;
    EXPECT_TRUE(fs::exists(out / "out.npy"));
    // Fewer chunks than ranks (rank 0 owns none), with a per-seed file: the rows of one process.
    const std::string sweep = "--table attention-sweep --steps 5 --seeds 0:8 --format csv -q";
    const fs::path rows = dir / ("rows-" + std::to_string(np) + ".csv");
    const fs::path rows1 = dir / ("rows1-" + std::to_string(np) + ".csv");
    const auto alone = test::run_demo(sweep + " --per-seed " + rows1.string());
    const auto ranks = test::run_command(mpirun(np) + sweep + " --per-seed " + rows.string());
    ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
    EXPECT_EQ(ranks.out, alone.out);
    EXPECT_EQ(test::read_file(rows), test::read_file(rows1));
  }
  const std::string result = std::string(ATTN_SOURCE_DIR) + "/results/cpu/weighted-average.json";
  const auto cmp_one = test::run_demo("compare " + result + " " + result);
  const auto cmp = test::run_command(mpirun(2) + "compare " + result + " " + result);
  EXPECT_EQ(cmp.exit_code, cmp_one.exit_code) << cmp.err;
  EXPECT_EQ(cmp.out, cmp_one.out);
  fs::remove_all(dir.parent_path());
}

TEST(Shards, ThreePartsMergeToTheBytesOfOneRun) {
  for (const std::string& args : kBulk) {
    const fs::path one = scratch("one");
    const auto r = test::run_demo(args + " -q --no-plots --out " + one.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string dirs;
    for (int i = 0; i < 3; ++i) {
      const fs::path part = scratch("part" + std::to_string(i));
      const auto s =
          test::run_demo(args + " -q --shard " + std::to_string(i) + "/3 --out " + part.string());
      ASSERT_EQ(s.exit_code, 0) << args << " shard " << i << ": " << s.err;
      EXPECT_TRUE(s.out.empty()) << "a shard prints nothing: " << s.out;
      dirs += " " + part.string();
    }
    const fs::path merged = scratch("merged");
    const auto m = test::run_demo("merge" + dirs + " -q --no-plots --out " + merged.string() +
                                  " --format csv");
    ASSERT_EQ(m.exit_code, 0) << args << ": " << m.err;
    const std::string name = test::split(test::split(args, ' ')[1], ' ')[0];
    const std::string csv = test::read_file(one / (name + ".csv"));
    ASSERT_FALSE(csv.empty());
    EXPECT_EQ(m.out, csv) << args;
    EXPECT_EQ(test::read_file(merged / (name + ".csv")), csv) << args;
  }
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

TEST(Shards, PerSeedRowsOfMergedPartsAreThoseOfOneRun) {
  const std::string args = kBulk[2] + " -q --format csv";
  const fs::path one = scratch("rows-one.csv"), rows = scratch("rows.csv");
  ASSERT_EQ(test::run_demo(args + " --per-seed " + one.string()).exit_code, 0);
  std::string dirs;
  for (int i = 0; i < 2; ++i) {
    const fs::path part = scratch("rows-part" + std::to_string(i));
    const auto s = test::run_demo(args + " --per-seed " + rows.string() + " --shard " +
                                  std::to_string(i) + "/2 --out " + part.string());
    ASSERT_EQ(s.exit_code, 0) << s.err;
    EXPECT_FALSE(fs::exists(rows)) << "a shard writes its rows into its part only";
    EXPECT_NE(s.err.find("warning: --per-seed " + rows.string() +
                         ": a shard writes no such file (its part holds the rows); demo merge "
                         "writes it"),
              std::string::npos)
        << s.err;
    dirs += " " + part.string();
  }
  const auto m = test::run_demo("merge" + dirs + " -q");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  // The merged command writes the rows to the path the parts were given.
  const std::string text = test::read_file(rows);
  EXPECT_EQ(text, test::read_file(one));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 2 * 10000);
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// attention-sweep's per-seed arrays: parts of the first pass, the second pass (training again)
// in merge, which writes every array as one process does.
TEST(Shards, PerSeedArraysOfAMergedSweepAreThoseOfOneRun) {
  for (const std::string& sweep : {kBulk[4], kBulk[7] + " --map-inputs 2"}) {
    SCOPED_TRACE(sweep);
    const std::string args = sweep + " -q --format csv";
    const fs::path one = scratch("one-maps.npy"), maps = scratch("maps.npy");
    const auto single = test::run_demo(args + " --per-seed " + one.string());
    ASSERT_EQ(single.exit_code, 0) << single.err;
    std::string dirs;
    for (int i = 0; i < 3; ++i) {
      const fs::path part = scratch("maps-part" + std::to_string(i));
      const auto s = test::run_demo(args + " --per-seed " + maps.string() + " --shard " +
                                    std::to_string(i) + "/3 --out " + part.string());
      ASSERT_EQ(s.exit_code, 0) << s.err;
      EXPECT_FALSE(fs::exists(maps)) << "a shard writes no per-seed arrays";
      dirs += " " + part.string();
    }
    const auto m = test::run_demo("merge" + dirs + " -q --format csv");
    ASSERT_EQ(m.exit_code, 0) << m.err;
    EXPECT_EQ(m.out, single.out);
    int arrays = 0;
    for (const auto& e : fs::directory_iterator(one.parent_path())) {
      const std::string file = e.path().filename().string();
      if (file.rfind("one-maps", 0) != 0) continue;
      const std::string ext = file.substr(std::string("one-maps").size());
      const std::string a = e.path().string();
      const std::string b = (one.parent_path() / ("maps" + ext)).string();
      EXPECT_EQ(test::read_file(b), test::read_file(a)) << ext;
      // A byte or more a seed, after a header.
      EXPECT_GE(test::read_file(a).size(), 3000u + 128) << ext;
      ++arrays;
    }
    // The maps, seeds, three losses, three flags, the JSD to the mean, the outputs, three or four
    // weights; the teacher's nudge and known-map arrays.
    // The interventions' arrays: nine, eleven with a known map.
    EXPECT_EQ(arrays, sweep == kBulk[4] ? 13 + 9 : 16 + 11);
    fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
  }
}

// The calls of work (what a Progress counts) a whole run of `args` makes: from the stop audit of
// a run that is never asked to stop ("... (N calls)").
// (The sum over its Progress meters: a table of two passes has two.)
int calls_of(const std::string& args) {
  const auto r = test::run_demo(args, "ATTNLAB_STOP_AUDIT=1000000000");
  if (r.exit_code != 0) return -1;
  int calls = 0;
  for (std::size_t at = r.err.find(" calls)"); at != std::string::npos;
       at = r.err.find(" calls)", at + 1)) {
    const std::size_t from = r.err.rfind('(', at);
    calls += std::stoi(r.err.substr(from + 1, at - from - 1));
  }
  return calls > 0 ? calls : -1;
}

TEST(Checkpoint, KilledAtARandomMomentAndResumedGivesTheBytesOfOneRun) {
  // Killed with SIGKILL (ATTNLAB_TEST_KILL_AT_CALL: the process kills itself) at a random call
  // of its work, a checkpoint saved after every chunk; resumed, the bytes of one run.
  const std::string args =
      "--table dk-std --rng philox --d-k 512,1024 --samples 3e5 --threads 1 --format csv -q";
  const auto one = test::run_demo(args);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const int calls = calls_of(args);
  ASSERT_GT(calls, 1);
  std::random_device rd;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const fs::path ck = scratch("ck" + std::to_string(attempt) + ".json");
    const int at = 1 + static_cast<int>(rd() % static_cast<unsigned>(calls - 1));
    const auto killed =
        test::run_demo(args + " --checkpoint " + ck.string() + " --checkpoint-every 1e-9",
                       "ATTNLAB_TEST_KILL_AT_CALL=" + std::to_string(at));
    EXPECT_EQ(killed.exit_code, 128 + SIGKILL) << "killed at call " << at;
    const auto resumed = test::run_demo(args + " --checkpoint " + ck.string());
    ASSERT_EQ(resumed.exit_code, 0) << "killed at call " << at << ": " << resumed.err;
    EXPECT_EQ(resumed.out, one.out) << "killed at call " << at;
    // A finished checkpoint gives the same table again without work.
    EXPECT_EQ(test::run_demo(args + " --checkpoint " + ck.string()).out, one.out);
  }
  // The sweep too (its state holds every weight, for exact quantiles).
  const std::string sweep = kBulk[2] + " --threads 1 --format csv -q";
  const auto sweep_one = test::run_demo(sweep);
  const fs::path ck = scratch("ck-sweep.json");
  const auto killed =
      test::run_demo(sweep + " --checkpoint " + ck.string() + " --checkpoint-every 1e-9",
                     "ATTNLAB_TEST_KILL_AT_CALL=2");
  EXPECT_EQ(killed.exit_code, 128 + SIGKILL);
  EXPECT_EQ(test::run_demo(sweep + " --checkpoint " + ck.string()).out, sweep_one.out);
  // attention-sweep's two passes (two jobs in one checkpoint), killed at a random call of either;
  // and a grid (a job or two per configuration).
  for (const std::string& sweep_args : {kBulk[4], kBulk[5], kBulk[6], kBulk[7]}) {
    SCOPED_TRACE(sweep_args);
    const std::string heads = sweep_args + " --threads 1 --format csv -q";
    const auto heads_one = test::run_demo(heads);
    ASSERT_EQ(heads_one.exit_code, 0) << heads_one.err;
    const int head_calls = calls_of(heads);
    ASSERT_GT(head_calls, 2);
    for (int attempt = 0; attempt < 2; ++attempt) {
      const fs::path hk = scratch("ck-heads" + std::to_string(attempt) + ".json");
      // A call in the first half of the run's calls: the CPU's pacing sizes a call by time, so
      // a run under another load can make fewer calls than the counted one (not half as many).
      const int at = 1 + static_cast<int>(rd() % static_cast<unsigned>(head_calls / 2));
      const auto k =
          test::run_demo(heads + " --checkpoint " + hk.string() + " --checkpoint-every 1e-9",
                         "ATTNLAB_TEST_KILL_AT_CALL=" + std::to_string(at));
      EXPECT_EQ(k.exit_code, 128 + SIGKILL) << "killed at call " << at;
      const auto resumed = test::run_demo(heads + " --checkpoint " + hk.string());
      ASSERT_EQ(resumed.exit_code, 0) << "killed at call " << at << ": " << resumed.err;
      EXPECT_EQ(resumed.out, heads_one.out) << "killed at call " << at;
    }
  }
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

TEST(Checkpoint, CtrlCSavesItAndTheSameCommandContinues) {
  const std::string args =
      "--table dk-std --rng philox --d-k 512,1024 --samples 1e6 --threads 1 --format csv";
  const fs::path ck = scratch("ck-int.json");
  const std::string one = test::run_demo(args + " -q").out;
  // Ctrl-C once the work started.
  const auto r =
      test::signal_when_ready(args + " -v --checkpoint " + ck.string(), "dk-std: started", SIGINT);
  ASSERT_TRUE(r.ready) << r.err;
  EXPECT_EQ(r.exit_code, 130) << r.err;
  ASSERT_TRUE(fs::exists(ck)) << "no checkpoint saved at Ctrl-C";
  EXPECT_EQ(test::run_demo(args + " -q --checkpoint " + ck.string()).out, one);
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// A checkpoint that cannot be saved while the run goes on (its folder gone after the first save,
// as a disk that fills) is warned of once; the run goes on to its results, those of a run
// without a checkpoint.
TEST(Checkpoint, ASaveThatFailsMidRunIsWarnedOfAndTheResultsStillCome) {
  const std::string args =
      "--table training-sweep --seeds 0:200000 --steps 200 --grad analytic -q --format csv";
  const auto plain = test::run_demo(args);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const fs::path dir = scratch("vanishing");
  fs::create_directories(dir);
  const fs::path ck = dir / "c.json", out = scratch("vanishing.csv");
  const auto r = test::run_command("sh -c '" + std::string(ATTN_DEMO) + " " + args +
                                   " --checkpoint " + ck.string() + " --checkpoint-every 0.001 > " +
                                   out.string() + " & pid=$!; while [ ! -e " + ck.string() +
                                   " ] && kill -0 $pid 2>/dev/null; do sleep 0.01; done; rm -rf " +
                                   dir.string() + "; wait $pid'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string warning = "warning: checkpoint not saved (cannot write " + ck.string();
  EXPECT_NE(r.err.find(warning), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(warning), r.err.rfind(warning)) << "warned of once: " << r.err;
  EXPECT_EQ(test::read_file(out), plain.out);
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// Results that cannot be written at the end (stdout on a full disk: /dev/full) fail the run, and
// the error says where the work is: the checkpoint, from which the same command continues to the
// results at once.
TEST(Checkpoint, AFailedWriteOfTheResultsNamesTheCheckpointThatHoldsTheWork) {
  const std::string args = kBulk[2] + " -q --format csv";
  const fs::path ck = scratch("ck-full.json");
  const auto full = test::run_demo(args + " --checkpoint " + ck.string() + " > /dev/full");
  EXPECT_EQ(full.exit_code, 1) << full.err;
  EXPECT_NE(full.err.find("cannot write to stdout"), std::string::npos) << full.err;
  EXPECT_NE(full.err.find("; the work done is in the checkpoint " + ck.string() +
                          ": the same command continues from it"),
            std::string::npos)
      << full.err;
  EXPECT_EQ(std::count(full.err.begin(), full.err.end(), '\n'), 1) << full.err;
  const auto again = test::run_demo(args + " --checkpoint " + ck.string());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, test::run_demo(args).out);
  // Without a checkpoint, no word of one.
  const auto plain = test::run_demo(args + " > /dev/full");
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_EQ(plain.err.find("checkpoint"), std::string::npos) << plain.err;
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// The speed note states what trained in this run: none when every chunk came from a finished
// checkpoint or from the parts (demo merge), never the file's reading time as a rate; under MPI
// every rank's seeds, and none of the checkpoint's.
TEST(Checkpoint, AResumedOrMergedRunStatesNoSpeedItDidNotHave) {
  const std::string args = kBulk[3] + " --adversary off -q --format json";
  const fs::path ck = scratch("ck-speed.json");
  const auto first = test::run_demo(args + " --checkpoint " + ck.string());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("seed-steps in"), std::string::npos) << first.out;
  EXPECT_EQ(first.out.find("this run trained"), std::string::npos) << first.out;
  const auto again = test::run_demo(args + " --checkpoint " + ck.string());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.find("seed-steps in"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("no seed trained in this run"), std::string::npos) << again.out;
  std::string dirs;
  for (int i = 0; i < 2; ++i) {
    const fs::path part = scratch("speed-part" + std::to_string(i));
    ASSERT_EQ(test::run_demo(args + " --shard " + std::to_string(i) + "/2 --out " + part.string())
                  .exit_code,
              0);
    dirs += " " + part.string();
  }
  const auto merged = test::run_demo("merge" + dirs + " -q --format json");
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_NE(merged.out.find("no seed trained in this run"), std::string::npos) << merged.out;
  EXPECT_EQ(nlohmann::json::parse(merged.out)["provenance"]["merged_parts"], 2) << merged.out;
  EXPECT_FALSE(nlohmann::json::parse(first.out)["provenance"].contains("merged_parts"));
  if (have_mpi()) {
    const fs::path mpi_ck = scratch("ck-speed-mpi.json");
    const auto fresh = test::run_command(mpirun(2) + args + " --checkpoint " + mpi_ck.string());
    ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
    EXPECT_NE(fresh.out.find("seed-steps in"), std::string::npos) << fresh.out;
    EXPECT_EQ(fresh.out.find("this run trained"), std::string::npos) << fresh.out;
    const auto resumed = test::run_command(mpirun(2) + args + " --checkpoint " + mpi_ck.string());
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_NE(resumed.out.find("no seed trained in this run"), std::string::npos) << resumed.out;
  }
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// Refusals (test::expect_refused): exit status 2, one line on stderr, nothing on stdout.
// Under mpirun too: Ctrl-C (forwarded to every rank) saves rank 0's checkpoint before the job
// ends, and the same command continues from it to the bytes of one process (the adversary off:
// the killed and resumed runs above carry its state through checkpoints).
TEST(Checkpoint, CtrlCUnderMpiSavesItAndTheSameCommandContinues) {
  if (!have_mpi()) GTEST_SKIP() << "built without MPI or no mpirun";
  const std::string args =
      "--table attention-sweep --task random --words 4 --d-model 4 --d-k 4 --steps 100 "
      "--seeds 0:200000 --adversary off --threads 1 --format csv";
  const fs::path ck = scratch("ck-mpi.json"), err = scratch("ck-mpi.err");
  const std::string one = test::run_demo(args + " -q").out;
  ASSERT_FALSE(one.empty());
  // Signalled once rank 0 says the work started (-v: the started line; at most 100 s of waiting).
  const auto stopped = test::run_command(
      "timeout 300 sh -c '" + mpirun(2) + args + " -v --checkpoint " + ck.string() +
      " >/dev/null 2>" + err.string() +
      " & pid=$!; i=0; until grep -q \"attention-sweep: started\" " + err.string() +
      " || [ $i -gt 2000 ]; do i=$((i+1)); sleep 0.05; done; kill -INT $pid; wait $pid'");
  EXPECT_NE(stopped.exit_code, 0);
  const std::string said = test::read_file(err);
  EXPECT_NE(said.find("checkpoint saved to"), std::string::npos) << said;
  ASSERT_TRUE(fs::exists(ck)) << said;
  const auto resumed = test::run_command(mpirun(2) + args + " -q --checkpoint " + ck.string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(resumed.out, one);
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

TEST(Refusals, BadShardsAndCheckpoints) {
  const std::string sweep = kBulk[2] + " -q";
  test::expect_refused(sweep + " --shard 3/3 --out x", 2, {"--shard"});
  test::expect_refused(sweep + " --shard 1 --out x", 2, {"expected I/N"});
  test::expect_refused(sweep + " --shard 0/0 --out x", 2, {"--shard"});
  test::expect_refused(sweep + " --shard 0/2", 2, {"needs --out"});
  test::expect_refused("--table qkv --shard 0/2 --out x", 2, {"qkv has no chunks"});
  test::expect_refused(sweep + " --checkpoint ''", 2, {"--checkpoint"});
  const fs::path ck = scratch("other.json");
  ASSERT_EQ(test::run_demo(sweep + " --checkpoint " + ck.string()).exit_code, 0);
  test::expect_refused(
      "--table training-sweep --seeds 0:999 --steps 200 --grad analytic -q "
      "--checkpoint " +
          ck.string(),
      2, {"made by another command: --seeds: 0:999 here, 0:10000 in the file"});
  test::expect_refused(kBulk[0] + " -q --checkpoint " + ck.string(), 2,
                       {"made by another command: other tables ([\"dk-std\"] here, "
                        "[\"training-sweep\"] in the file)"});
  {  // Another version, the build the same: the version is what is named.
    auto j = nlohmann::json::parse(test::read_file(ck));
    j["identity"]["version"] = "0.0.1";
    j.erase("checksum");
    j["checksum"] = content_checksum(j);
    test::write_file(ck, j.dump());
  }
  test::expect_refused(sweep + " --checkpoint " + ck.string(), 2,
                       {"made by another command: another version (", "0.0.1 in the file)"});
  const fs::path junk = scratch("junk.json");
  test::write_file(junk, "{\"format\": 1}");
  test::expect_refused(sweep + " --checkpoint " + junk.string(), 2, {"not an attnlab checkpoint"});
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

TEST(Refusals, RunErrorsThatNeedTheTable) {
  // Known once the table reads its settings: a usage error (exit 2), one line.
  const fs::path dir = scratch("numpy-part");
  test::expect_refused("--table dk-std --rng numpy --shard 0/2 -q --out " + dir.string(), 2,
                       {"--rng numpy is one sequential stream", "cannot be split"},
                       test::Refusal().leaves_no((dir / "dk-std.part.json").string()));
  // --rng auto (the default) names itself and why it took numpy's stream, not an option the
  // command did not give.
  const auto r =
      test::expect_refused("--table dk-std --shard 0/2 -q --out " + dir.string(), 2,
                           {"--rng auto takes numpy's stream", "cannot be split"},
                           test::Refusal().leaves_no((dir / "dk-std.part.json").string()));
  EXPECT_EQ(r.err.find("--rng numpy"), std::string::npos) << r.err;
  test::expect_refused(kBulk[2] + " -q --per-seed " + scratch("r.csv").string() + " --checkpoint " +
                           scratch("c.json").string(),
                       2, {"--per-seed with --checkpoint"},
                       test::Refusal().leaves_no(scratch("r.csv").string()));
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

TEST(Refusals, MismatchedPartsNameThePart) {
  const std::string args = kBulk[1] + " -q";
  std::vector<std::string> parts;
  for (int i = 0; i < 3; ++i) {
    parts.push_back(scratch("p" + std::to_string(i)).string());
    ASSERT_EQ(
        test::run_demo(args + " --shard " + std::to_string(i) + "/3 --out " + parts[i]).exit_code,
        0);
  }
  const std::string other2 = scratch("q2").string(), other_n = scratch("n1").string();
  ASSERT_EQ(test::run_demo(
                "--table softmax-saturation --samples 2000 --keys 4 -q --shard 2/3 --out " + other2)
                .exit_code,
            0);
  ASSERT_EQ(test::run_demo(args + " --shard 1/2 --out " + other_n).exit_code, 0);
  test::expect_refused("merge " + parts[0] + " " + parts[1], 2,
                       {"part 2 of 3 of softmax-saturation is missing"});
  test::expect_refused("merge " + parts[0] + " " + parts[1] + " " + parts[1], 2, {"again"});
  test::expect_refused(
      "merge " + parts[0] + " " + parts[1] + " " + other2, 2,
      {other2 + "/softmax-saturation.part.json is part of another command",
       "--keys: 3 in " + parts[0] + "/softmax-saturation.part.json, 4 in " + other2});
  test::expect_refused("merge " + parts[0] + " " + parts[1] + " " + parts[2] + " " + other_n, 2,
                       {other_n + "/softmax-saturation.part.json is one of 2 parts"});
  test::expect_refused("merge " + parts[0] + " " + scratch("nothing").string(), 2,
                       {scratch("nothing").string() + ": no such folder"});
  test::expect_refused("merge " + parts[0] + " " + parts[0] + "/softmax-saturation.part.json", 2,
                       {"softmax-saturation.part.json: not a folder"});
  const fs::path empty = scratch("empty");
  fs::create_directories(empty);
  test::expect_refused("merge " + parts[0] + " " + empty.string(), 2, {"holds no *.part.json"});
  // Another version: the same part, its version changed (and its checksum made again).
  {
    const std::string path = parts[2] + "/softmax-saturation.part.json";
    auto j = nlohmann::json::parse(test::read_file(path));
    j["identity"]["version"] = "0.0.1";
    j.erase("checksum");
    j["checksum"] = content_checksum(j);
    test::write_file(path, j.dump());
  }
  test::expect_refused("merge " + parts[0] + " " + parts[1] + " " + parts[2], 2,
                       {parts[2] + "/softmax-saturation.part.json was made by another version"});
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// merge takes its own options only: any other (merge p0 p1 --threads 0) is refused before any
// work, one line naming it, exit 2; never silently ignored.
TEST(Refusals, MergeTakesOnlyItsOwnOptions) {
  std::string dirs;
  for (int i = 0; i < 2; ++i) {
    const std::string part = scratch("own" + std::to_string(i)).string();
    ASSERT_EQ(test::run_demo(kBulk[1] + " -q --shard " + std::to_string(i) + "/2 --out " + part)
                  .exit_code,
              0);
    dirs += " " + part;
  }
  for (const std::string bad :
       {"--threads 0", "--threads abc", "--threads 100000", "--threads=2", "--samples 5",
        "--device cuda", "--verbose", "--checkpoint c.json", "--bogus"}) {
    const std::string option = bad.substr(0, bad.find_first_of(" ="));
    test::expect_refused("merge" + dirs + " " + bad, 2,
                         {"demo merge: error: " + option + " is not an option of merge"});
    if (option != "--bogus")  // before `merge`, demo's own parser refuses an unknown option
      test::expect_refused(bad + " merge" + dirs, 2,
                           {"demo merge: error: " + option + " is not an option of merge"});
  }
  test::expect_refused("merge" + dirs + " --out ''", 2, {"--out: an empty folder name"});
  // Its own options still work, after `merge` or before it.
  for (const std::string& args :
       {"merge" + dirs + " -q --format csv --no-plots", "--quiet --format csv merge" + dirs}) {
    const auto r = test::run_demo(args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    EXPECT_EQ(r.out.rfind("d_k,keys,samples", 0), 0u) << args << ": " << r.out;
  }
  // merge --help lists them, each with its line of help.
  const auto help = test::run_demo("merge --help");
  EXPECT_EQ(help.exit_code, 0);
  const std::pair<std::string, std::string> lines[] = {{"--out DIR", "into DIR"},
                                                       {"--format FORMAT", "table | csv"},
                                                       {"--force", "Replace existing"},
                                                       {"-q,--quiet", "No progress"},
                                                       {"--no-plots", "no figures"}};
  for (const auto& [option, says] : lines) {
    bool found = false;
    for (const std::string& line : test::lines_of(help.out))
      found = found || (line.rfind("  " + option, 0) == 0 && line.find(says) != std::string::npos);
    EXPECT_TRUE(found) << option << " (" << says << ") missing from:\n" << help.out;
  }
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// What is not the job's work is said once under a launcher: --version, --list, --help and each
// subcommand's --help print rank 0's copy alone (not one per rank), and a refusal
// is one line of demo's (beside mpirun's own note of the exit status), whether demo meets it
// while parsing, reading parts or checking a table's request.
TEST(Mpi, InformationAndRefusalsArePrintedOnce) {
  if (!have_mpi()) GTEST_SKIP() << "built without MPI or no mpirun";
  const std::vector<std::string> informational = {"--version",
                                                  "--list",
                                                  "--help",
                                                  "-h",
                                                  "--table dk-std --help",
                                                  "--table attention-sweep,training-sweep --help",
                                                  "attention --help",
                                                  "compare --help",
                                                  "merge --help"};
  for (const std::string& args : informational) {
    const auto one = test::run_demo(args);
    ASSERT_EQ(one.exit_code, 0) << args;
    for (int np : {2, 3}) {
      const auto many = test::run_command(mpirun(np) + args);
      EXPECT_EQ(many.exit_code, 0) << args << " -np " << np << ": " << many.err;
      EXPECT_EQ(many.out, one.out) << args << " -np " << np;
    }
  }
  const std::vector<std::string> refused = {
      "--table dk-std --d-k 0",
      "--bogus",
      "--table dk-std --d-k 2,02",
      "--table training-sweep --per-seed x.parquet",
      "merge " + scratch("no-parts").string(),
      "compare " + scratch("none-a.json").string() + " b.json",
      "attention --x " + scratch("none.npy").string() + " --w-q a --w-k a --w-v a",
      "--table dk-std --samples 1 -q",
      "--table dk-std -q --checkpoint " + fs::temp_directory_path().string()};
  for (const std::string& args : refused) {
    const auto one = test::run_demo(args);
    ASSERT_NE(one.exit_code, 0) << args;
    for (int np : {2, 3}) {
      const auto many = test::run_command(mpirun(np) + args);
      const auto lines = test::lines_of(many.err);
      const auto said = std::count_if(lines.begin(), lines.end(),
                                      [](const std::string& l) { return l.rfind("demo", 0) == 0; });
      EXPECT_NE(many.exit_code, 0) << args << " -np " << np;
      EXPECT_EQ(said, 1) << args << " -np " << np << ":\n" << many.err;
      EXPECT_NE(many.err.find(test::lines_of(one.err).at(0)), std::string::npos)
          << args << " -np " << np << ":\n"
          << many.err;
      EXPECT_TRUE(many.out.empty()) << args;
    }
  }
}

TEST(Mpi, ABuildWithoutMpiSaysSoWhenALauncherStartsSeveral) {
  if (cluster::built_with_mpi()) GTEST_SKIP() << "this build has MPI";
  test::expect_refused(kBulk[0] + " -q", 2, {"built without MPI"},
                       test::Refusal().under("OMPI_COMM_WORLD_SIZE=3"));
}

// MPI is a module that demo opens only under a launcher (host/cluster.hpp): demo links no MPI
// library, and a demo whose module is missing says where it looked, in one line.
TEST(Mpi, DemoLinksNoMpiLibrary) {
  const auto r = test::run_command("readelf -d " + std::string(ATTN_DEMO));
  if (r.exit_code != 0) GTEST_SKIP() << "no readelf";
  EXPECT_NE(r.out.find("(NEEDED)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("libmpi"), std::string::npos) << r.out;
}

TEST(Mpi, AMissingModuleIsOneLineUnderALauncher) {
  if (!cluster::built_with_mpi()) GTEST_SKIP() << "built without MPI";
  const test::TempDir dir;
  fs::copy_file(ATTN_DEMO, dir.path / "demo");
  // The launcher's word alone (no mpirun): init() opens the module before MPI starts.
  const auto r =
      test::run_command("OMPI_COMM_WORLD_SIZE=3 " + dir.file("demo") + " " + kBulk[0] + " -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find(dir.file("attnlab_mpi.so")), std::string::npos) << r.err;
  EXPECT_EQ(test::lines_of(r.err).size(), 1u) << r.err;
}

TEST(ExactStates, DoublesRoundTripBitForBit) {
  const std::vector<double> v = {0.0,       -0.0,   1.0 / 3,           1e-310, -2.5e300, INFINITY,
                                 -INFINITY, 5e-324, 0.7317287020936569};
  for (double x : v) {
    const double y = exact_double(exact(x));
    EXPECT_EQ(std::memcmp(&x, &y, 8), 0) << x;
  }
  EXPECT_TRUE(std::isnan(exact_double(exact(NAN))));
  std::vector<double> back;
  append_exact_vector(exact_vector(v), back);
  ASSERT_EQ(back.size(), v.size());
  EXPECT_EQ(std::memcmp(back.data(), v.data(), 8 * v.size()), 0);
  EXPECT_THROW(append_exact_vector("12", back), std::invalid_argument);
  EXPECT_THROW(append_exact_vector(std::string(16, 'g'), back), std::invalid_argument);
}

// ---- Checkpoints and parts read back: checked, never believed ----------------------------
// Every state in a checkpoint or part is checked against what its chunk must hold, and the
// file carries a checksum of its content. Each edit below, if believed, would resume or merge
// into wrong results (a sweep of 24667 seeds instead of 10000, a converged fraction above 1, a
// NaN mean); each is refused before any work: exit 2, one line naming the file and the fault.

using nlohmann::json;
using Edit = std::function<void(json&)>;

// Edits the JSON file at p; then, when reseal, stores the checksum of the edited content, so
// that what is refused is the content itself and not a stale checksum.
void edit_file(const fs::path& p, const Edit& edit, bool reseal = true) {
  json j = json::parse(test::read_file(p));
  edit(j);
  if (reseal) {
    j.erase("checksum");
    j["checksum"] = content_checksum(j);
  }
  test::write_file(p, j.dump());
}

// A refusal before any work: exit 2 (a refused input; 1 for a refused destination, as
// docs/CLI.md's rule says), one short line on stderr containing each of `says`, nothing on
// stdout, no --out folder made. Run under `timeout` so a hang fails instead of waiting for ever
// (exit 124).
void expect_refused_before_work(const std::string& args, const std::vector<std::string>& says,
                                int exit_code = 2) {
  const fs::path out = scratch("never-made");
  test::expect_refused(
      args + " --no-plots --out " + out.string(), exit_code, says,
      test::Refusal().under("timeout 20").leaves_no(out.string()).shorter_than(300));
}

// The bulk experiments as the edits below use them: dk-std 3 d_k of 600000 samples, softmax
// saturation 1 d_k (11 by default; the first is d_k 1) of 2000 rows, the sweep 2 configs of
// 10000 seeds; and the sweep with its quantiles binned (a budget of 100 weights).
const std::string kDk = kBulk[0] + " -q", kSat = kBulk[1] + " -q", kSweep = kBulk[2] + " -q";
const std::string kBinned = kBulk[2] + " -q --quantile-budget 100";

// A finished run's checkpoint (it holds the result of every chunk, "fold").
fs::path finished_checkpoint(const std::string& args, const std::string& name) {
  const fs::path ck = scratch(name);
  const auto r = test::run_demo(args + " --format csv --checkpoint " + ck.string());
  EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
  return ck;
}

struct Damage {
  const std::string* args;  // the command
  std::string what;         // for the trace
  Edit edit;
  std::vector<std::string> says;
};

json& fold(json& j, const std::string& table) { return j["tables"][table]["fold"]; }

TEST(DamagedCheckpoint, EditedStatesAreRefusedNamingTheFileAndTheFault) {
  std::map<const std::string*, fs::path> ck;
  int n = 0;
  for (const std::string* args : {&kDk, &kSat, &kSweep, &kBinned})
    ck[args] = finished_checkpoint(*args, "ck-done" + std::to_string(n++) + ".json");
  const std::vector<Damage> damages = {
      {&kSweep,
       "runs = -5",
       [](json& j) { fold(j, "training-sweep")[0]["runs"] = -5; },
       {"training-sweep", "config all-random", "runs -5 is not a count"}},
      {&kSweep,
       "runs 1 short",
       [](json& j) { fold(j, "training-sweep")[0]["runs"] = 9999; },
       {"runs 9999, where there are 10000"}},
      {&kSweep,
       "converged > runs",
       [](json& j) { fold(j, "training-sweep")[0]["converged"] = 99999; },
       {"converged 99999 >"}},
      {&kSweep,
       "diverged > runs",
       [](json& j) { fold(j, "training-sweep")[1]["diverged"] = 10001; },
       {"config qk-random", "diverged 10001 > runs 10000"}},
      {&kSweep,
       "a NaN moment",
       [](json& j) { fold(j, "training-sweep")[0]["moments"][2] = "nan"; },
       {"not finite"}},
      {&kSweep,
       "16 hex digits dropped",
       [](json& j) {
         auto& v = fold(j, "training-sweep")[0]["values"];
         v = v.get<std::string>().substr(16);
       },
       {"159984 hex digits of weights, where 10000 runs did not diverge"}},
      {&kSweep,
       "a figure bin",
       [](json& j) { fold(j, "training-sweep")[0]["figure_bins"][3] = 0; },
       {"the figure's bins count"}},
      {&kBinned,
       "a quantile bin",
       [](json& j) {
         auto& bins = fold(j, "training-sweep")[0]["bins"];
         bins[0][1] = bins[0][1].get<std::int64_t>() + 1;
       },
       {"quantile bins count"}},
      {&kBinned,
       "a quantile bin out of range",
       [](json& j) { fold(j, "training-sweep")[0]["bins"][0][0] = 1 << 20; },
       {"out of order, out of range or empty"}},
      {&kDk,
       "one sample short",
       [](json& j) { fold(j, "dk-std")[0][0] = exact(599999.0); },
       {"dk-std", "d_k 2", "moments of 599999 samples, where there are 600000"}},
      {&kDk,
       "a NaN mean",
       [](json& j) { fold(j, "dk-std")[2][1] = "nan"; },
       {"d_k 512", "not finite"}},
      {&kDk,
       "a negative m2",
       [](json& j) { fold(j, "dk-std")[1][2] = exact(-1.0); },
       {"negative sum of squares"}},
      {&kDk,
       "not a number",
       [](json& j) { fold(j, "dk-std")[1][3] = "12abc"; },
       {"'12abc' is not a number"}},
      {&kSat,
       "non_finite -1",
       [](json& j) { fold(j, "softmax-saturation")[6] = -1; },
       {"softmax-saturation", "d_k 1", "non_finite -1 is not a count"}},
      {&kSat,
       "one row too many",
       [](json& j) { fold(j, "softmax-saturation")[6] = 1; },
       {"2000 finite rows and 1 non-finite ones, where there are 2000"}},
      {&kSat,
       "a measure of other rows",
       [](json& j) { fold(j, "softmax-saturation")[4][0] = exact(1999.0); },
       {"different rows"}},
      {&kSweep,
       "next past the chunks",
       [](json& j) { j["tables"]["training-sweep"]["next"] = 7; },
       {"next 7 is more than 6"}},
      {&kSweep,
       "a held state past the chunks",
       [](json& j) {
         j["tables"]["training-sweep"]["states"] = json::array({json::array({99, json::object()})});
       },
       {"chunk 99 is more than 6"}},
      {&kSweep,
       "a held state of a chunk folded",
       [](json& j) {
         j["tables"]["training-sweep"]["states"] = json::array({json::array({2, json::object()})});
       },
       {"chunk 2 is out of order or out of range [6, 6)"}},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.what);
    const fs::path copy = scratch("ck-edited.json");
    fs::copy_file(ck[d.args], copy);
    edit_file(copy, d.edit);
    std::vector<std::string> says = d.says;
    says.push_back("--checkpoint " + copy.string() + ": ");
    expect_refused_before_work(*d.args + " --checkpoint " + copy.string(), says);
  }
  // Unedited, each still gives its table.
  for (const auto& [args, path] : ck)
    EXPECT_EQ(test::run_demo(*args + " --format csv --checkpoint " + path.string()).exit_code, 0);
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// The checksum catches what keeps every invariant: one digit of a mean. An older version's
// file (no checksum) and a truncated one are refused in one short line.
TEST(DamagedCheckpoint, ChecksumOldFormatAndTruncation) {
  const fs::path done = finished_checkpoint(kSweep, "ck-sum.json");
  const auto refused = [&](const Edit& edit, bool reseal, const std::vector<std::string>& says) {
    const fs::path copy = scratch("ck-sum-edited.json");
    fs::copy_file(done, copy);
    edit_file(copy, edit, reseal);
    std::vector<std::string> all = says;
    all.push_back("--checkpoint " + copy.string() + ": ");
    expect_refused_before_work(kSweep + " --checkpoint " + copy.string(), all);
  };
  const Edit last_digit = [](json& j) {
    auto& mean = fold(j, "training-sweep")[0]["moments"][1];
    std::string m = mean.get<std::string>();
    const std::size_t p = m.find('p');
    m[p - 1] = m[p - 1] == '1' ? '2' : '1';
    mean = m;
  };
  refused(last_digit, false, {"checksum mismatch", "changed or damaged"});
  refused([](json& j) { j.erase("checksum"); }, false, {"no checksum"});
  refused(
      [](json& j) {
        j["format"] = "attnlab-checkpoint 1";
        j.erase("checksum");
      },
      false, {"written by an older version of demo", "remove it"});
  refused([](json& j) { j["format"] = "something else"; }, true, {"not an attnlab checkpoint"});
  // Truncated in the middle of the kept weights: the parser's message quoted them all (282 KB).
  const std::string text = test::read_file(done);
  const fs::path cut = scratch("ck-cut.json");
  test::write_file(cut, text.substr(0, text.find("\"values\"") + 5000));
  expect_refused_before_work(kSweep + " --checkpoint " + cut.string(),
                             {"--checkpoint " + cut.string() + ": not JSON", "..."});
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// Parts of 2 shards, each table's; part 0 edited. merge reads parts only: refused before it
// makes its --out folder.
TEST(DamagedPart, EditedStatesAreRefusedNamingThePart) {
  std::map<const std::string*, std::pair<fs::path, fs::path>> parts;
  int n = 0;
  for (const std::string* args : {&kDk, &kSat, &kSweep}) {
    std::pair<fs::path, fs::path> dirs;
    for (int i = 0; i < 2; ++i) {
      const fs::path dir = scratch("dp" + std::to_string(n) + "-" + std::to_string(i));
      const auto r =
          test::run_demo(*args + " --shard " + std::to_string(i) + "/2 --out " + dir.string());
      ASSERT_EQ(r.exit_code, 0) << r.err;
      (i == 0 ? dirs.first : dirs.second) = dir;
    }
    parts[args] = dirs;
    ++n;
  }
  const auto state = [](json& j, int k) -> json& { return j["states"][k][1]; };
  const std::vector<Damage> damages = {
      {&kSweep,
       "converged 100000",
       [&](json& j) { state(j, 0)["converged"] = 100000; },
       {"training-sweep: chunk 0's state: converged 100000 > the 4096 runs"}},
      {&kSweep,
       "negative diverged",
       [&](json& j) { state(j, 1)["diverged"] = -3; },
       {"chunk 1's state: diverged -3 is not a count"}},
      {&kSweep,
       "negative runs",
       [&](json& j) { state(j, 1)["runs"] = -4096; },
       {"runs -4096 is not a count"}},
      {&kSweep,
       "a NaN moment",
       [&](json& j) { state(j, 2)["moments"][3] = "nan"; },
       {"chunk 2's state", "not finite"}},
      {&kSweep,
       "shortened values",
       [&](json& j) {
         auto& v = state(j, 0)["values"];
         v = v.get<std::string>().substr(0, v.get<std::string>().size() - 16);
       },
       {"65520 hex digits of weights, where 4096 runs"}},
      {&kSweep,
       "min above max",
       [&](json& j) { state(j, 0)["min"] = exact(3.0); },
       {"are not the extremes"}},
      {&kSweep,
       "a weight outside [min, max]",
       [&](json& j) {
         auto& v = state(j, 0)["values"];
         v = exact_vector({2.0}) + v.get<std::string>().substr(16);
       },
       {"outside [min, max]"}},
      {&kDk,
       "n changed",
       [&](json& j) { state(j, 0)[0] = exact(1.0); },
       {"dk-std: chunk 0's state", "one value with a spread"}},
      {&kDk, "an infinite m4", [&](json& j) { state(j, 1)[4] = "inf"; }, {"not finite"}},
      {&kSat,
       "negative non_finite",
       [&](json& j) { state(j, 0)[6] = -1; },
       {"softmax-saturation: chunk 0's state: non_finite -1 is not a count"}},
      {&kSat, "a NaN mean", [&](json& j) { state(j, 0)[2][1] = "nan"; }, {"not finite"}},
      {&kSweep,
       "a chunk out of order",
       [](json& j) { j["states"][1][0] = 7; },
       {"state for chunk 1 is missing or out of order"}},
      {&kSweep,
       "a chunk missing",
       [](json& j) { j["states"].erase(j["states"].size() - 1); },
       {"holds 2 states for the 3 chunks of its range"}},
      {&kSweep,
       "a range past the chunks",
       [](json& j) {
         j["range"] = json::array({0, 99});
       },
       {"range's end 99 is more than 6"}},
      // Its words (argv, what merge runs) edited away from its identity's command.
      {&kSweep,
       "words that ask for help",
       [](json& j) {
         j["argv"] = json::array({"demo", "--help"});
       },
       {"its words (argv) are not a run of demo", "run its shard again"}},
      {&kSweep,
       "words that do not parse",
       [](json& j) { j["argv"].push_back("csv"); },
       {"its words (argv) are not a run of demo"}},
      {&kSweep,
       "words of another command",
       [](json& j) {
         for (auto& w : j["argv"])
           if (w == "200") w = "201";
       },
       {"its words (argv) are not the command its identity records (--steps: 200 in its "
        "identity, 201 in its words"}},
      {&kSweep,
       "words of a merge",
       [](json& j) {
         j["argv"] = json::array({"demo", "merge", "a", "b"});
       },
       {"its words (argv) are not a run of demo"}},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.what);
    const auto& [p0, p1] = parts[d.args];
    const fs::path copy = scratch("dp-edited");
    fs::copy(p0, copy);
    const fs::path file = copy / (test::split(*d.args, ' ')[1] + ".part.json");
    edit_file(file, d.edit);
    std::vector<std::string> says = d.says;
    says.push_back("demo merge: error: " + file.string() + ": ");
    expect_refused_before_work("merge " + copy.string() + " " + p1.string() + " -q", says);
    fs::remove_all(copy);
  }
  // The checksum, an older version's part, a truncated part.
  const auto& [p0, p1] = parts[&kSat];
  const auto refused = [&](const Edit& edit, bool reseal, const std::vector<std::string>& says) {
    const fs::path copy = scratch("dp-sum");
    fs::copy(p0, copy);
    const fs::path file = copy / "softmax-saturation.part.json";
    edit_file(file, edit, reseal);
    std::vector<std::string> all = says;
    all.push_back("demo merge: error: " + file.string() + ": ");
    expect_refused_before_work("merge " + copy.string() + " " + p1.string() + " -q", all);
    fs::remove_all(copy);
  };
  refused(
      [&](json& j) {
        std::string m = state(j, 0)[0][1].get<std::string>();
        m[3] = m[3] == '1' ? '2' : '1';
        state(j, 0)[0][1] = m;
      },
      false, {"checksum mismatch"});
  refused(
      [](json& j) {
        j["format"] = "attnlab-part 1";
        j.erase("checksum");
      },
      false, {"written by an older version of demo", "run its shard again"});
  const fs::path cut = scratch("dp-cut");
  fs::copy(p0, cut);
  const fs::path file = cut / "softmax-saturation.part.json";
  const std::string text = test::read_file(file);
  test::write_file(file, text.substr(0, text.size() / 2));
  expect_refused_before_work("merge " + cut.string() + " " + p1.string() + " -q",
                             {"demo merge: error: part " + file.string() + ": not JSON"});
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// --per-seed rows travel in the parts: a row of another seed is refused.
TEST(DamagedPart, PerSeedRowsMustBeTheChunksSeeds) {
  const std::string args = kSweep + " --per-seed " + scratch("rows.csv").string();
  std::string dirs;
  fs::path first;
  for (int i = 0; i < 2; ++i) {
    const fs::path dir = scratch("rows-dp" + std::to_string(i));
    ASSERT_EQ(test::run_demo(args + " --shard " + std::to_string(i) + "/2 --out " + dir.string())
                  .exit_code,
              0);
    if (i == 0) first = dir;
    dirs += " " + dir.string();
  }
  const fs::path file = first / "training-sweep.part.json";
  edit_file(file, [](json& j) {
    std::string rows = j["states"][0][1]["rows"];
    rows.replace(0, rows.find(',', rows.find(',') + 1), "all-random,123456");
    j["states"][0][1]["rows"] = rows;
  });
  expect_refused_before_work("merge" + dirs + " -q",
                             {"demo merge: error: " + file.string(), "--per-seed row 0", "seed 0"});
  EXPECT_FALSE(fs::exists(scratch("rows.csv")));
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// ---- Values that cannot be: edited and signed again, refused by their domains ------------
// A checkpoint or part edited and signed again passes the checksum; every number in it must
// still be what it can be (host/exact_state.hpp's Domain, declared by each state next to its
// fields). Each forgery below keeps every count, order and checksum right and changes one
// value beyond its domain (with the moments and extremes made to agree, as an editor would);
// each is refused before any work, one line naming the file and the value.

// A sketch state (experiments/quantile_sketch.hpp, exact mode) with its kept value k set to v:
// extremes and moments made again from the values, in their order.
void forge_sketch(json& sketch, std::size_t k, double v) {
  std::vector<double> values;
  append_exact_vector(sketch["values"].get<std::string>(), values);
  ASSERT_LT(k, values.size()) << sketch.dump().substr(0, 200);
  values[k] = v;
  Moments m;
  for (double x : values) m.push(x);
  sketch["values"] = exact_vector(values);
  sketch["moments"] = exact(m);
  sketch["min"] = exact(*std::min_element(values.begin(), values.end()));
  sketch["max"] = exact(*std::max_element(values.begin(), values.end()));
}

// The attention-sweep of kBulk[4]: two passes (results past --map-memory), so that its
// checkpoint holds the first pass's summaries and the second pass's JSDs to the mean map.
const std::string kTwoPass = kBulk[4] + " -q";

TEST(ForgedCheckpoint, AJsdOfFiveNatsToTheMeanMapIsRefused) {
  const fs::path done = finished_checkpoint(kTwoPass, "ck-jsd.json");
  edit_file(done, [](json& j) {
    forge_sketch(j["tables"]["attention-sweep-second-pass"]["fold"]["to_mean"], 3, 5.0);
  });
  expect_refused_before_work(kTwoPass + " --checkpoint " + done.string(),
                             {"--checkpoint " + done.string(), "JSD to the mean map",
                              "a JSD of 5, outside [0, 0.693147]"});
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

TEST(ForgedCheckpoint, ALossOfMinusOneIsRefused) {
  const fs::path done = finished_checkpoint(kTwoPass, "ck-loss.json");
  edit_file(done, [](json& j) {
    forge_sketch(j["tables"]["attention-sweep"]["fold"]["finite"]["loss"], 0, -1.0);
  });
  expect_refused_before_work(kTwoPass + " --checkpoint " + done.string(),
                             {"--checkpoint " + done.string(), "a loss of -1, outside [0, inf)"});
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// Parts of kBulk[3] (results kept for the second pass, 4 x 4 maps) into 2 shards.
std::pair<fs::path, fs::path> kept_result_parts(const std::string& args, const std::string& tag) {
  std::pair<fs::path, fs::path> dirs;
  for (int i = 0; i < 2; ++i) {
    const fs::path dir = scratch(tag + std::to_string(i));
    const auto r =
        test::run_demo(args + " --shard " + std::to_string(i) + "/2 --out " + dir.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    (i == 0 ? dirs.first : dirs.second) = dir;
  }
  return dirs;
}

// A kept training result is the seed's final loss, its start loss and its final weights (the
// maps are measured from them again): a weight that is not finite beside a finite loss.
TEST(ForgedPart, AKeptWeightThatIsNotFiniteIsRefusedAndNoMapsAreWritten) {
  const fs::path maps = scratch("forged-maps.npy");
  const std::string args = kBulk[3] + " -q --per-seed " + maps.string();
  const auto [p0, p1] = kept_result_parts(args, "inf-weight");
  const fs::path file = p0 / "attention-sweep.part.json";
  edit_file(file, [](json& j) {
    std::vector<double> r;
    append_exact_vector(j["states"][0][1]["results"].get<std::string>(), r);
    ASSERT_TRUE(std::isfinite(r[0])) << "seed 0's final loss";
    r[2] = INFINITY;  // seed 0's W_Q[0][0] (after its two losses)
    j["states"][0][1]["results"] = exact_vector(r);
  });
  expect_refused_before_work("merge " + p0.string() + " " + p1.string() + " -q",
                             {"demo merge: error: " + file.string(), "seed 0",
                              "a final weight of inf, outside (-inf, inf)"});
  EXPECT_FALSE(fs::exists(maps)) << "maps.npy written from a refused part";
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// The same kind elsewhere: each forged value, each refused naming it.
TEST(ForgedPart, EveryTableRefusesValuesOutsideTheirDomains) {
  struct Forgery {
    std::string args, table, what;
    Edit edit;
    std::vector<std::string> says;
  };
  const auto state = [](json& j, int k) -> json& { return j["states"][k][1]; };
  const std::vector<Forgery> forgeries = {
      // The kept results and the summaries they give.
      {kBulk[3] + " -q",
       "attention-sweep",
       "a final weight that is NaN",
       [&](json& j) {
         std::vector<double> r;
         append_exact_vector(state(j, 0)["results"].get<std::string>(), r);
         r[3] = NAN;  // seed 0's W_Q[0][1]
         state(j, 0)["results"] = exact_vector(r);
       },
       {"seed 0", "a final weight of nan"}},
      {kBulk[3] + " -q",
       "attention-sweep",
       "a negative start loss",
       [&](json& j) {
         std::vector<double> r;
         append_exact_vector(state(j, 0)["results"].get<std::string>(), r);
         r[1] = -2;
         state(j, 0)["results"] = exact_vector(r);
       },
       {"seed 0", "a loss of -2"}},
      {kBulk[3] + " -q",
       "attention-sweep",
       "a summary that its kept results do not give",
       [&](json& j) { forge_sketch(state(j, 0)["finite"]["loss"], 0, 0.5); },
       {"not the one its kept results give"}},
      // The summaries' sketches, each against its quantity's domain.
      {kTwoPass,
       "attention-sweep",
       "a map entry of 5",
       [&](json& j) { forge_sketch(state(j, 0)["finite"]["entries"][1], 0, 5.0); },
       {"map entry 1", "a weight of the map of 5, outside [0, 1]"}},
      {kTwoPass,
       "attention-sweep",
       "a pair JSD of 0.9",
       [&](json& j) { forge_sketch(state(j, 0)["finite"]["pair_jsd"], 0, 0.9); },
       {"pair JSD", "a JSD of 0.9, outside [0, 0.693147]"}},
      {kTwoPass,
       "attention-sweep",
       "a negative output distance",
       [&](json& j) { forge_sketch(state(j, 0)["finite"]["pair_out"], 0, -0.25); },
       {"pair output distance", "an output distance of -0.25"}},
      {kTwoPass + " --converged-below 100",
       "attention-sweep",
       "a converged loss above the threshold",
       [&](json& j) { forge_sketch(state(j, 0)["converged"]["loss"], 0, 150); },
       {"a loss of 150, outside [0, 100]"}},
      {kTwoPass,
       "attention-sweep",
       "a mean map whose row sums to 1.2",
       [&](json& j) {
         json& e = state(j, 0)["finite"]["entries"][0];
         std::vector<double> v;
         append_exact_vector(e["values"].get<std::string>(), v);
         for (double& x : v) x = std::fmin(1.0, x + 0.2);
         Moments m;
         for (double x : v) m.push(x);
         e["values"] = exact_vector(v);
         e["moments"] = exact(m);
         e["min"] = exact(*std::min_element(v.begin(), v.end()));
         e["max"] = exact(*std::max_element(v.begin(), v.end()));
       },
       {"a mean map whose row 0 sums to"}},
      {kTwoPass,
       "attention-sweep",
       "moments of weights wider than their extremes allow",
       [&](json& j) {  // the spread 10 times wider, its shape kept (m2, m3, m4 scaled)
         json& m = state(j, 0)["finite"]["entries"][0]["moments"];
         m[2] = exact(exact_double(m[2]) * 100);
         m[3] = exact(exact_double(m[3]) * 1000);
         m[4] = exact(exact_double(m[4]) * 10000);
       },
       {"map entry 0", "larger than such values can have"}},
      // training-sweep: weights in [0, 1], rows that give the summary.
      {kSweep,
       "training-sweep",
       "a weight of 1.5",
       [&](json& j) {
         json& s = state(j, 0);
         std::vector<double> v;
         append_exact_vector(s["values"].get<std::string>(), v);
         const auto top = std::max_element(v.begin(), v.end()) - v.begin();
         const int bin = std::min(19, static_cast<int>(std::floor(v[top] * 20)));
         v[top] = 1.5;
         Moments m;
         for (double x : v) m.push(x);
         s["values"] = exact_vector(v);
         s["moments"] = exact(m);
         s["max"] = exact(1.5);
         s["figure_bins"][bin] = s["figure_bins"][bin].get<int>() - 1;
         s["figure_bins"][19] = s["figure_bins"][19].get<int>() + 1;
       },
       {"a weight on apple of 1.5, outside [0, 1]"}},
      // dk-std and softmax-saturation: moments of values in their domains.
      {kDk,
       "dk-std",
       "a mean q . k of 1e6 at d_k 2",
       [&](json& j) {
         json& m = state(j, 0);
         m[1] = exact(1e6);
       },
       {"a sample of q . k of 1e+06, outside [-89, 89]"}},
      {kDk,
       "dk-std",
       "a fourth moment below M2^2 / n",
       [&](json& j) {
         json& m = state(j, 0);
         m[4] = exact(exact_double(m[2]) * exact_double(m[2]) / exact_double(m[0]) / 2);
       },
       {"fourth central sum M4 = ", "is outside [M2^2 / n, M2^2]"}},
      {kSat,
       "softmax-saturation",
       "an entropy above ln 3",
       [&](json& j) { state(j, 0)[1][1] = exact(1.5); },
       {"an entropy of 1.5, outside [0, 1.09861]"}},
      {kSat,
       "softmax-saturation",
       "a largest weight below 1/3",
       [&](json& j) { state(j, 0)[0][1] = exact(0.25); },
       {"a largest weight of 0.25, outside [0.333333, 1]"}},
  };
  std::map<std::string, std::pair<fs::path, fs::path>> parts;
  int n = 0;
  for (const Forgery& f : forgeries) {
    SCOPED_TRACE(f.what);
    if (!parts.count(f.args))
      parts[f.args] = kept_result_parts(f.args, "dom" + std::to_string(n++));
    const auto& [p0, p1] = parts[f.args];
    const fs::path copy = scratch("dom-edited");
    fs::copy(p0, copy);
    const fs::path file = copy / (f.table + ".part.json");
    edit_file(file, f.edit);
    std::vector<std::string> says = f.says;
    says.push_back("demo merge: error: " + file.string() + ": " + f.table + ": chunk 0's state: ");
    expect_refused_before_work("merge " + copy.string() + " " + p1.string() + " -q", says);
    fs::remove_all(copy);
  }
  // Unedited, the parts merge.
  for (const auto& [args, dirs] : parts)
    EXPECT_EQ(test::run_demo("merge " + dirs.first.string() + " " + dirs.second.string() + " -q")
                  .exit_code,
              0)
        << args;
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// ---- Version 3's fields: edited and signed again, refused by their domains ----------------
// The summaries of many inputs, held-out inputs and --nudge (experiments/map_measures.hpp):
// test losses, pair JSDs at the start and JSDs after a nudge, the counts of generalized, nudged
// and rounding-sensitive seeds, the entries of the later measured inputs' maps, and the kept
// nudge JSDs. The parts of kBulk[7] keep no results (--map-memory 0), so that nothing but the
// fields' own checks stands between an edit and the table; kTeacherKept keeps them. Neither
// searches the adversarial map (its 64 held-out inputs make 1.5 million rows of it; the fields
// edited here are not its).
const std::string kTeacher = kBulk[7] + " -q";
const std::string kTeacherKept =
    "--table attention-sweep --task teacher --words 4 --d-model 4 --d-k 4 --heads 2 --inputs 2 "
    "--seeds 0:3000 --steps 100 --nudge --adversary off -q";

// Each edit of chunk 0's state in a copy of the first part, refused by demo merge saying `says`;
// the unedited parts merge.
void expect_forged_states_refused(
    const std::string& args, const std::string& tag,
    const std::vector<std::pair<Edit, std::vector<std::string>>>& edits) {
  const auto [p0, p1] = kept_result_parts(args, tag);
  for (const auto& [edit, says] : edits) {
    SCOPED_TRACE(says.back());
    const fs::path copy = scratch(tag + "-edited");
    fs::copy(p0, copy);
    const fs::path file = copy / "attention-sweep.part.json";
    edit_file(file, [&](json& j) { edit(j["states"][0][1]); });
    std::vector<std::string> all = says;
    all.push_back("demo merge: error: " + file.string() + ": attention-sweep: chunk 0's state: ");
    expect_refused_before_work("merge " + copy.string() + " " + p1.string() + " -q", all);
    fs::remove_all(copy);
  }
  EXPECT_EQ(test::run_demo("merge " + p0.string() + " " + p1.string() + " -q").exit_code, 0);
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

TEST(ForgedPart, ATestLossOfMinusOneIsRefused) {
  expect_forged_states_refused(kTeacher, "test-loss",
                               {{[](json& s) { forge_sketch(s["finite"]["test_loss"], 0, -1.0); },
                                 {"test loss: a loss of -1, outside [0, inf)"}}});
}

TEST(ForgedPart, JsdsAtTheStartAndAfterANudgeBeyondLn2AreRefused) {
  expect_forged_states_refused(kTeacher, "start-nudge",
                               {{[](json& s) { forge_sketch(s["finite"]["pair_start"], 0, 1.0); },
                                 {"pair JSD at the start: a JSD of 1, outside [0, 0.693147]"}},
                                {[](json& s) { forge_sketch(s["finite"]["nudge_jsd"], 0, 1.0); },
                                 {"JSD after a nudge: a JSD of 1, outside [0, 0.693147]"}}});
  // The kept nudge JSDs (the second pass measures from them).
  expect_forged_states_refused(kTeacherKept, "kept-nudge",
                               {{[](json& s) {
                                   std::vector<double> v;
                                   append_exact_vector(s["nudge"].get<std::string>(), v);
                                   v[0] = 2;
                                   s["nudge"] = exact_vector(v);
                                 },
                                 {"kept results of seed 0: a JSD of 2, outside [0, 0.693147]"}}});
}

// Counts an editor might believe: each within the seeds, each not what the summary's own
// values allow (both summaries edited alike where they must agree).
TEST(ForgedPart, GeneralizedNudgedAndSensitiveCountsThatCannotBeAreRefused) {
  const auto both = [](const char* field, int value) {
    return [=](json& s) {
      s["finite"][field] = value;
      s["converged"][field] = value;
    };
  };
  expect_forged_states_refused(
      kTeacher, "counts",
      {{both("generalized", 600), {"more seeds generalized than did not diverge"}},
       {both("generalized", 5),
        {"more seeds generalized than finite seeds have a test loss below 0.0001"}},
       {[](json& s) { s["finite"]["nudged"] = 500; },
        {"nudged or rounding-sensitive counts that are not of the covered seeds"}},
       {[](json& s) { s["finite"]["sensitive"] = 3; },
        {"a count of rounding-sensitive seeds that the JSDs after a nudge do not give"}},
       {[](json& s) { s["finite"]["found"] = 3; },
        {"seeds that found the known map, but no JSD to it below 0.001"}}});
}

// The second measured input's map (entries 16 on, row 4 on: 4 x 4 maps): moments and extremes
// of its entries (later_entries), and its mean map's rows.
TEST(ForgedPart, ALaterInputsMapEntryOutsideItsDomainIsRefused) {
  // Entry 16's field `name` set to `set`, or moved by `add` where set is NaN.
  const auto field = [](const char* name, double add, double set) {
    return [=](json& s) {
      json& later = s["finite"]["later_entries"];
      std::vector<double> v;
      append_exact_vector(later[name].get<std::string>(), v);
      v[0] = std::isnan(set) ? v[0] + add : set;
      later[name] = exact_vector(v);
    };
  };
  // Its mean 0.25 up, its extremes widened to [0, 1] to hold it: a row summing to 1.25.
  const auto mean_up = [&](json& s) {
    field("min", 0, 0.0)(s);
    field("max", 0, 1.0)(s);
    field("mean", 0.25, NAN)(s);
  };
  expect_forged_states_refused(
      kTeacher, "later",
      {{field("max", 0, 5.0), {"map entry 16: a weight of the map of 5, outside [0, 1]"}},
       {mean_up, {"a mean map whose row 4 sums to 1.25, not 1"}}});
}

TEST(ForgedCheckpoint, ATestLossOfMinusOneIsRefused) {
  const fs::path done = finished_checkpoint(kTeacher, "ck-test-loss.json");
  edit_file(done, [](json& j) {
    forge_sketch(j["tables"]["attention-sweep"]["fold"]["finite"]["test_loss"], 0, -1.0);
  });
  expect_refused_before_work(
      kTeacher + " --checkpoint " + done.string(),
      {"--checkpoint " + done.string(), "test loss: a loss of -1, outside [0, inf)"});
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// ---- Stops while parts and checkpoints are read --------------------------------------------
// demo merge and a resumed run read and check their files with stop points (the stop audit,
// host/progress.hpp: each phase's checks within its budget); a stop asked for while they are
// read ends the run with 130, nothing written and the checkpoint as it was.
TEST(StopsWhileReading, MergeAndResumeStopAndAreAudited) {
  const auto [p0, p1] = kept_result_parts(kDk, "stop-parts");
  const std::string merge = "merge " + p0.string() + " " + p1.string();
  const fs::path part = p0 / "dk-std.part.json";
  const auto all = test::run_demo(merge + " -q", "ATTNLAB_STOP_AUDIT=1000000000");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const std::pair<std::string, double> phases[] = {{"reading " + part.string(), 64 << 20},
                                                   {"parsing " + part.string(), 1 << 20},
                                                   {"checking a checksum", 64 << 20}};
  for (const auto& [label, budget] : phases) {
    const double most = test::stop_audit(all.err, label);
    EXPECT_GE(most, 0) << "no stop audit of " << label << " in:\n" << all.err;
    EXPECT_LE(most, budget) << label;
  }
  const fs::path out = scratch("stop-merged");
  const auto stopped = test::run_demo(merge + " -q --out " + out.string(), "ATTNLAB_STOP_AUDIT=3");
  EXPECT_EQ(stopped.exit_code, 130) << stopped.err;
  EXPECT_NE(stopped.err.find("interrupted"), std::string::npos) << stopped.err;
  EXPECT_TRUE(stopped.out.empty());
  EXPECT_FALSE(fs::exists(out));
  // A finished checkpoint read back: stopped while it is read, it is left as it was.
  const fs::path ck = finished_checkpoint(kDk, "stop-ck.json");
  const std::string before = test::read_file(ck);
  const auto resumed = test::run_demo(kDk + " --checkpoint " + ck.string(), "ATTNLAB_STOP_AUDIT=3");
  EXPECT_EQ(resumed.exit_code, 130) << resumed.err;
  EXPECT_GE(test::stop_audit(resumed.err, "parsing " + ck.string()), 0) << resumed.err;
  EXPECT_EQ(test::read_file(ck), before);
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// ---- Files that are not regular: refused without waiting on them -------------------------
TEST(NotAFile, CheckpointFifoDirectoryOrLinkIsRefusedWithoutWaiting) {
  const fs::path fifo = scratch("ck-fifo.json"), dir = scratch("ck-dir.json"),
                 link = scratch("ck-link.json"), target = scratch("ck-target.json");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directories(dir);
  test::write_file(target, "{}");
  fs::create_symlink(target, link);
  // Destinations demo may not write: refused as every refused destination is (exit 1, the
  // rule of docs/CLI.md), like --out or --per-seed on a FIFO.
  expect_refused_before_work(kSweep + " --checkpoint " + fifo.string(), {"is a FIFO"}, 1);
  expect_refused_before_work(kSweep + " --checkpoint " + dir.string(), {"is a directory"}, 1);
  expect_refused_before_work(kSweep + " --checkpoint " + link.string(), {"is a symbolic link"}, 1);
  const fs::path part_dir = scratch("part-fifo");
  fs::create_directories(part_dir);
  ASSERT_EQ(mkfifo((part_dir / "training-sweep.part.json").c_str(), 0600), 0);
  test::expect_refused(kSweep + " --shard 0/2 --out " + part_dir.string(), 1, {"is a FIFO"},
                       test::Refusal().under("timeout 20"));
  const fs::path out_fifo = scratch("out-fifo");
  ASSERT_EQ(mkfifo(out_fifo.c_str(), 0600), 0);
  test::expect_refused(kSweep + " --per-seed " + out_fifo.string(), 1, {"FIFO"},
                       test::Refusal().under("timeout 20"));
  EXPECT_EQ(test::read_file(target), "{}");
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

TEST(NotAFile, MergePartThatIsAFifoOrDirectoryIsRefusedWithoutWaiting) {
  const fs::path p1 = scratch("nf1");
  ASSERT_EQ(test::run_demo(kSat + " --shard 1/2 --out " + p1.string()).exit_code, 0);
  const fs::path with_fifo = scratch("nf-fifo"), with_dir = scratch("nf-dir");
  fs::create_directories(with_fifo);
  ASSERT_EQ(mkfifo((with_fifo / "softmax-saturation.part.json").c_str(), 0600), 0);
  fs::create_directories(with_dir / "softmax-saturation.part.json");
  expect_refused_before_work(
      "merge " + with_fifo.string() + " " + p1.string() + " -q",
      {(with_fifo / "softmax-saturation.part.json").string() + ": a FIFO, not a regular file"});
  expect_refused_before_work(
      "merge " + with_dir.string() + " " + p1.string() + " -q",
      {(with_dir / "softmax-saturation.part.json").string() + ": a directory, not a regular file"});
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// ---- A checkpoint that could not be saved: refused before the work, not after ------------
TEST(UnwritableCheckpoint, RefusedBeforeAnyWork) {
  // 40000 seeds: seconds of work, had it started.
  const std::string args = "--table training-sweep --seeds 0:40000 --steps 200 --grad analytic -q";
  expect_refused_before_work(args + " --checkpoint /proc/attn-ck.json", {"cannot write there"}, 1);
  expect_refused_before_work(args + " --checkpoint " + scratch("no-such-dir").string() + "/ck.json",
                             {"no folder"}, 1);
  const fs::path ro = scratch("ro"), full = scratch("full");
  fs::create_directories(ro);
  fs::create_directories(full);
  if (test::run_command("mount -t tmpfs -o size=64k,ro tmpfs '" + ro.string() + "'").exit_code != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root and mount rights)";
  expect_refused_before_work(args + " --checkpoint " + (ro / "ck.json").string(),
                             {"--checkpoint " + (ro / "ck.json").string(), "Read-only file system"},
                             1);
  test::run_command("umount '" + ro.string() + "'");
  ASSERT_EQ(test::run_command("mount -t tmpfs -o size=4k tmpfs '" + full.string() + "'").exit_code,
            0);
  test::run_command("dd if=/dev/zero of='" + full.string() + "/fill' bs=1k count=64 2>/dev/null");
  expect_refused_before_work(args + " --checkpoint " + (full / "ck.json").string(),
                             {"No space left on device"}, 1);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(full)) left.push_back(e.path().filename().string());
  test::run_command("umount '" + full.string() + "'");
  EXPECT_EQ(left, std::vector<std::string>{"fill"}) << "the probe left its temporary file";
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// ---- The pieces: exact text, its checks, the checksum ------------------------------------
TEST(ExactStates, ReadersRefuseWhatNoStateHolds) {
  EXPECT_EQ(exact_double(json("0x1.8p+1")), 3.0);
  for (const json& bad :
       {json("zzz"), json(""), json("0x1p+0 "), json(" 0x1p+0"), json("1.5x"), json(1.5)})
    EXPECT_THROW(exact_double(bad), std::invalid_argument) << bad.dump();
  Moments m;
  for (double x : {1.0, 2.0, 4.0}) m.push(x);
  const Moments back = exact_moments(exact(m));
  EXPECT_EQ(back.n, 3.0);
  EXPECT_EQ(back.mean, 7.0 / 3);
  EXPECT_EQ(exact_moments(exact(Moments{})).n, 0.0);
  const auto with = [&](int k, double v) {
    json j = exact(m);
    j[k] = exact(v);
    return j;
  };
  const std::pair<json, std::string> bad_moments[] = {
      {with(0, -5), "not a count"},
      {with(0, 2.5), "not a count"},
      {with(1, NAN), "not finite"},
      {with(4, INFINITY), "not finite"},
      {with(2, -1), "negative sum of squares"},
      {json::array({exact(0.0), exact(1.0), exact(0.0), exact(0.0), exact(0.0)}), "no values"},
      {json::array({exact(1.0), exact(1.0), exact(1.0), exact(0.0), exact(0.0)}), "one value"},
      {json::array({exact(1.0)}), "5 numbers"}};
  for (const auto& [j, says] : bad_moments) {
    try {
      exact_moments(j);
      ADD_FAILURE() << j.dump() << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(exact_count(json(7), "x"), 7);
  for (const json& bad : {json(-1), json(1.5), json("7"), json(nullptr)})
    EXPECT_THROW(exact_count(bad, "x"), std::invalid_argument) << bad.dump();
}

TEST(ExactStates, ChecksumIsFnv1a64OfTheContentWithoutIt) {
  // The published FNV-1a 64 test vectors (Fowler, Noll and Vo's reference test suite).
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
  json j = {{"b", 1}, {"a", "x"}};
  char want[32];
  std::snprintf(want, sizeof want, "fnv1a64:%016llx",
                static_cast<unsigned long long>(fnv1a64(R"({"a":"x","b":1})")));
  EXPECT_EQ(content_checksum(j), want);
  j["checksum"] = "anything";
  EXPECT_EQ(content_checksum(j), want) << "the checksum member is no part of the content";
}

}  // namespace
}  // namespace attn
