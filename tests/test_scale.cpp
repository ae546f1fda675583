// test_scale.cpp (test_scale, ctest label `mpi`): one answer however the work is split. Each bulk
// table run under `mpirun -np 2` and `-np 3`, as shards 0..2 of 3 merged, and killed with
// SIGKILL and resumed from its checkpoint, must print the bytes of one uninterrupted process;
// every mismatched part or checkpoint is refused with one line naming it. Sample counts are
// small: each run takes well under a second of CPU.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "helpers.hpp"
#include "host/chunks.hpp"
#include "host/cluster.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

// The three bulk tables, with a few chunks each (dk-std 5, saturation 13, the sweep 6).
const std::vector<std::string> kBulk = {
    "--table dk-std --rng philox --dk 2,64,512 --samples 6e5",
    "--table softmax-saturation --samples 2000 --keys 3",
    "--table training-sweep --seeds 0:10000 --steps 200 --grad analytic"};

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d.parent_path());
  return d;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
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
  const std::string args = "--table dk-std --rng numpy --dk 2,64 --samples 1000 --format csv";
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
    // A table without chunks, with a per-seed file: the rows of one process.
    const std::string sweep = "--table attention-sweep --steps 5 --seeds 0:8 --format csv -q";
    const fs::path rows = dir / ("rows-" + std::to_string(np) + ".csv");
    const fs::path rows1 = dir / ("rows1-" + std::to_string(np) + ".csv");
    const auto alone = test::run_demo(sweep + " --per-seed " + rows1.string());
    const auto ranks = test::run_command(mpirun(np) + sweep + " --per-seed " + rows.string());
    ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
    EXPECT_EQ(ranks.out, alone.out);
    EXPECT_EQ(read_file(rows), read_file(rows1));
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
    const std::string csv = read_file(one / (name + ".csv"));
    ASSERT_FALSE(csv.empty());
    EXPECT_EQ(m.out, csv) << args;
    EXPECT_EQ(read_file(merged / (name + ".csv")), csv) << args;
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
    dirs += " " + part.string();
  }
  const auto m = test::run_demo("merge" + dirs + " -q");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  // The merged command writes the rows to the path the parts were given.
  const std::string text = read_file(rows);
  EXPECT_EQ(text, read_file(one));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 2 * 10000);
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// Starts `args` in the background, kills it with SIGKILL after `ms` milliseconds.
void start_and_kill(const std::string& args, int ms) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c",
          ("exec " + std::string(ATTN_DEMO) + " " + args + " >/dev/null 2>&1").c_str(), nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

