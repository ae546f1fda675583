// test_cli.cpp: the `demo` command line, through the real binary: refusals before any work,
// help, version and list, and machine-readable output (CSV, JSON) on a clean stdout.
#include <gtest/gtest.h>

#include <chrono>

#include <algorithm>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"
#include "host/plots.hpp"

namespace attn {
namespace {

using test::ProcessResult;
using test::run_demo;

using test::lines_of;

// A CSV line's fields (no quoted fields expected in these tables).
std::vector<std::string> fields_of(const std::string& line) { return test::split(line, ','); }

using test::is_one_line;

// ---- refusals --------------------------------------------------------------------------------

// Refusals (test::expect_refused): exit 2 for a usage error, nothing on stdout, one line on
// stderr. A request its table refuses once it reads its settings is refused before any work too
// (the stop audit says nothing), the reason the only line (-q).
const test::Refusal kBeforeWork = test::Refusal().before_any_work();

// Requests of any size are refused before memory or time is spent on them: the chunk driver's
// limit (2^28 chunks), a d_k beyond 2^16, a saturation row beyond 2^24 normals. (A philox run of
// 10^15 samples at d_k 2^20 is refused before a chunk list of 12 GB is made.)
TEST(CliRefuses, RequestsBeyondTheChunkDriversLimit) {
  test::expect_refused("--table dk-std --rng philox --samples 1e15 --d-k 65536 -q", 2, {"2^28"},
                       kBeforeWork);
  test::expect_refused("--table softmax-saturation --samples 1e15 --d-k 1 -q", 2, {"2^28"},
                       kBeforeWork);
  test::expect_refused("--table rnn-decay,softmax-saturation --keys 65536 --d-k 1024 -q", 2,
                       {"(keys + 1) d_k"}, kBeforeWork);
  test::expect_refused("--table dk-std --d-k 65537", 2, {"--d-k"});
  test::expect_refused("--table dk-std --samples 1 -q", 2, {"at least 2 samples"}, kBeforeWork);
  test::expect_refused("--table softmax-saturation --d-k 65537", 2, {"--d-k"});
}

TEST(CliRefuses, UnknownTable) { test::expect_refused("--table nosuch", 2, {"--table"}); }
TEST(CliRefuses, UnknownTableInAList) {
  test::expect_refused("--table dk-std,nosuch", 2, {"--table"});
}
TEST(CliRefuses, DkZero) { test::expect_refused("--table dk-std --d-k 0", 2, {"--d-k"}); }
TEST(CliRefuses, DkNegative) { test::expect_refused("--table dk-std --d-k -3", 2, {"--d-k"}); }
TEST(CliRefuses, DkNotANumber) { test::expect_refused("--table dk-std --d-k abc", 2, {"--d-k"}); }
TEST(CliRefuses, DkEmptyItem) { test::expect_refused("--table dk-std --d-k 2,,3", 2, {"--d-k"}); }
// A list's value given twice would make its row twice: refused, compared as values.
// An empty item in --table's list is named as such, not as a table called ''.
TEST(CliRefuses, AnEmptyItemInTheTableList) {
  for (const std::string tables : {"knob,,qkv", "knob,", ",knob"})
    test::expect_refused("--table " + tables, 2,
                         {"--table " + tables + ": an empty item", "expected one or more of"});
}

TEST(CliRefuses, ListValuesGivenTwice) {
  test::expect_refused("--table dk-std --d-k 2,64,2", 2, {"--d-k 2,64,2: 2 is given twice"});
  test::expect_refused("--table dk-std --d-k 2,02", 2,
                       {"--d-k 2,02: 2 and 02 are one value given twice"});
  test::expect_refused("--table softmax-saturation --d-k 8,008", 2, {"8 and 008"});
  test::expect_refused("--table rnn-decay --n 1,2,1", 2, {"--n 1,2,1: 1 is given twice"});
  test::expect_refused("--table knob --knob-steps 0,10,00", 2, {"0 and 00"});
  test::expect_refused("--table training-sweep --configs qk-random,qk-random", 2,
                       {"qk-random,qk-random: qk-random is given twice"});
  test::expect_refused("--table training --configs all-random,qk-random,all-random", 2,
                       {"all-random is given twice"});
}
// An output file's extension names its format: another one is refused, never written as CSV
// under that name (training-sweep writes .csv alone).
TEST(CliRefuses, OutputFileOfAnUnknownExtension) {
  test::TempDir d;
  for (const std::string name : {"rows.parquet", "rows.npy", "rows.csv.gz", "rows.json"})
    test::expect_refused("--table training-sweep --seeds 0:4 --per-seed " + d.file(name), 2,
                         {"--per-seed " + d.file(name) + ": unknown extension", "(it writes .csv)"},
                         test::Refusal().leaves_no(d.file(name)));
  const auto r = test::run_demo("--table training-sweep --seeds 0:4 --steps 5 -q --per-seed " +
                                d.file("rows.CSV"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}
TEST(CliRefuses, SamplesZero) {
  test::expect_refused("--table dk-std --samples 0", 2, {"--samples"});
}
TEST(CliRefuses, SeedNegative) { test::expect_refused("--table dk-std --seed -1", 2, {"--seed"}); }
TEST(CliRefuses, StepsZero) { test::expect_refused("--table training --steps 0", 2, {"--steps"}); }
TEST(CliRefuses, LearningRateNan) {
  test::expect_refused("--table training --lr nan", 2, {"--lr"});
}
// Zero threads is not a thread count; "--threads N" takes 1 to 4 per core (the default, when
// the option is not given, is all cores).
TEST(CliRefuses, ThreadsZero) {
  test::expect_refused("--table rnn-decay --threads 0", 2, {"--threads"});
}
TEST(CliRefuses, ThreadsNegative) {
  test::expect_refused("--table rnn-decay --threads -1", 2, {"--threads"});
}
// The message states the real range, 1 to 4 per core of this machine, not 1 to 2^30.
TEST(CliRefuses, ThreadsMessageStatesTheRealRange) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (const char* bad : {"0", "abc", "100000"}) {
    SCOPED_TRACE(bad);
    test::expect_refused(
        std::string("--table rnn-decay --threads ") + bad, 2,
        {"--threads: expected a whole number from 1 to " + std::to_string(4 * cores) + " "});
  }
}
// A bad value is refused once the whole line is read: --help, --version and --list still answer.
TEST(CliRefuses, HelpVersionAndListComeBeforeABadValue) {
  for (const char* args : {"--device nosuch --help", "--threads 0 --version", "--list --gpu x",
                           "compare --tolerance x --help"}) {
    SCOPED_TRACE(args);
    const ProcessResult r = run_demo(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.err.empty()) << r.err;
    EXPECT_FALSE(r.out.empty());
  }
}
TEST(CliRefuses, UnknownDevice) { test::expect_refused("--device nosuch", 2, {"--device"}); }
TEST(CliRefuses, UnknownFormat) { test::expect_refused("--format xml", 2, {"--format"}); }
TEST(CliRefuses, UnknownGradient) {
  test::expect_refused("--table training --grad x", 2, {"--grad"});
}
TEST(CliRefuses, UnknownFlag) { test::expect_refused("--bogus", 2, {"--bogus"}); }
TEST(CliRefuses, BackwardSeedRange) {
  test::expect_refused("--table training --seeds 7:3", 2, {"--seeds"});
}
TEST(CliRefuses, UnknownConfig) {
  test::expect_refused("--table training --configs nosuch", 2, {"--configs"});
}

TEST(CliRefuses, RefusalMessagesNameTheOptionAndValue) {
  const ProcessResult r = run_demo("--table dk-std --d-k 2,abc");
  EXPECT_NE(r.err.find("--d-k"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("abc"), std::string::npos) << r.err;
  const ProcessResult t = run_demo("--table nosuch");
  EXPECT_NE(t.err.find("nosuch"), std::string::npos) << t.err;
}

// --device cuda without a GPU (a CPU-only build, or a CUDA build on a machine without a GPU) is
// an error; with one it runs. Which one this is, demo's own provenance says (--device auto picks
// CUDA exactly when a GPU answers).
TEST(CliDevice, CudaRunsOnlyWhenAGpuAnswers) {
  const ProcessResult probe = run_demo("--table rnn-decay --device auto --format json -q");
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  const auto doc = nlohmann::json::parse(probe.out);
  const std::string backend = doc["provenance"]["backend"].get<std::string>();
  ASSERT_TRUE(backend == "cpu" || backend == "cuda") << backend;
  const ProcessResult version = run_demo("--version");
  if (version.out.find("CPU only") != std::string::npos) {
    EXPECT_EQ(backend, "cpu");
  }

  if (backend == "cpu") {
    test::expect_refused("--table rnn-decay --device cuda -q", test::kAnyError);
  } else {
    const ProcessResult r = run_demo("--table rnn-decay --device cuda -q");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("rnn-decay"), std::string::npos);
  }
}

TEST(CliRefuses, GpuNegative) { test::expect_refused("--table rnn-decay --gpu -1", 2, {"--gpu"}); }
TEST(CliRefuses, GpuNotANumber) {
  test::expect_refused("--table rnn-decay --gpu first", 2, {"--gpu"});
}

// --gpu N names a device ordinal; one the runtime does not have (or no GPU at all) is refused
// with one line before any work under --device cuda, and is a CPU fallback under auto.
TEST(CliDevice, GpuBeyondTheDeviceCount) {
  test::expect_refused("--table rnn-decay --device cuda --gpu 1023 -q", 1);
  // (a table the backend computes: a host-only one says nothing of the device)
  const ProcessResult a =
      run_demo("--table dk-std --d-k 2 --samples 100 --device auto --gpu 1023 --format json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["provenance"]["backend"], "cpu");
  EXPECT_NE(a.err.find("no GPU"), std::string::npos) << a.err;
}

TEST(CliDevice, CpuAlwaysRuns) {
  const ProcessResult r = run_demo("--table rnn-decay --device cpu --format json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["provenance"]["backend"], "cpu");
}

// ---- help, version, list ---------------------------------------------------------------------

TEST(CliInfo, Help) {
  const ProcessResult r = run_demo("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Examples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--table"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("compare"), std::string::npos) << r.out;
}

TEST(CliInfo, Version) {
  const ProcessResult r = run_demo("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("attnlab", 0), 0u) << r.out;
  EXPECT_TRUE(is_one_line(r.out)) << r.out;
}

TEST(CliInfo, ListNamesEveryTable) {
  const ProcessResult r = run_demo("--list");
  EXPECT_EQ(r.exit_code, 0);
  const std::vector<std::string> names = {
      "rnn-decay",      "weighted-average",   "qkv",           "knob", "dk-std", "training",
      "self-attention", "softmax-saturation", "training-sweep"};
  // Each name is the first word of a line of its own.
  std::set<std::string> first_words;
  for (const auto& l : lines_of(r.out)) {
    const auto b = l.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    first_words.insert(l.substr(b, l.find(' ', b) - b));
  }
  for (const auto& n : names) EXPECT_TRUE(first_words.count(n)) << n << " missing from:\n" << r.out;
}

// ---- machine-readable output -----------------------------------------------------------------

void expect_pure_csv(const std::string& out, std::size_t rows) {
  const auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), rows + 1) << out;
  const auto commas = std::count(lines[0].begin(), lines[0].end(), ',');
  for (const auto& l : lines)
    EXPECT_EQ(std::count(l.begin(), l.end(), ','), commas) << "not a CSV row: " << l;
  EXPECT_EQ(out.back(), '\n');
}

TEST(CliCsv, DkStdDefault) {
  const ProcessResult r = run_demo("--table dk-std --format csv -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("d_k,samples,std,std_scaled", 0), 0u) << lines[0];
  expect_pure_csv(r.out, 3);
  std::vector<std::string> dks;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto f = fields_of(lines[i]);
    dks.push_back(f[0]);
    EXPECT_EQ(f[1], "10000") << lines[i];  // the default sample count
  }
  EXPECT_EQ(dks, (std::vector<std::string>{"2", "64", "512"}));
}

TEST(CliCsv, DkStdChosenDk) {
  const ProcessResult r = run_demo("--table dk-std --d-k 2,8 --format csv -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_pure_csv(r.out, 2);
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(fields_of(lines[1])[0], "2");
  EXPECT_EQ(fields_of(lines[2])[0], "8");
}

TEST(CliCsv, Training) {
  const ProcessResult r = run_demo("--table training --format csv -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0].rfind("config,seed,weight_on_apple,out_x,out_y,loss", 0), 0u) << lines[0];
  expect_pure_csv(r.out, lines.size() - 1);
  const std::set<std::string> configs = {"qk-identity", "all-identity", "all-random", "qk-random"};
  std::set<std::string> seen;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string c = fields_of(lines[i])[0];
    EXPECT_TRUE(configs.count(c)) << "unknown config in: " << lines[i];
    seen.insert(c);
  }
  EXPECT_EQ(seen, configs);  // by default every config runs
}

// Logs and notices go to stderr even when not quiet: stdout stays pure CSV.
TEST(CliCsv, StdoutIsPureCsvWithoutQuiet) {
  for (const std::string table : {"dk-std", "rnn-decay"}) {
    SCOPED_TRACE(table);
    const ProcessResult r = run_demo("--table " + table + " --format csv");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto lines = lines_of(r.out);
    ASSERT_GE(lines.size(), 2u);
    expect_pure_csv(r.out, lines.size() - 1);
  }
  const ProcessResult v = run_demo("--table dk-std --format csv -v");
  ASSERT_EQ(v.exit_code, 0) << v.err;
  expect_pure_csv(v.out, 3);
}

void expect_provenance(const nlohmann::json& p) {
  ASSERT_TRUE(p.is_object()) << p.dump();
  for (const char* key : {"version", "git_commit", "command_line", "backend", "start_utc"}) {
    ASSERT_TRUE(p.contains(key)) << key << " missing from " << p.dump();
    EXPECT_TRUE(p[key].is_string()) << key;
    EXPECT_FALSE(p[key].get<std::string>().empty()) << key;
  }
  ASSERT_TRUE(p.contains("device")) << p.dump();
  EXPECT_TRUE(p["device"].is_object());
  ASSERT_TRUE(p.contains("wall_seconds"));
  EXPECT_TRUE(p["wall_seconds"].is_number());
  EXPECT_GE(p["wall_seconds"].get<double>(), 0.0);
  EXPECT_TRUE(std::regex_match(p["start_utc"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << p["start_utc"];
  EXPECT_EQ(p["command_line"].get<std::string>().rfind("demo ", 0), 0u) << p["command_line"];
  // The same version and commit as --version prints.
  const ProcessResult v = run_demo("--version");
  EXPECT_NE(v.out.find(p["version"].get<std::string>()), std::string::npos) << v.out;
  EXPECT_NE(v.out.find(p["git_commit"].get<std::string>()), std::string::npos) << v.out;
}

TEST(CliJson, DkStd) {
  const ProcessResult r = run_demo("--table dk-std --format json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out;
  expect_provenance(j["provenance"]);
  EXPECT_NE(j["provenance"]["command_line"].get<std::string>().find("--table dk-std"),
            std::string::npos);
  ASSERT_TRUE(j["tables"].is_array());
  ASSERT_EQ(j["tables"].size(), 1u);
  const auto& t = j["tables"][0];
  EXPECT_EQ(t["name"], "dk-std");
  ASSERT_EQ(t["rows"].size(), 3u);
  EXPECT_EQ(t["rows"][1]["d_k"], 64);
  EXPECT_TRUE(t["rows"][1]["std"].is_number());
}

TEST(CliJson, TrainingAndSeveralTables) {
  const ProcessResult r = run_demo("--table training --format json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out;
  expect_provenance(j["provenance"]);
  ASSERT_EQ(j["tables"].size(), 1u);
  EXPECT_EQ(j["tables"][0]["name"], "training");
  for (const auto& row : j["tables"][0]["rows"]) {
    EXPECT_TRUE(row["config"].is_string());
    EXPECT_TRUE(row["loss"].is_number());
  }

  const ProcessResult both = run_demo("--table dk-std,training --format json -q");
  ASSERT_EQ(both.exit_code, 0) << both.err;
  nlohmann::json b;
  ASSERT_NO_THROW(b = nlohmann::json::parse(both.out)) << both.out;
  ASSERT_EQ(b["tables"].size(), 2u);
  EXPECT_EQ(b["tables"][0]["name"], "dk-std");
  EXPECT_EQ(b["tables"][1]["name"], "training");
  // The same tables as the runs one at a time.
  EXPECT_EQ(b["tables"][1]["rows"], j["tables"][0]["rows"]);
}

// ---- determinism across thread counts --------------------------------------------------------

TEST(CliThreads, SameBytesForOneAndTwoThreads) {
  for (const std::string args : {"--table dk-std --rng philox --samples 200000 --format csv -q",
                                 "--table dk-std --format csv -q"}) {
    SCOPED_TRACE(args);
    const ProcessResult one = run_demo("--threads 1 " + args);
    const ProcessResult two = run_demo("--threads 2 " + args);
    ASSERT_EQ(one.exit_code, 0) << one.err;
    ASSERT_EQ(two.exit_code, 0) << two.err;
    EXPECT_FALSE(one.out.empty());
    EXPECT_EQ(one.out, two.out);
  }
}

}  // namespace
}  // namespace attn

namespace attn {
namespace {

// Options that none of the chosen experiments reads are named in one warning; the run still works.
TEST(CliWarnings, UnusedOptionsAreNamed) {
  test::TempDir dir;
  const auto r =
      test::run_demo("--table dk-std --format csv -q --per-seed " + dir.file("x.csv") + " --w 0.9");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--per-seed has no effect"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--w has no effect"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.csv")));
  EXPECT_EQ(r.out.rfind("d_k,samples,std,std_scaled", 0), 0u);
  // Options the tables do read draw no warning.
  const auto ok = test::run_demo("--table dk-std --d-k 2 --samples 100 --format csv -q");
  EXPECT_EQ(ok.err.find("no effect"), std::string::npos) << ok.err;
}

// --force replaces files: without --out or an output file (--per-seed) it has none to replace,
// and says so (exit 0); with one, nothing is said.
TEST(CliWarnings, ForceWithNothingToReplaceIsNamed) {
  const auto force = test::run_demo("--table knob --format csv --force");
  EXPECT_EQ(force.exit_code, 0) << force.err;
  EXPECT_NE(force.err.find("--force has no effect without --out or an output file"),
            std::string::npos)
      << force.err;
  test::TempDir dir;
  const auto with_file = test::run_demo(
      "--table training-sweep --seeds 0:2 --steps 5 --format csv --force --per-seed " +
      dir.file("runs.csv"));
  EXPECT_EQ(with_file.exit_code, 0) << with_file.err;
  EXPECT_EQ(with_file.err.find("--force has no effect"), std::string::npos) << with_file.err;
}

// --gpu picks a GPU: with --device cpu there is none to pick, and it says so (exit 0).
TEST(CliWarnings, GpuWithTheCpuDeviceIsNamed) {
  const auto r = test::run_demo("--table knob --format csv --device cpu --gpu 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--gpu has no effect with --device cpu"), std::string::npos) << r.err;
  const auto plain = test::run_demo("--table knob --format csv --device cpu");
  EXPECT_EQ(plain.err.find("--gpu"), std::string::npos) << plain.err;
}

// The adversarial map's search grows steeply with the words: from 24 on, --adversary on (the
// default) is named before the work with --adversary off as the way out; below, or off, nothing.
TEST(CliWarnings, AdversaryOnManyWordsIsNamed) {
  const std::string run =
      "--table attention-sweep --task random --d-model 24 --d-k 2 --seeds 0:1 --steps 1 -q "
      "--format csv --words ";
  const auto many = test::run_demo(run + "24");
  EXPECT_EQ(many.exit_code, 0) << many.err;
  EXPECT_NE(many.err.find("warning: --adversary on with 24 words"), std::string::npos) << many.err;
  EXPECT_NE(many.err.find("--adversary off leaves it out"), std::string::npos) << many.err;
  // The estimate: 0.4 s a row of 32 keys times (24/32)^6 = 0.0712 s a row, over 1 seed x 1 head
  // x 1 measured input x 24 loss rows = 24 rows: 1.71 s.
  EXPECT_NE(many.err.find("about 0.071s a row here and 1.7s of core time for this run's 24 rows"),
            std::string::npos)
      << many.err;
  for (const std::string quiet : {"23", "24 --adversary off"}) {
    const auto r = test::run_demo(run + quiet);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("--adversary on with"), std::string::npos) << quiet << ": " << r.err;
  }
}

// --checkpoint and --checkpoint-every save the chunk driver's state: with tables that have no
// chunks they are named, never silently ignored (exit 0, no file).
TEST(CliWarnings, CheckpointWithoutChunksIsNamed) {
  test::TempDir dir;
  for (const char* table : {"training", "weighted-average"}) {
    SCOPED_TRACE(table);
    const auto r = test::run_demo(std::string("--table ") + table + " --format csv --checkpoint " +
                                  dir.file("ck.json"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("--checkpoint has no effect here"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("ck.json")));
  }
  const auto every = test::run_demo("--table knob --format csv --checkpoint-every 5");
  EXPECT_NE(every.err.find("--checkpoint-every has no effect"), std::string::npos) << every.err;
  const auto alone =
      test::run_demo("--table dk-std --d-k 2 --samples 100 --format csv --checkpoint-every 5");
  EXPECT_NE(alone.err.find("--checkpoint-every has no effect without --checkpoint"),
            std::string::npos)
      << alone.err;
}

// A refusal is one line: the device notice ("no GPU ...; running on the CPU") waits until work
// starts, so a table that refuses its request prints its error alone.
TEST(CliRefuses, ATablesRefusalIsOneLineWithoutTheDeviceNotice) {
  const auto r = test::expect_refused(
      "--table attention-sweep --task random --words 8 --d-model 16 --d-k 16 "
      "--seeds 0:100000000 --map-memory 1099511627776",
      2);
  EXPECT_EQ(r.err.rfind("demo: error:", 0), 0u) << r.err;
  // And a run that works still says where it runs, once.
  const auto ok = test::run_demo("--table dk-std --d-k 2 --samples 100 --format csv");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  const std::size_t at = ok.err.find("running on the CPU");
  EXPECT_NE(at, std::string::npos) << ok.err;
  EXPECT_EQ(at, ok.err.rfind("running on the CPU")) << ok.err;
}

// The device notice is about the tables the backend computes: a host-only table (knob, rnn-decay)
// runs without it; with a backend table beside it, it is said once.
TEST(Cli, HostOnlyTablesSayNothingOfTheDevice) {
  for (const char* table : {"knob", "rnn-decay", "knob,rnn-decay"}) {
    const auto r = test::run_demo(std::string("--table ") + table + " --format csv");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("GPU"), std::string::npos) << table << ": " << r.err;
  }
  const auto both = test::run_demo("--table knob,dk-std --d-k 2 --samples 100 --format csv");
  EXPECT_EQ(both.exit_code, 0) << both.err;
  // Once where no GPU answers (a machine with one has nothing to say).
  EXPECT_EQ(both.err.find("running on the CPU"), both.err.rfind("running on the CPU")) << both.err;
  const auto alone = test::run_demo("--table dk-std --d-k 2 --samples 100 --format csv");
  EXPECT_EQ(both.err.find("running on the CPU") == std::string::npos,
            alone.err.find("running on the CPU") == std::string::npos)
      << both.err << alone.err;
}

// The folders --out made (the folder and its missing parents) are removed again when the run is
// refused after making them, or stops; one that was there before stays.
TEST(CliRefuses, ARefusedRunRemovesTheFoldersItMadeForOut) {
  test::TempDir d;
  const std::string args = "--table training-sweep --seeds 0:10 --steps 5 -q";
  test::expect_refused(
      args + " --out " + d.file("par/b/c") + " --per-seed " + d.file("par/missing/x.csv"), 1,
      {"no folder"}, test::Refusal().leaves_no(d.file("par")));
  std::filesystem::create_directories(d.file("kept"));
  test::expect_refused(
      args + " --out " + d.file("kept/b/c/") + " --per-seed " + d.file("kept/missing/x.csv"), 1,
      {"no folder"}, test::Refusal().leaves_no(d.file("kept/b")));
  EXPECT_TRUE(std::filesystem::is_directory(d.file("kept")));
}

// Output locations are checked before any work: one line, nothing else on stderr.
TEST(CliRefuses, UnwritableOutputsBeforeAnyWork) {
  for (const char* args : {"--table rnn-decay --out /proc/attn-forbidden/x",
                           "--table training-sweep --per-seed /nonexistent-dir/runs.csv"})
    test::expect_refused(args, 1);
}

// A failed write to stdout is an error on every path: exit 1 and one line
// naming stdout, never a silent success. /dev/full fails every write with ENOSPC.
TEST(CliStdout, FullStdoutFailsEveryPath) {
  for (const char* args : {"--table knob", "--table rnn-decay --format json", "--list", "--help",
                           "--version", "--table knob --format csv -q"}) {
    SCOPED_TRACE(args);
    const auto r = run_demo(std::string(args) + " > /dev/full");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("cannot write to stdout"), std::string::npos) << r.err;
    // One error line, the last (notices such as "no GPU" may come before it).
    EXPECT_EQ(r.err.find("demo: error"), r.err.rfind("demo: error")) << r.err;
    EXPECT_EQ(lines_of(r.err).back().rfind("demo: error: cannot write to stdout", 0), 0u) << r.err;
  }
}

TEST(CliStdout, ClosedStdoutFails) {
  for (const char* args : {"--table knob", "--version", "--list"}) {
    test::expect_refused(std::string(args) + " -q >&-", 1, {"stdout"});
  }
  // replot writes nothing to stdout: a closed one is no reason to refuse it.
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot is not on PATH";
  test::TempDir dir;
  ASSERT_EQ(
      run_demo("--table dk-std --samples 1000 -q --no-plots --out " + dir.file("run")).exit_code,
      0);
  const auto r =
      run_demo("replot " + dir.file("run/dk-std.json") + " --out " + dir.file("o") + " -q >&-");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("o/dk-std.png")));
}

// --out "" and --per-seed "" are refused, never silently ignored.
TEST(CliRefuses, EmptyOutFolder) {
  test::expect_refused("--table rnn-decay --out ''", 2, {"--out"});
}
TEST(CliRefuses, EmptyPerSeedFile) {
  test::expect_refused("--table training-sweep --seeds 0:4 --per-seed ''", 2, {"--per-seed"});
}

}  // namespace
}  // namespace attn

namespace attn {
namespace {

// --help with --table NAME: that experiment's own options and examples, not every experiment's.
TEST(CliHelp, ATablesHelpListsItsOwnOptions) {
  const auto r = test::run_demo("--table dk-std --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("demo --table dk-std: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("--d-k"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--samples"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("--knob-steps"), std::string::npos) << "another table's option";
  EXPECT_LT(test::lines_of(r.out).size(), test::lines_of(test::run_demo("--help").out).size());
  // A mistyped name (the spelling of the source files) still says the nearest one.
  const auto typo = test::run_demo("--table dk_std");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("did you mean dk-std?"), std::string::npos) << typo.err;
}

}  // namespace
}  // namespace attn

namespace attn {
namespace {

// The old spelling --dk (dk-std, softmax-saturation) is read as --d-k, with a warning naming the
// new one; the result and its recorded command are those of --d-k.
TEST(CliDeprecated, DkIsReadAsDKWithAWarning) {
  for (const char* table : {"dk-std", "softmax-saturation"}) {
    SCOPED_TRACE(table);
    const std::string rest = std::string(" --samples 400 --seed 3 --format json");
    const ProcessResult old = run_demo(std::string("--table ") + table + " --dk 2,4" + rest);
    const ProcessResult now = run_demo(std::string("--table ") + table + " --d-k 2,4" + rest);
    const ProcessResult eq = run_demo(std::string("--table ") + table + " --dk=2,4" + rest);
    ASSERT_EQ(old.exit_code, 0) << old.err;
    ASSERT_EQ(now.exit_code, 0) << now.err;
    ASSERT_EQ(eq.exit_code, 0) << eq.err;
    EXPECT_NE(old.err.find("--dk is deprecated: it is read as --d-k"), std::string::npos)
        << old.err;
    EXPECT_NE(eq.err.find("--dk is deprecated"), std::string::npos) << eq.err;
    EXPECT_EQ(now.err.find("deprecated"), std::string::npos) << now.err;
    const auto a = nlohmann::json::parse(old.out), b = nlohmann::json::parse(now.out);
    EXPECT_EQ(a["tables"], b["tables"]);
    EXPECT_EQ(a["provenance"]["command_line"], b["provenance"]["command_line"]);
  }
}

// ---- options before a subcommand -----------------------------------------------------------

// The lesson's checkpoint inputs (tests/data/attention) for `demo attention`.
const std::string kAttentionData = std::string(ATTN_TEST_DATA) + "/attention/";
const std::string kAttentionInputs = " --x " + kAttentionData + "x.npy --w-q " + kAttentionData +
                                     "w_q.npy --w-k " + kAttentionData + "w_k.npy --w-v " +
                                     kAttentionData + "w_v.npy -q";

// An option the subcommand takes, given before it, is read as if it followed it: the same
// output, the same refusal.
TEST(CliSubcommands, AnOptionBeforeItsSubcommandIsReadAsAfterIt) {
  const auto after = run_demo("attention" + kAttentionInputs + " --format csv");
  const auto before = run_demo("--format csv attention" + kAttentionInputs);
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(before.exit_code, 0) << before.err;
  EXPECT_EQ(before.out, after.out);
  EXPECT_NE(before.out, run_demo("attention" + kAttentionInputs).out);  // not the text table
  // --device cuda: the same answer wherever it stands (a refusal where no GPU answers).
  const auto cuda_after = run_demo("attention" + kAttentionInputs + " --device cuda");
  const auto cuda_before = run_demo("--device cuda attention" + kAttentionInputs);
  EXPECT_EQ(cuda_before.exit_code, cuda_after.exit_code) << cuda_before.err << cuda_after.err;
  EXPECT_EQ(cuda_before.out, cuda_after.out);
  // --out and --no-plots: the folder is written, without the figure.
  test::TempDir d;
  const std::string out = d.file("out");
  const auto r = run_demo("--out " + out + " --no-plots attention" + kAttentionInputs);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(std::filesystem::is_directory(out));
  EXPECT_TRUE(std::filesystem::exists(out + "/out.npy"));
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    const std::string ext = entry.path().extension().string();
    EXPECT_TRUE(ext != ".png" && ext != ".svg") << entry.path();
  }
}

// demo attention's --causal takes on|off as attention-sweep's does (and Python's causal=True):
// alone it is on; off is the default; another value is refused with one line.
TEST(CliSubcommands, AttentionCausalTakesOnOrOff) {
  const std::string run = "attention" + kAttentionInputs + " --format csv -q";
  const auto none = run_demo(run), alone = run_demo(run + " --causal"),
             on = run_demo(run + " --causal on"), off = run_demo(run + " --causal off");
  for (const auto* r : {&none, &alone, &on, &off}) ASSERT_EQ(r->exit_code, 0) << r->err;
  EXPECT_EQ(on.out, alone.out);
  EXPECT_EQ(off.out, none.out);
  EXPECT_NE(on.out, off.out);
  test::expect_refused(run + " --causal maybe", 2, {"--causal: on or off", "'maybe'"});
}

// An option the subcommand does not take, or one given both before and after it, is refused
// with one line naming the option and the subcommand.
TEST(CliSubcommands, AnOptionItDoesNotTakeIsRefused) {
  test::TempDir d;
  const std::string a = d.write("a.json", "{}");
  test::expect_refused("--gpu 1 attention" + kAttentionInputs, 2,
                       {"demo attention: error: --gpu is not an option of attention"});
  test::expect_refused("--shard 0/2 attention" + kAttentionInputs, 2,
                       {"demo attention: error: --shard is not an option of attention"});
  test::expect_refused(
      "--threads 1 attention" + kAttentionInputs + " --threads 2", 2,
      {"demo attention: error: --threads is given both before and after attention"});
  test::expect_refused("--out " + d.file("x") + " compare " + a + " " + a, 2,
                       {"demo compare: error: --out is not an option of compare"},
                       test::Refusal().leaves_no(d.file("x")));
  test::expect_refused("--format csv compare " + a + " " + a, 2,
                       {"demo compare: error: --format is not an option of compare"});
  test::expect_refused("--d-k 0 compare " + a + " " + a, 2, {"demo compare: error: --d-k"});
  // After the subcommand, as before it (and between compare's files: the option, not its value
  // taken for a file).
  test::expect_refused(
      "compare " + a + " " + a + " --format csv", 2,
      {"demo compare: error: --format is not an option of compare", "(see demo compare --help)"});
  test::expect_refused("compare " + a + " --threads 2 " + a, 2,
                       {"demo compare: error: --threads is not an option of compare"});
  test::expect_refused("compare " + a + " " + a + " " + a, 2,
                       {"demo compare: error: unexpected argument"});
  // A name with a newline in a message stays one line: the control character shown as '?'.
  test::expect_refused("compare " + a + " '" + d.file("a\nb.json") + "'", 2,
                       {"SECOND: no such file " + d.file("a?b.json")});
  test::expect_refused(
      "replot " + a + " --out " + d.file("r") + " --no-plots", 2,
      {"demo replot: error: --no-plots is not an option of replot", "(see demo replot --help)"},
      test::Refusal().leaves_no(d.file("r")));
  test::expect_refused("--format csv merge " + d.path.string() + " --format json", 2,
                       {"demo merge: error: --format is given both before and after merge"});
}

// An option given twice is refused in the user's terms, for the tables' options and a
// subcommand's alike.
TEST(CliRefuses, AnOptionGivenTwiceIsNamedWithItsCount) {
  test::expect_refused("--table dk-std --samples 100 --samples 200", 2,
                       {"--samples is given 2 times; give it once"});
  test::expect_refused("--table dk-std --d-k 2 --d-k 4 --d-k 8", 2,
                       {"--d-k is given 3 times; give it once"});
  test::expect_refused("attention" + kAttentionInputs + " --x x.json", 2,
                       {"--x is given 2 times; give it once"});
  // -q and -v ask for opposite things.
  test::expect_refused("--table rnn-decay -q -v", 2, {"demo: error: --quiet excludes --verbose"});
  test::expect_refused("attention" + kAttentionInputs + " -v", 2,
                       {"demo attention: error: --quiet excludes --verbose"});
}

// demo attention says of its flags that write nothing without --out what a run says of them.
TEST(CliWarnings, AttentionFlagsWithoutOutAreNamed) {
  // demo attention says the same of its flags that write nothing without --out.
  const auto attention = test::run_demo("attention" + kAttentionInputs + " --force --no-plots");
  EXPECT_EQ(attention.exit_code, 0) << attention.err;
  EXPECT_NE(attention.err.find("demo: warning: --no-plots has no effect without --out"),
            std::string::npos)
      << attention.err;
  EXPECT_NE(attention.err.find("demo: warning: --force has no effect without --out"),
            std::string::npos)
      << attention.err;
}

// A whole-number option takes the forms a count does ("1e3", "1000.0"), in its own range.
TEST(CliParse, WholeNumbersInExponentFormAreTheirValue) {
  const auto steps = [](const std::string& text) {
    const auto r = run_demo("--table training-sweep --seeds 0:2 --format json -q --steps " + text);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["tables"][0]["run"]["steps"].get<std::int64_t>();
  };
  EXPECT_EQ(steps("1e3"), 1000);
  EXPECT_EQ(steps("1000.0"), 1000);
  EXPECT_EQ(steps("2.5e2"), 250);
  for (const char* bad : {"1.5", "1e", "e3", "1e3x", "-1e3", "1e10"})
    test::expect_refused(std::string("--table training-sweep -q --seeds 0:2 --steps ") + bad, 2,
                         {"--steps", "a whole number from 1 to 1000000000"});
  test::expect_refused("--table dk-std -q --d-k 2e0,2", 2, {"2e0 and 2 are one value given twice"});
}

// A parse error inside a subcommand names it and points to its own help.
TEST(CliRefuses, ASubcommandsParseErrorNamesItAndItsHelp) {
  test::expect_refused("attention --bogus", 2,
                       {"demo attention: error: --bogus is not an option of attention",
                        "(see demo attention --help)"});
  test::expect_refused("attention --x x.csv --seeds 0:3", 2,
                       {"demo attention: error: --seeds is not an option of attention"});
  test::expect_refused(
      "attention --x x.csv stray", 2,
      {"demo attention: error: unexpected argument stray", "(see demo attention --help)"});
  test::expect_refused("replot --bogus", 2, {"demo replot: error: ", "(see demo replot --help)"});
  // A missing positional is named as the usage line names it.
  test::expect_refused("compare", 2,
                       {"demo compare: error: FIRST is required", "(see demo compare --help)"});
  test::expect_refused("merge", 2, {"demo merge: error: PARTS is required"});
  test::expect_refused("--table dk-std --bogus", 2,
                       {"demo: error: --bogus is not an option (see demo --help)"});
  test::expect_refused("foo", 2, {"demo: error: unexpected argument foo (see demo --help)"});
  test::expect_refused("--table dk-std -- --out x", 2,
                       {"demo: error: unexpected arguments -- --out x (see demo --help)"});
  test::expect_refused("--table dk-std --samples=", 2, {"demo: error: --samples: an empty value"});
  test::expect_refused("attention --x=", 2, {"demo attention: error: --x: an empty value"});
  // A subcommand's value refused under its name, before its files are looked at.
  test::expect_refused("compare a.json b.json --tolerance -1", 2,
                       {"demo compare: error: --tolerance"});
}

// An experiment flag's value is checked where no chosen experiment reads it too (each flag by its
// own declaration); a rule between two flags is left to the table that reads them.
TEST(CliRefuses, ValuesOfFlagsNoChosenTableReads) {
  for (const std::string bad :
       {"--lr nan", "--seeds 5:3", "--seeds abc", "--d-k 0", "--inputs 0", "--samples 0"})
    test::expect_refused("--table rnn-decay -q " + bad, 2, {bad.substr(0, bad.find(' '))},
                         kBeforeWork);
  const auto r = run_demo("--table rnn-decay --format csv --heads 3 --d-k 4");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--heads has no effect here"), std::string::npos) << r.err;
}

// A table named twice in --table (directly or through "all") runs once, and the run says so.
TEST(CliNotices, ATableNamedTwiceRunsOnceWithANotice) {
  for (const std::string tables : {"knob,knob", "all,knob", "knob,all"}) {
    const auto r = run_demo("--table " + tables + " --format json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: --table: knob is named more than once"), std::string::npos)
        << tables << ": " << r.err;
    int knobs = 0;
    const auto doc = nlohmann::json::parse(r.out);
    for (const auto& t : doc["tables"]) knobs += t["name"] == "knob";
    EXPECT_EQ(knobs, 1) << tables;
  }
  const auto all = run_demo("--table all,all --format csv");
  EXPECT_EQ(test::lines_of(all.err).size(), 2u) << "the device's line and one warning: " << all.err;
  const auto once = run_demo("--table knob,qkv --format csv");
  EXPECT_EQ(once.err.find("more than once"), std::string::npos) << once.err;
}

// The checkpoint and a shard's part are outputs too: one naming a file another output writes is
// refused before any work, with --force as without.
TEST(CliRefuses, TheCheckpointNamingAnotherOutput) {
  test::TempDir d;
  const std::string out = d.file("o");
  std::filesystem::create_directories(out);
  for (const std::string force : {"", " --force"})
    test::expect_refused("--table training-sweep --seeds 0:4 --steps 2 -q --checkpoint " + out +
                             "/training-sweep.csv --out " + out + force,
                         1, {"--checkpoint and --out both write", "training-sweep.csv"},
                         kBeforeWork);
  test::expect_refused("--table dk-std --samples 100 --d-k 2 -q --shard 0/2 --out " + out +
                           " --checkpoint " + out + "/dk-std.part.json",
                       1, {"--checkpoint and --shard both write"}, kBeforeWork);
  const std::string per_seed = d.file("rows.csv");
  test::expect_refused("--table training-sweep --seeds 0:4 --steps 2 -q --checkpoint " + per_seed +
                           " --per-seed " + per_seed,
                       1, {"--checkpoint and --per-seed both write"}, kBeforeWork);
}

// replot refuses a folder that takes no file before it draws: one line, nothing on stdout.
TEST(CliRefuses, ReplotIntoAFolderThatTakesNoFile) {
  test::TempDir d;
  const std::string run = d.file("run");
  ASSERT_EQ(run_demo("--table dk-std --samples 100 --d-k 2 -q --out " + run).exit_code, 0);
  if (!std::filesystem::exists(run + "/dk-std.png")) GTEST_SKIP() << "gnuplot is not on PATH";
  test::expect_refused("replot " + run + "/dk-std.json --out /proc", 1,
                       {"replot:", "/proc", "cannot write there"});
  test::expect_refused("--out " + run + " replot " + run + "/dk-std.json", 1,
                       {"replot:", "--force"});  // --out before replot is read, as after it
}

// A killed run's temporaries (NAME.tmp-PID, that PID gone) are removed by the next run into that
// place, also when that run is then refused for an existing file (no --force needed).
TEST(CliFiles, AKilledRunsTemporariesGoWithTheNextRun) {
  const std::string dead = ".tmp-999999998";  // beyond any pid_max
  test::TempDir d;
  const std::string out = d.file("att");
  std::filesystem::create_directories(out);
  d.write("att/out.npy", "x");
  const std::string att_tmp = d.write("att/q.npy" + dead, "x");
  const auto att = run_demo("attention" + kAttentionInputs + " --out " + out);
  EXPECT_EQ(att.exit_code, 1) << att.err;
  EXPECT_NE(att.err.find("out.npy exists"), std::string::npos) << att.err;
  EXPECT_FALSE(std::filesystem::exists(att_tmp));
  d.write("rows.csv", "x");
  const std::string rows_tmp = d.write("rows.csv" + dead, "x");
  const auto rows =
      run_demo("--table training-sweep --seeds 0:2 -q --per-seed " + d.file("rows.csv"));
  EXPECT_EQ(rows.exit_code, 1) << rows.err;
  EXPECT_NE(rows.err.find("rows.csv exists"), std::string::npos) << rows.err;
  EXPECT_FALSE(std::filesystem::exists(rows_tmp));
  const std::string ckpt_tmp = d.write("run.ckpt" + dead, "x");
  const auto r = run_demo("--table training-sweep --seeds 0:2 --steps 5 -q --checkpoint " +
                          d.file("run.ckpt"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(ckpt_tmp));
}

}  // namespace
}  // namespace attn
