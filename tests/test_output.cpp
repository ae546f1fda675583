// test_output.cpp: host/output.hpp (result files that are complete or absent) and demo --out.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "host/output.hpp"
#include "host/plots.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using test::ProcessResult;
using test::run_demo;

using test::read_file;
using test::TempDir;
using test::write_file;

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> n;
  for (const auto& e : fs::directory_iterator(dir)) n.push_back(e.path().filename().string());
  std::sort(n.begin(), n.end());
  return n;
}

bool has_temp_file(const fs::path& dir) {
  for (const auto& n : names_in(dir))
    if (n.find(".tmp-") != std::string::npos) return true;
  return false;
}

// ---- AtomicFile ------------------------------------------------------------------------------

TEST(AtomicFile, CommitPutsTheContentInPlaceAndNoTempRemains) {
  TempDir dir;
  const std::string path = dir.file("result.csv");
  {
    AtomicFile f(path, false);
    f.write("a,b\n");
    f.write("1,2\n");
    EXPECT_FALSE(fs::exists(path)) << "the real name appears before commit";
    f.commit();
  }
  EXPECT_EQ(read_file(path), "a,b\n1,2\n");
  EXPECT_EQ(names_in(dir.path), std::vector<std::string>{"result.csv"});
}

TEST(AtomicFile, WithoutCommitNothingRemains) {
  TempDir dir;
  const std::string path = dir.file("result.json");
  {
    AtomicFile f(path, false);
    f.write("{\"half\": ");
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(names_in(dir.path).empty()) << names_in(dir.path).front();
}

TEST(AtomicFile, AnErrorBeforeCommitLeavesNothing) {
  TempDir dir;
  const std::string path = dir.file("result.json");
  try {
    AtomicFile f(path, false);
    f.write("partial");
    throw std::runtime_error("the run failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(has_temp_file(dir.path));
  EXPECT_TRUE(names_in(dir.path).empty());
}

TEST(AtomicFile, ExistingTargetRefusedAndUntouched) {
  TempDir dir;
  const std::string path = dir.file("result.csv");
  write_file(path, "original\n");
  try {
    AtomicFile f(path, false);
    ADD_FAILURE() << "an existing file was not refused";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_file(path), "original\n");
  EXPECT_EQ(names_in(dir.path), std::vector<std::string>{"result.csv"});
}

TEST(AtomicFile, OverwriteReplacesAnExistingTarget) {
  TempDir dir;
  const std::string path = dir.file("result.csv");
  write_file(path, "original, and longer than the new content\n");
  {
    AtomicFile f(path, true);
    f.write("new\n");
    EXPECT_EQ(read_file(path), "original, and longer than the new content\n")
        << "replaced before commit";
    f.commit();
  }
  EXPECT_EQ(read_file(path), "new\n");
  EXPECT_EQ(names_in(dir.path), std::vector<std::string>{"result.csv"});
}

TEST(AtomicFile, UncreatableFileThrows) {
  TempDir dir;
  EXPECT_THROW(AtomicFile((dir.path / "no" / "such" / "dir" / "f.csv").string(), false),
               std::runtime_error);
  EXPECT_TRUE(names_in(dir.path).empty());
}

// ---- write_file_atomic and refuse_existing ---------------------------------------------------

TEST(WriteFileAtomic, WritesRefusesAndOverwrites) {
  TempDir dir;
  const std::string path = dir.file("f.bin");
  const char raw[] = "bytes\0with a nul\nand no final newline";
  const std::string data(raw, sizeof raw - 1);
  write_file_atomic(path, data, false);
  EXPECT_EQ(read_file(path), data);
  EXPECT_THROW(write_file_atomic(path, "other", false), std::runtime_error);
  EXPECT_EQ(read_file(path), data);
  write_file_atomic(path, "other", true);
  EXPECT_EQ(read_file(path), "other");
  write_file_atomic(dir.file("empty"), "", false);
  EXPECT_TRUE(fs::exists(dir.file("empty")));
  EXPECT_EQ(fs::file_size(dir.file("empty")), 0u);
  EXPECT_FALSE(has_temp_file(dir.path));
}

TEST(RefuseExisting, OnlyAnExistingPathWithoutOverwrite) {
  TempDir dir;
  const std::string path = dir.file("x.csv");
  EXPECT_NO_THROW(refuse_existing(path, false));
  EXPECT_NO_THROW(refuse_existing(path, true));
  write_file(path, "x");
  EXPECT_THROW(refuse_existing(path, false), std::runtime_error);
  EXPECT_NO_THROW(refuse_existing(path, true));
  EXPECT_THROW(refuse_existing(dir.path.string(), false), std::runtime_error);  // a directory too
  EXPECT_EQ(read_file(path), "x");
}

// ---- demo --out ------------------------------------------------------------------------------

TEST(DemoOut, WritesCsvAndJsonThenRefusesToReplaceWithoutForce) {
  TempDir dir;
  const std::string out = (dir.path / "results").string();
  const std::string csv = out + "/rnn-decay.csv", js = out + "/rnn-decay.json";

  const ProcessResult first = run_demo("--table rnn-decay --out '" + out + "' -q");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(fs::exists(csv));
  ASSERT_TRUE(fs::exists(js));
  EXPECT_FALSE(has_temp_file(out));

  // The CSV: w^n for w = 0.5 and n = 1, 2, 3, 5, 10, 50, exact in binary.
  const std::string csv_text = read_file(csv);
  std::istringstream lines(csv_text);
  std::string line;
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_EQ(line, "n,w,factor");
  const int ns[] = {1, 2, 3, 5, 10, 50};
  for (int n : ns) {
    ASSERT_TRUE(std::getline(lines, line));
    const auto c1 = line.find(','), c2 = line.rfind(',');
    EXPECT_EQ(line.substr(0, c1), std::to_string(n));
    EXPECT_EQ(std::strtod(line.c_str() + c1 + 1, nullptr), 0.5);
    EXPECT_EQ(std::strtod(line.c_str() + c2 + 1, nullptr), std::ldexp(1.0, -n)) << line;
  }
  EXPECT_FALSE(std::getline(lines, line)) << "extra line: " << line;
  // The same CSV as --format csv prints.
  const ProcessResult printed = run_demo("--table rnn-decay --format csv -q");
  EXPECT_EQ(printed.out, csv_text);

  // The JSON: one table, with provenance.
  const std::string json_text = read_file(js);
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(json_text)) << json_text;
  const auto& p = j["provenance"];
  ASSERT_TRUE(p.is_object());
  ASSERT_TRUE(p.contains("command_line"));
  EXPECT_NE(p["command_line"].get<std::string>().find("--table rnn-decay"), std::string::npos);
  EXPECT_NE(p["command_line"].get<std::string>().find("--out"), std::string::npos);
  ASSERT_TRUE(p.contains("git_commit"));
  EXPECT_TRUE(p["git_commit"].is_string());
  EXPECT_FALSE(p["git_commit"].get<std::string>().empty());
  EXPECT_TRUE(p.contains("version"));
  EXPECT_TRUE(p.contains("start_utc"));
  ASSERT_EQ(j["tables"].size(), 1u);
  EXPECT_EQ(j["tables"][0]["name"], "rnn-decay");
  EXPECT_EQ(j["tables"][0]["rows"].size(), 6u);

  // Again without --force: refused before any work, files untouched.
  test::expect_refused("--table rnn-decay --out '" + out + "' -q", test::kAnyError, {"rnn-decay"});
  EXPECT_EQ(read_file(csv), csv_text);
  EXPECT_EQ(read_file(js), json_text);
  EXPECT_FALSE(has_temp_file(out));

  // With --force: replaced.
  const ProcessResult forced = run_demo("--table rnn-decay --out '" + out + "' --force -q");
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(read_file(csv), csv_text);
  const auto j2 = nlohmann::json::parse(read_file(js));
  EXPECT_NE(j2["provenance"]["command_line"].get<std::string>().find("--force"), std::string::npos)
      << "the JSON was not rewritten";
  EXPECT_FALSE(has_temp_file(out));
  EXPECT_EQ(names_in(out), (std::vector<std::string>{"rnn-decay.csv", "rnn-decay.json"}));
}

TEST(DemoOut, OutIntoARegularFileIsRefusedBeforeAnyWork) {
  TempDir dir;
  const std::string file = dir.file("not-a-dir");
  write_file(file, "keep");
  test::expect_refused("--table rnn-decay --out '" + file + "' -q", test::kAnyError);
  EXPECT_EQ(read_file(file), "keep");
}

// A table named twice writes the same files twice. Either demo runs it (once or twice, without
// tripping over its own files) or it refuses the command line up front; what it must not do is
// run everything, print it, and then fail on a file it wrote itself.
TEST(DemoOut, TableNamedTwiceDoesNotFailOnItsOwnFiles) {
  TempDir dir;
  const std::string out = (dir.path / "dup").string();
  const ProcessResult r = run_demo("--table rnn-decay,rnn-decay --out '" + out + "' -q");
  if (r.exit_code == 0) {
    EXPECT_TRUE(fs::exists(out + "/rnn-decay.csv"));
    EXPECT_TRUE(fs::exists(out + "/rnn-decay.json"));
  } else {
    EXPECT_EQ(r.out, "") << "refused after doing the work; stderr: " << r.err;
    EXPECT_FALSE(fs::exists(out + "/rnn-decay.csv"))
        << "refused, but wrote files; stderr: " << r.err;
  }
}

// ---- destinations: regular files only, checked before any work ---------------------------------

// Refused whatever overwrite says, and without suggesting --force.
void expect_never_replaced(const std::string& path) {
  for (bool overwrite : {false, true}) {
    try {
      refuse_existing(path, overwrite);
      ADD_FAILURE() << path << " accepted with overwrite " << overwrite;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).find("--force"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("regular files"), std::string::npos) << e.what();
    }
  }
}

TEST(RefuseExisting, OnlyRegularFilesAreEverReplaced) {
  TempDir dir;
  expect_never_replaced(dir.path.string());  // a directory
  expect_never_replaced("/dev/null");        // a device
  ASSERT_EQ(symlink(dir.file("target").c_str(), dir.file("link").c_str()), 0);
  expect_never_replaced(dir.file("link"));  // a dangling symbolic link
  write_file(dir.file("target"), "t");
  expect_never_replaced(dir.file("link"));  // a link to a regular file
  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
  expect_never_replaced(dir.file("fifo"));  // a FIFO
  EXPECT_EQ(read_file(dir.file("target")), "t");
}

// Refused before any work (test::expect_refused): exit 1, one line on stderr, nothing on
// stdout; and never a suggestion to add --force.
const test::Refusal kNoForce = test::Refusal().not_saying("--force to");

const char* kSweep = "--table training-sweep --seeds 0:16 --steps 5 --grad analytic -q ";

TEST(DemoOut, PerSeedNeverReplacesADeviceOrALink) {
  struct stat before {};
  ASSERT_EQ(stat("/dev/null", &before), 0);
  test::expect_refused(std::string(kSweep) + "--per-seed /dev/null --force", 1, {"a device"},
                       kNoForce);
  struct stat after {};
  ASSERT_EQ(stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode)) << "/dev/null was replaced";
  EXPECT_EQ(before.st_rdev, after.st_rdev);

  TempDir dir;
  write_file(dir.file("target.csv"), "keep");
  ASSERT_EQ(symlink(dir.file("target.csv").c_str(), dir.file("link.csv").c_str()), 0);
  test::expect_refused(std::string(kSweep) + "--per-seed '" + dir.file("link.csv") + "' --force", 1,
                       {"symbolic link"}, kNoForce);
  EXPECT_TRUE(fs::is_symlink(dir.file("link.csv")));
  EXPECT_EQ(read_file(dir.file("target.csv")), "keep");
  test::expect_refused(std::string(kSweep) + "--per-seed '" + dir.path.string() + "'", 1,
                       {"a directory"}, kNoForce);
}