TEST(Checkpoint, KilledAtARandomMomentAndResumedGivesTheBytesOfOneRun) {
  // About 1e9 normals on one thread (a second or a few), 9 chunks; killed at a random moment
  // within the time one run takes.
  const std::string args =
      "--table dk-std --rng philox --dk 512,1024 --samples 3e5 --threads 1 --format csv -q";
  const auto t0 = std::chrono::steady_clock::now();
  const auto one = test::run_demo(args);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const int run_ms = static_cast<int>(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  std::random_device rd;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const fs::path ck = scratch("ck" + std::to_string(attempt) + ".json");
    const int ms = 50 + static_cast<int>(rd() % static_cast<unsigned>(std::max(run_ms, 100)));
    start_and_kill(args + " --checkpoint " + ck.string() + " --checkpoint-every 0.1", ms);
    const auto resumed = test::run_demo(args + " --checkpoint " + ck.string());
    ASSERT_EQ(resumed.exit_code, 0) << "killed after " << ms << " ms: " << resumed.err;
    EXPECT_EQ(resumed.out, one.out) << "killed after " << ms << " ms";
    // A finished checkpoint gives the same table again without work.
    EXPECT_EQ(test::run_demo(args + " --checkpoint " + ck.string()).out, one.out);
  }
  // The sweep too (its state holds every weight, for exact quantiles).
  const std::string sweep = kBulk[2] + " --threads 1 --format csv -q";
  const auto sweep_one = test::run_demo(sweep);
  const fs::path ck = scratch("ck-sweep.json");
  start_and_kill(sweep + " --checkpoint " + ck.string() + " --checkpoint-every 0.05", 250);
  EXPECT_EQ(test::run_demo(sweep + " --checkpoint " + ck.string()).out, sweep_one.out);
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

TEST(Checkpoint, CtrlCSavesItAndTheSameCommandContinues) {
  const std::string args =
      "--table dk-std --rng philox --dk 512,1024 --samples 1e6 --threads 1 --format csv -q";
  const fs::path ck = scratch("ck-int.json");
  const std::string one = test::run_demo(args).out;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c",
          ("exec " + std::string(ATTN_DEMO) + " " + args + " --checkpoint " + ck.string() +
           " >/dev/null 2>&1")
              .c_str(),
          nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  ASSERT_TRUE(fs::exists(ck)) << "no checkpoint saved at Ctrl-C";
  EXPECT_EQ(test::run_demo(args + " --checkpoint " + ck.string()).out, one);
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// A refusal: exit status 2, one line on stderr containing `says`, nothing on stdout.
void expect_refused(const std::string& args, const std::string& says) {
  const auto r = test::run_demo(args);
  EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
  EXPECT_TRUE(r.out.empty()) << args;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
}

TEST(Refusals, BadShardsAndCheckpoints) {
  const std::string sweep = kBulk[2] + " -q";
  expect_refused(sweep + " --shard 3/3 --out x", "--shard");
  expect_refused(sweep + " --shard 1 --out x", "expected I/N");
  expect_refused(sweep + " --shard 0/0 --out x", "--shard");
  expect_refused(sweep + " --shard 0/2", "needs --out");
  expect_refused("--table qkv --shard 0/2 --out x", "qkv has no chunks");
  expect_refused(sweep + " --checkpoint ''", "--checkpoint");
  const fs::path ck = scratch("other.json");
  ASSERT_EQ(test::run_demo(sweep + " --checkpoint " + ck.string()).exit_code, 0);
  expect_refused(
      "--table training-sweep --seeds 0:999 --steps 200 --grad analytic -q "
      "--checkpoint " +
          ck.string(),
      "made by another command");
  expect_refused(kBulk[0] + " -q --checkpoint " + ck.string(), "made by another command");
  const fs::path junk = scratch("junk.json");
  std::ofstream(junk) << "{\"format\": 1}";
  expect_refused(sweep + " --checkpoint " + junk.string(), "not an attnlab checkpoint");
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

TEST(Refusals, RunErrorsThatNeedTheTable) {
  // Known once the table reads its settings: a usage error (exit 2), one line.
  const fs::path dir = scratch("numpy-part");
  const auto r = test::run_demo("--table dk-std --rng numpy --shard 0/2 -q --out " + dir.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot be split"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "dk-std.part.json"));
  const auto p = test::run_demo(kBulk[2] + " -q --per-seed " + scratch("r.csv").string() +
                                " --checkpoint " + scratch("c.json").string());
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("--per-seed with --checkpoint"), std::string::npos) << p.err;
  EXPECT_FALSE(fs::exists(scratch("r.csv")));
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
  expect_refused("merge " + parts[0] + " " + parts[1],
                 "part 2 of 3 of softmax-saturation is missing");
  expect_refused("merge " + parts[0] + " " + parts[1] + " " + parts[1], "again");
  expect_refused("merge " + parts[0] + " " + parts[1] + " " + other2,
                 other2 + "/softmax-saturation.part.json is part of another command");
  expect_refused("merge " + parts[0] + " " + parts[1] + " " + parts[2] + " " + other_n,
                 other_n + "/softmax-saturation.part.json is one of 2 parts");
  expect_refused("merge " + parts[0] + " " + scratch("nothing").string(), "not a directory");
  const fs::path empty = scratch("empty");
  fs::create_directories(empty);
  expect_refused("merge " + parts[0] + " " + empty.string(), "holds no *.part.json");
  // Another version: the same part, its version changed.
  {
    const std::string path = parts[2] + "/softmax-saturation.part.json";
    auto j = nlohmann::json::parse(read_file(path));
    j["identity"]["version"] = "0.0.1";
    std::ofstream(path) << j.dump();
  }
  expect_refused("merge " + parts[0] + " " + parts[1] + " " + parts[2],
                 parts[2] + "/softmax-saturation.part.json was made by another version");
  fs::remove_all(fs::temp_directory_path() / ("attn-scale-" + std::to_string(getpid())));
}

// merge takes its own options only: any other was silently ignored (merge p0 p1 --threads 0
// printed the table, exit 0). Refused before any work, one line naming it, exit 2.
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
    expect_refused("merge" + dirs + " " + bad, "merge: " + option + " is not an option of merge");
    if (option != "--bogus")  // before `merge`, demo's own parser refuses an unknown option
      expect_refused(bad + " merge" + dirs, "merge: " + option + " is not an option of merge");
  }
  expect_refused("merge" + dirs + " --out ''", "--out: an empty folder name");
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

TEST(Mpi, ABuildWithoutMpiSaysSoWhenALauncherStartsSeveral) {
  if (cluster::built_with_mpi()) GTEST_SKIP() << "this build has MPI";
  const auto r = test::run_command("OMPI_COMM_WORLD_SIZE=3 " + std::string(ATTN_DEMO) + " " +
                                   kBulk[0] + " -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("built without MPI"), std::string::npos) << r.err;
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
  EXPECT_THROW(append_exact_vector("12", back), std::runtime_error);
  EXPECT_THROW(append_exact_vector(std::string(16, 'g'), back), std::runtime_error);
}

}  // namespace
}  // namespace attn
