// test_output.cpp: host/output.hpp (result files that are complete or absent) and demo --out.
#include <gtest/gtest.h>

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

namespace attn {
namespace {

namespace fs = std::filesystem;
using test::ProcessResult;
using test::run_demo;

using test::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void spit(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

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
  EXPECT_EQ(slurp(path), "a,b\n1,2\n");
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
  spit(path, "original\n");
  try {
    AtomicFile f(path, false);
    ADD_FAILURE() << "an existing file was not refused";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(path), "original\n");
  EXPECT_EQ(names_in(dir.path), std::vector<std::string>{"result.csv"});
}

TEST(AtomicFile, OverwriteReplacesAnExistingTarget) {
  TempDir dir;
  const std::string path = dir.file("result.csv");
  spit(path, "original, and longer than the new content\n");
  {
    AtomicFile f(path, true);
    f.write("new\n");
    EXPECT_EQ(slurp(path), "original, and longer than the new content\n")
        << "replaced before commit";
    f.commit();
  }
  EXPECT_EQ(slurp(path), "new\n");
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
  EXPECT_EQ(slurp(path), data);
  EXPECT_THROW(write_file_atomic(path, "other", false), std::runtime_error);
  EXPECT_EQ(slurp(path), data);
  write_file_atomic(path, "other", true);
  EXPECT_EQ(slurp(path), "other");
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
  spit(path, "x");
  EXPECT_THROW(refuse_existing(path, false), std::runtime_error);
  EXPECT_NO_THROW(refuse_existing(path, true));
  EXPECT_THROW(refuse_existing(dir.path.string(), false), std::runtime_error);  // a directory too
  EXPECT_EQ(slurp(path), "x");
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
  const std::string csv_text = slurp(csv);
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
  const std::string json_text = slurp(js);
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
  const ProcessResult again = run_demo("--table rnn-decay --out '" + out + "' -q");
  EXPECT_NE(again.exit_code, 0);
  EXPECT_LT(again.exit_code, 128) << again.err;
  EXPECT_EQ(again.out, "");
  EXPECT_EQ(std::count(again.err.begin(), again.err.end(), '\n'), 1) << again.err;
  EXPECT_NE(again.err.find("rnn-decay"), std::string::npos) << again.err;
  EXPECT_EQ(slurp(csv), csv_text);
  EXPECT_EQ(slurp(js), json_text);
  EXPECT_FALSE(has_temp_file(out));

  // With --force: replaced.
  const ProcessResult forced = run_demo("--table rnn-decay --out '" + out + "' --force -q");
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(slurp(csv), csv_text);
  const auto j2 = nlohmann::json::parse(slurp(js));
  EXPECT_NE(j2["provenance"]["command_line"].get<std::string>().find("--force"), std::string::npos)
      << "the JSON was not rewritten";
  EXPECT_FALSE(has_temp_file(out));
  EXPECT_EQ(names_in(out), (std::vector<std::string>{"rnn-decay.csv", "rnn-decay.json"}));
}

TEST(DemoOut, OutIntoARegularFileIsRefusedBeforeAnyWork) {
  TempDir dir;
  const std::string file = dir.file("not-a-dir");
  spit(file, "keep");
  const ProcessResult r = run_demo("--table rnn-decay --out '" + file + "' -q");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.exit_code, 128) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(slurp(file), "keep");
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

}  // namespace
}  // namespace attn