// The lock file is opened, written and removed: where something other than a regular file
// stands at its name (a FIFO, a directory, a symbolic link) the run is refused, one line, and
// that thing left as it was (a FIFO there is neither written nor removed).
// The lock is on the folder itself: a run killed while it holds it (SIGKILL, which no handler
// sees) leaves no lock file behind, and the next run into the folder goes through.
TEST(DemoOut, AKilledRunLeavesNoLockBehind) {
  TempDir dir;
  const std::string out = dir.file("out");
  const auto r = test::signal_when_ready(
      "--table training-sweep --seeds 0:5000000 --no-plots -v --out '" + out + "'",
      "device:", SIGKILL);
  ASSERT_TRUE(r.ready) << r.err;
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  for (const std::string& name : names_in(out))
    EXPECT_NE(name.find(".tmp-"), std::string::npos) << name << " left behind";
  const ProcessResult again = run_demo("--table rnn-decay -q --no-plots --out '" + out + "'");
  EXPECT_EQ(again.exit_code, 0) << again.err;
}

TEST(DemoOut, TwoOutputsNamingOneFileAreRefused) {
  TempDir dir;
  write_file(dir.file("training-sweep.csv"), "per-seed rows\n");
  test::expect_refused(std::string(kSweep) + "--per-seed '" + dir.file("training-sweep.csv") +
                           "' --out '" + dir.path.string() + "' --force --no-plots",
                       1, {"both write"}, kNoForce);
  EXPECT_EQ(read_file(dir.file("training-sweep.csv")), "per-seed rows\n");
  // The same file spelled differently.
  test::expect_refused(std::string(kSweep) + "--per-seed '" + dir.path.string() +
                           "/./training-sweep.csv' --out '" + dir.path.string() +
                           "/' --force --no-plots",
                       1, {"both write"}, kNoForce);
  EXPECT_EQ(names_in(dir.path), std::vector<std::string>{"training-sweep.csv"});
}

TEST(DemoOut, UnwritablePlacesAreRefusedBeforeWork) {
  test::expect_refused("--table rnn-decay --out /proc", 1, {"cannot write there"}, kNoForce);
  TempDir dir;
  const std::string ro = dir.file("ro");
  fs::create_directories(ro);
  if (test::run_command("mount -t tmpfs -o size=64k,ro tmpfs '" + ro + "'").exit_code != 0)
    GTEST_SKIP() << "cannot mount a read-only tmpfs here (needs root and mount rights)";
  test::expect_refused("--table rnn-decay --out '" + ro + "'", 1, {"Read-only file system"},
                       kNoForce);
  test::expect_refused("--table rnn-decay --out '" + ro + "/sub'", 1, {"Read-only file system"},
                       kNoForce);
  test::expect_refused(std::string(kSweep) + "--per-seed '" + ro + "/runs.csv'", 1,
                       {"Read-only file system"}, kNoForce);
  test::run_command("umount '" + ro + "'");
}

TEST(DemoOut, NonUtf8PathsAreRefusedUpFront) {
  TempDir dir;
  const std::string bad = dir.file("caf\xe9");  // Latin-1 e-acute: not UTF-8
  test::expect_refused("--table rnn-decay,knob --out '" + bad + "'", 1, {"UTF-8"}, kNoForce);
  test::expect_refused(std::string(kSweep) + "--per-seed '" + bad + ".csv'", 1, {"UTF-8"},
                       kNoForce);
  EXPECT_TRUE(names_in(dir.path).empty());
  // Valid UTF-8 works.
  const std::string good = dir.file("caf\xc3\xa9");
  const ProcessResult r = run_demo("--table rnn-decay --out '" + good + "' -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(good + "/rnn-decay.json"));
}

TEST(Utf8, ValidAndInvalidSequences) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("results/cpu"));
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xe2\x88\x9a \xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("caf\xe9"));
  EXPECT_FALSE(is_valid_utf8("\xc3"));              // cut short
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong "/"
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a UTF-16 surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xff"));
}

// ---- one run is one unit: deferred renames, locks, stale temporaries ---------------------------

TEST(OutputSet, FilesAppearOnlyAtCommitAll) {
  TempDir dir;
  {
    OutputSet set;
    write_file_atomic(dir.file("a.csv"), "a\n", false);
    write_file_atomic(dir.file("b.csv"), "b\n", false);
    EXPECT_FALSE(fs::exists(dir.file("a.csv")));
    EXPECT_EQ(set.pending(), 2u);
    set.commit_all();
  }
  EXPECT_EQ(names_in(dir.path), (std::vector<std::string>{"a.csv", "b.csv"}));
  {
    OutputSet set;
    write_file_atomic(dir.file("c.csv"), "c\n", false);
  }  // no commit_all: a failed run
  EXPECT_EQ(names_in(dir.path), (std::vector<std::string>{"a.csv", "b.csv"}));
}

TEST(DirLock, ASecondRunIntoTheSameFolderIsRefused) {
  TempDir dir;
  const std::string out = dir.file("shared");
  fs::create_directories(out);
  {
    DirLock held(out);  // as a first run would
    EXPECT_THROW(DirLock second(out), std::runtime_error);
    test::expect_refused("--table rnn-decay --out '" + out + "' -q", 1,
                         {"another demo run is writing into"});
    EXPECT_TRUE(names_in(out).empty()) << "the lock is on the folder: no lock file";
    // --per-seed into the same folder waits for the same lock.
    test::expect_refused(std::string(kSweep) + "--per-seed '" + out + "/runs.csv'", 1,
                         {"another demo run"});
  }
  // Released: a run goes through.
  EXPECT_TRUE(names_in(out).empty());
  const ProcessResult r = run_demo("--table rnn-decay --out '" + out + "' -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(names_in(out), (std::vector<std::string>{"rnn-decay.csv", "rnn-decay.json"}));
}

TEST(StaleTemporaries, LeftByAKilledRunAreRemovedWithANote) {
  TempDir dir;
  const std::string out = dir.file("out");
  fs::create_directories(out);
  const std::string dead = std::to_string(test::dead_pid());
  const std::string live = std::to_string(getpid());
  write_file(out + "/rnn-decay.csv.tmp-" + dead, "half");
  write_file(out + "/dk-std.png.tmp-" + dead, "half");
  write_file(out + "/knob.json.tmp-" + live, "a live run's");
  write_file(out + "/notes.tmp-txt", "not ours");
  write_file(out + "/notes.tmp-" + dead, "a user's file, not demo's");
  const ProcessResult r = run_demo("--table rnn-decay --out '" + out + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // One notice line for both, naming the first.
  EXPECT_NE(r.err.find("removed 2 temporary files left by an earlier run that was killed ("),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.err.find("rnn-decay.csv.tmp-" + dead) != std::string::npos ||
              r.err.find("dk-std.png.tmp-" + dead) != std::string::npos)
      << r.err;
  EXPECT_EQ(names_in(out),
            (std::vector<std::string>{"knob.json.tmp-" + live, "notes.tmp-" + dead, "notes.tmp-txt",
                                      "rnn-decay.csv", "rnn-decay.json"}));
  // The per-seed file's folder: only that file's temporaries.
  write_file(dir.file("runs.csv.tmp-" + dead), "half");
  write_file(dir.file("other.csv.tmp-" + dead), "not this run's file");
  const ProcessResult p =
      run_demo(std::string(kSweep) + "--per-seed '" + dir.file("runs.csv") + "'");
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_FALSE(fs::exists(dir.file("runs.csv.tmp-" + dead)));
  EXPECT_TRUE(fs::exists(dir.file("other.csv.tmp-" + dead)));
  EXPECT_TRUE(fs::exists(dir.file("runs.csv")));
}

// ---- figures are complete or absent ------------------------------------------------------------

TEST(FigureComplete, SignaturesAndEnds) {
  TempDir dir;
  std::string why;
  const std::string iend("\0\0\0\0IEND\xae\x42\x60\x82", 12);
  const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + std::string(40, 'x') + iend;
  EXPECT_TRUE(figure_complete(dir.write("ok.png", png), true, why)) << why;
  EXPECT_FALSE(figure_complete(dir.write("empty.png", ""), true, why));
  EXPECT_FALSE(figure_complete(dir.write("cut.png", png.substr(0, 30)), true, why));
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  EXPECT_FALSE(figure_complete(dir.write("svg.png", "<svg></svg>"), true, why));
  EXPECT_TRUE(figure_complete(dir.write("ok.svg", "<?xml version=\"1.0\"?>\n<svg>\n</svg>\n\n"),
                              false, why))
      << why;
  EXPECT_FALSE(
      figure_complete(dir.write("cut.svg", "<?xml version=\"1.0\"?>\n<svg>\n<g>"), false, why));
  EXPECT_FALSE(figure_complete(dir.write("empty.svg", ""), false, why));
}

// A stand-in for gnuplot that exits 0 after writing a cut-off file, as gnuplot does on a full
// disk: no figure may appear under its final name, and the run fails.
TEST(DemoOut, IncompleteFiguresFailTheRunAndLeaveNothing) {
  TempDir dir;
  const std::string bin = dir.file("bin");
  fs::create_directories(bin);
  dir.write("bin/gnuplot",
            "#!/bin/sh\n"
            "while IFS= read -r line; do\n"
            "  case \"$line\" in\n"
            "    'set output '*) out=${line#set output \\\"}; out=${out%\\\"};"
            " printf '\\211PNG\\r\\n\\032\\n' > \"$out\";;\n"
            "  esac\n"
            "done\n"
            "exit 0\n");
  fs::permissions(bin + "/gnuplot", fs::perms::owner_all);
  const std::string out = dir.file("out");
  const ProcessResult r =
      run_demo("--table rnn-decay,dk-std --out '" + out + "' -q", "PATH='" + bin + "':\"$PATH\"");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("dk-std.png"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out)) << "left: " << (fs::exists(out) ? names_in(out).size() : 0);
}

// The same on a real full file system, where the test may mount one.
TEST(DemoOut, FullFileSystemLeavesNoFigure) {
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot not installed";
  TempDir dir;
  const std::string small = dir.file("small");
  fs::create_directories(small);
  if (test::run_command("mount -t tmpfs -o size=60k tmpfs '" + small + "'").exit_code != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root and mount rights)";
  const ProcessResult r = run_demo("--table dk-std,qkv,weighted-average --out '" + small + "' -q");
  const auto left = names_in(small);
  test::run_command("umount '" + small + "'");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(left.empty()) << left.front();
}

}  // namespace
}  // namespace attn
