// test_attention_sweep.cpp (test_tables): `demo --table attention-sweep`, the general head
// (kernels/head.hpp, test_head.cpp) trained over many seeds.
// - The lesson case against `training-sweep` seed by seed (1e-9): --train qkv = all-random,
//   --train qk = qk-random (training-sweep's start is checked against numpy in test_training).
// - The table's measures against the per-seed rows it writes, recomputed here from the spec's
//   formulas, and exact cases (identical seeds: JSD 0, agreement 1).
// - Every refusal: one line on stderr, nothing on stdout, no file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/attention_sweep.hpp"
#include "experiments/map_measures.hpp"
#include "experiments/per_seed_maps.hpp"
#include "helpers.hpp"
#include "table_helpers.hpp"

namespace attn {
namespace {

using test::TempDir;

// The lesson's 2-word model, seed by seed, against training-sweep.
void expect_lesson_matches(const std::string& train, const std::string& config) {
  TempDir dir;
  const std::string mine = dir.file("head.csv"), theirs = dir.file("sweep.csv");
  test::run_table("attention-sweep", {{"--task", "lesson"},
                                      {"--words", "2"},
                                      {"--d-model", "2"},
                                      {"--d-k", "2"},
                                      {"--train", train},
                                      {"--seeds", "0:300"},
                                      {"--per-seed", mine}});
  test::run_table("training-sweep", {{"--configs", config},
                                     {"--seeds", "0:300"},
                                     {"--grad", "analytic"},
                                     {"--per-seed", theirs}});
  const auto a = test::read_csv(mine).columns();
  const std::vector<double> weights = test::read_csv(theirs).numbers("weight_on_apple");
  ASSERT_EQ(a.at("p_1_0").size(), 300u);
  ASSERT_EQ(weights.size(), 300u);
  double worst = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    EXPECT_EQ(a.at("seed")[i], static_cast<double>(i));
    worst = std::max(worst, std::fabs(a.at("p_1_0")[i] - weights[i]));
  }
  EXPECT_LT(worst, 1e-9) << train << " vs " << config;
}

TEST(AttentionSweep, LessonQkvEqualsTrainingSweepAllRandom) {
  expect_lesson_matches("qkv", "all-random");
}
TEST(AttentionSweep, LessonQkEqualsTrainingSweepQkRandom) {
  expect_lesson_matches("qk", "qk-random");
}

// JSD from the spec, written out again here: ½ KL(p‖m) + ½ KL(q‖m), 0 ln 0 = 0.
double jsd_reference(const std::vector<double>& p, const std::vector<double>& q) {
  double s = 0;
  for (std::size_t j = 0; j < p.size(); ++j) {
    const double m = (p[j] + q[j]) / 2;
    if (p[j] > 0) s += p[j] * std::log(p[j] / m) / 2;
    if (q[j] > 0) s += q[j] * std::log(q[j] / m) / 2;
  }
  return s;
}

// The cell of `column` in the first row of `quantity` over the seeds `over` (converged, finite,
// all; "" any) and, in a grid, of configuration `config`.
double cell(const Table& t, const std::string& quantity, const std::string& column,
            const std::string& over = "", const std::string& config = "") {
  const std::size_t q = t.column("quantity"), o = t.column("over");
  for (const auto& row : t.rows)
    if (std::get<std::string>(row[q]) == quantity &&
        (over.empty() || std::get<std::string>(row[o]) == over) &&
        (config.empty() || std::get<std::string>(row[0]) == config)) {
      const Cell& c = row[t.column(column)];
      if (const double* d = std::get_if<double>(&c)) return *d;
      if (const std::int64_t* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
    }
  ADD_FAILURE() << "no " << quantity << " / " << column << " / " << over << " / " << config;
  return NAN;
}

TEST(AttentionSweep, MeasuresAgreeWithThePerSeedRows) {
  TempDir dir;
  const std::string rows = dir.file("rows.csv");
  const int n = 4, seeds = 64;
  const Table t = test::run_table("attention-sweep", {{"--task", "random"},
                                                      {"--words", std::to_string(n)},
                                                      {"--d-model", "3"},
                                                      {"--d-k", "2"},
                                                      {"--seeds", "10:74"},
                                                      {"--steps", "200"},
                                                      {"--lr", "0.05"},
                                                      {"--per-seed", rows}});
  const auto c = test::read_csv(rows).columns();
  ASSERT_EQ(c.at("seed").size(), static_cast<std::size_t>(seeds));
  // Each seed's map (all n rows for the random task), the mean map, JSDs.
  std::vector<std::vector<double>> maps(seeds, std::vector<double>(n * n));
  std::vector<double> mean(n * n, 0.0);
  for (int s = 0; s < seeds; ++s)
    for (int e = 0; e < n * n; ++e) {
      maps[s][e] = c.at("p_" + std::to_string(e / n) + "_" + std::to_string(e % n))[s];
      mean[e] += maps[s][e] / seeds;
    }
  auto map_jsd = [&](const std::vector<double>& a, const std::vector<double>& b) {
    double sum = 0;
    for (int r = 0; r < n; ++r)
      sum += jsd_reference({a.begin() + r * n, a.begin() + (r + 1) * n},
                           {b.begin() + r * n, b.begin() + (r + 1) * n});
    return sum / n;
  };
  double to_mean = 0, pairs = 0;
  for (int s = 0; s < seeds; ++s) {
    const double j = map_jsd(maps[s], mean);
    EXPECT_NEAR(c.at("jsd_to_mean")[s], j, 1e-12);
    to_mean += j / seeds;
  }
  for (int s = 0; s + 1 < seeds; s += 2) pairs += map_jsd(maps[s], maps[s + 1]) / (seeds / 2);
  EXPECT_NEAR(cell(t, "JSD to the mean map", "mean", "finite"), to_mean, 1e-12);
  EXPECT_NEAR(cell(t, "JSD between pairs of seeds", "mean", "finite"), pairs, 1e-12);
  EXPECT_EQ(cell(t, "JSD between pairs of seeds", "seeds", "finite"), seeds / 2);
  // Argmax agreement, per row, the most common argmax (lowest index on a tie).
  double agree = 0;
  for (int r = 0; r < n; ++r) {
    std::vector<int> counts(n, 0);
    for (int s = 0; s < seeds; ++s) {
      int best = 0;
      for (int j = 1; j < n; ++j)
        if (maps[s][r * n + j] > maps[s][r * n + best]) best = j;
      counts[best]++;
    }
    agree += static_cast<double>(*std::max_element(counts.begin(), counts.end())) / seeds / n;
  }
  EXPECT_NEAR(cell(t, "argmax agreement", "mean", "finite"), agree, 1e-12);
  // Entry mean and the loss median (numpy's linear quantile).
  EXPECT_NEAR(cell(t, "P[2][1]", "mean", "finite"), mean[2 * n + 1], 1e-12);
  std::vector<double> loss = c.at("loss");
  std::sort(loss.begin(), loss.end());
  EXPECT_NEAR(cell(t, "final loss", "p50", "finite"), (loss[31] + loss[32]) / 2, 1e-12 * loss[32]);
  // JSD bounds: between 0 and ln 2.
  EXPECT_GE(cell(t, "JSD between pairs of seeds", "min", "finite"), 0.0);
  EXPECT_LE(cell(t, "JSD between pairs of seeds", "max", "finite"), std::log(2.0));
}

// Exact cases: one seed repeated gives one map: JSD 0, agreement 1, output distance 0; the
// lesson task with W_V trained reaches its target everywhere, so the outputs agree.
// Identical maps give zero distances. Repeated seeds are refused (each seed is one run), so the
// seeds are made identical instead: W_V = I fixed and a start scaled by 1e-300, whose scores
// underflow to exactly 0, so every seed's map stays exactly uniform.
TEST(AttentionSweep, IdenticalSeedsGiveZeroDistances) {
  const Table t = test::run_table("attention-sweep", {{"--task", "random"},
                                                      {"--words", "3"},
                                                      {"--d-model", "4"},
                                                      {"--d-k", "2"},
                                                      {"--seeds", "0:6"},
                                                      {"--steps", "50"},
                                                      {"--train", "qk"},
                                                      {"--init-scale", "1e-300"},
                                                      {"--lr", "0.05"}});
  EXPECT_EQ(cell(t, "JSD to the mean map", "max", "finite"), 0.0);
  EXPECT_EQ(cell(t, "JSD between pairs of seeds", "max", "finite"), 0.0);
  EXPECT_EQ(cell(t, "output distance between pairs", "max", "finite"), 0.0);
  EXPECT_EQ(cell(t, "argmax agreement", "mean", "finite"), 1.0);
  EXPECT_EQ(cell(t, "P[1][2]", "std", "finite"), 0.0);
  // --lr and --init-scale "auto" on the random task: the peers' 0.01 and 0.25.
  EXPECT_EQ(t.run["lr"], 0.05);  // given
  const Table a = test::run_table(
      "attention-sweep",
      {{"--task", "random"}, {"--seeds", "0:2"}, {"--steps", "1"}, {"--lr", "auto"}});
  EXPECT_EQ(a.run["lr"], 0.01);
  EXPECT_EQ(a.run["init_scale"], 0.25);
}

TEST(AttentionSweep, LessonSeedsReachTheSameOutputWithDifferentMaps) {
  const Table t = test::run_table("attention-sweep", {{"--task", "lesson"}, {"--seeds", "0:200"}});
  EXPECT_EQ(cell(t, "converged (fraction)", "mean"), 1.0);
  EXPECT_LT(cell(t, "output distance between pairs", "max"), 2 * std::sqrt(1e-4));
  EXPECT_GT(cell(t, "JSD between pairs of seeds", "mean"), 0.01);  // the maps differ
  EXPECT_EQ(t.run["lr"], 0.5);  // "auto" on the lesson's task: the lesson's values
  EXPECT_EQ(t.run["init_scale"], 1.0);
}

// --per-seed FILE.npy's optional arrays (W_O, the nudge's JSD) that a run does not write: an
// earlier run's are removed with --force and refused without it, never left beside new arrays.
TEST(AttentionSweep, PerSeedArraysARunDoesNotWriteAreRemovedWithForce) {
  namespace fs = std::filesystem;
  TempDir dir;
  const std::string file = dir.file("m.npy");
  const std::string run =
      "--table attention-sweep --seeds 0:3 --steps 10 --adversary off -q --per-seed ";
  ASSERT_EQ(test::run_demo(run + file + " --train qkvo --nudge").exit_code, 0);
  ASSERT_TRUE(fs::exists(dir.file("m.w_o.npy")));
  ASSERT_TRUE(fs::exists(dir.file("m.nudge_jsd.npy")));
  test::expect_refused(run + file, 1, {"m.npy", "--force"});
  ASSERT_EQ(test::run_demo(run + file + " --force").exit_code, 0);
  EXPECT_FALSE(fs::exists(dir.file("m.w_o.npy")));
  EXPECT_FALSE(fs::exists(dir.file("m.nudge_jsd.npy")));
  EXPECT_TRUE(fs::exists(dir.file("m.w_q.npy")));
  // An optional array alone in the folder: refused without --force, left as it was.
  const std::string lone = dir.file("lone");
  fs::create_directories(lone);
  test::write_file(lone + "/m.w_o.npy", "an earlier array");
  test::expect_refused(run + lone + "/m.npy", 1, {"m.w_o.npy", "--force"});
  EXPECT_EQ(test::read_file(lone + "/m.w_o.npy"), "an earlier array");
  EXPECT_FALSE(fs::exists(lone + "/m.npy"));
}

// The token tasks' inputs fix d_model (X = I_n: --words; tokens then positions: --vocab +
// --words): without --d-model it is that, and a --d-model given otherwise is refused.
TEST(AttentionSweep, TokenTasksTakeTheirInputsWidthAsDModel) {
  const auto d_model = [](const std::map<std::string, std::string>& flags) {
    return test::run_table("attention-sweep", flags).run["d_model"].get<int>();
  };
  const std::map<std::string, std::string> small = {{"--seeds", "0:2"}, {"--steps", "2"}};
  auto flags = small;
  flags.insert({{"--task", "previous"}, {"--vocab", "4"}, {"--words", "4"}});
  EXPECT_EQ(d_model(flags), 8);
  flags = small;
  flags.insert({{"--task", "reverse"}, {"--words", "5"}});
  EXPECT_EQ(d_model(flags), 5);
  flags = small;
  flags.insert({{"--task", "random"}, {"--words", "5"}});
  EXPECT_EQ(d_model(flags), 2);  // normals: the flag's own default
  test::expect_refused("--table attention-sweep -q --task previous --vocab 4 --words 4 --d-model 9",
                       2, {"--d-model must be the vocabulary plus the positions, 8"});
}

// The widths auto chooses are named in the notes, each with its source; a width given is not.
TEST(AttentionSweep, AutoWidthsAreNamedInTheNotes) {
  const auto notes = [](const std::map<std::string, std::string>& flags) {
    std::map<std::string, std::string> all = {{"--seeds", "0:2"}, {"--steps", "2"}};
    all.insert(flags.begin(), flags.end());
    return test::run_table("attention-sweep", all).notes;
  };
  const auto has = [](const std::vector<std::string>& said, const std::string& text) {
    return std::find(said.begin(), said.end(), text) != said.end();
  };
  // previous with a vocabulary: X_i = [one_hot_4(t_i), one_hot_4(i)], 4 + 4 columns.
  auto said = notes({{"--task", "previous"}, {"--vocab", "4"}, {"--words", "4"}});
  EXPECT_TRUE(has(said, "d_model 8 (auto: --vocab + --words), d_v 8 (auto: d_model)"));
  said = notes({{"--task", "reverse"}, {"--words", "5"}, {"--d-v", "auto"}});
  EXPECT_TRUE(has(said, "d_model 5 (auto: --words), d_v 5 (auto: d_model)"));
  said = notes({{"--task", "random"}, {"--words", "3"}, {"--d-model", "3"}});
  EXPECT_TRUE(has(said, "d_v 3 (auto: d_model)"));
  said = notes({{"--task", "random"}, {"--words", "3"}, {"--d-model", "3"}, {"--d-v", "2"}});
  for (const std::string& note : said) EXPECT_EQ(note.find("(auto: d_model)"), std::string::npos);
  const auto help = test::run_demo("--help");
  EXPECT_NE(help.out.find("--d-model N|auto"), std::string::npos);
  EXPECT_NE(help.out.find("d_v (columns of W_V); auto: d_model [auto]"), std::string::npos);
}

// Where at least half the runs diverged, the note says the learning rate they ran at.
TEST(AttentionSweep, MostRunsDivergedNamesTheLearningRate) {
  // The lesson's 0.5 on 8-column token inputs: every seed's loss grows past 10 times its start.
  const Table t = test::run_table("attention-sweep", {{"--task", "previous"},
                                                      {"--vocab", "4"},
                                                      {"--words", "4"},
                                                      {"--seeds", "0:4"},
                                                      {"--steps", "50"}});
  const std::string expected =
      "4 of 4 runs diverged (0 with a non-finite loss or map): left out of the converged rows; a "
      "smaller --lr than this run's 0.5 may keep them finite";
  EXPECT_NE(std::find(t.notes.begin(), t.notes.end(), expected), t.notes.end());
  const Table calm = test::run_table("attention-sweep", {{"--task", "previous"},
                                                         {"--vocab", "4"},
                                                         {"--words", "4"},
                                                         {"--lr", "0.01"},
                                                         {"--seeds", "0:4"},
                                                         {"--steps", "50"}});
  for (const std::string& note : calm.notes) EXPECT_EQ(note.find("diverged ("), std::string::npos);
}

// A grid's note that several configurations share is one line naming them.
TEST(AttentionSweep, AGridNamesTheConfigurationsANoteIsShared) {
  const Table t = test::run_table("attention-sweep", {{"--task", "previous"},
                                                      {"--vocab", "4"},
                                                      {"--words", "4"},
                                                      {"--inputs", "1,2"},
                                                      {"--lr", "0.5,0.6"},
                                                      {"--seeds", "0:4"},
                                                      {"--steps", "50"}});
  const auto count = [&](const std::string& start) {
    return std::count_if(t.notes.begin(), t.notes.end(),
                         [&](const std::string& n) { return n.rfind(start, 0) == 0; });
  };
  EXPECT_EQ(count("every configuration: no seed converged"), 1);
  EXPECT_EQ(count("lr=0.5 inputs=1, lr=0.5 inputs=2: 4 of 4 runs diverged"), 1);
  EXPECT_EQ(count("lr=0.6 inputs=1, lr=0.6 inputs=2: 4 of 4 runs diverged"), 1);
  EXPECT_EQ(count("lr=0.5 inputs=1: "), 0);
  EXPECT_EQ(count("lr=0.6 inputs=2: "), 0);
}

// Bad input: refused before any work with one line, nothing on stdout, no file.
TEST(AttentionSweep, RefusesBadInputWithOneLine) {
  TempDir dir;
  const std::string file = dir.file("never.csv");
  const std::string base = "--table attention-sweep -q --per-seed " + file + " ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--d-k 0", "--d-k"},
      {"--d-v 0", "--d-v"},
      {"--task random --words 3 --d-model 4 --d-v 3 --train qk", "--d-v must equal --d-model"},
      {"--task lesson --words 1 --d-model 1 --d-k 1", "--words 2 or more"},
      {"--task lesson --words 3 --d-model 2", "--d-model must equal --words"},
      {"--task lesson --words 3 --d-model 3 --d-v 2", "the output width (--d-v) must equal"},
      {"--task previous --words 1 --d-model 1 --d-k 1", "--words 2 or more"},
      {"--task reverse --words 4 --d-model 4 --d-v 3", "the output width (--d-v) must equal"},
      {"--task random --words 3 --d-model 4 --d-k 4 --d-v 6 --heads 4", "--heads 4 must divide"},
      {"--task random --words 3 --d-model 4 --d-k 4,6 --heads 2,4", "(d_k=6 heads=4)"},
      {"--d-k 2,2", "--d-k 2,2: 2 is given twice"},
      // Repeats compared as values, on every axis: each would run one configuration twice.
      {"--d-k 2,02", "2 and 02 are one value given twice"},
      {"--heads 1,01", "1 and 01 are one value given twice"},
      {"--lr 0.5,5e-1", "0.5 and 5e-1 are one value given twice"},
      {"--init-scale 1,1.0", "1 and 1.0 are one value given twice"},
      {"--lr auto,auto", "auto is given twice"},
      {"--scale 0.5,0.50", "0.5 and 0.50 are one value given twice"},
      {"--scale none,1", "none and 1 are one value given twice"},
      {"--optimizer sgd,sgd", "sgd is given twice"},
      {"--causal on,off,on", "on is given twice"},
      {"--scale soft", "--scale soft: sqrt, none or a number"},
      {"--scale 0", "--scale 0: sqrt, none or a number"},
      {"--optimizer rmsprop", "--optimizer"},
      {"--train qkvx", "--train"},
      {"--causal maybe", "--causal"},
      {"--d-k 2,4", "with a grid of 2 configurations"},
      {"--d-k 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,"
       "32 --lr "
       "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1,1.1,1.2,1.3,1.4,1.5,1.6,1.7,1.8,1.9,2,2.1,2.2,"
       "2.3,2.4,2.5,2.6,2.7,2.8,2.9,3,3.1,3.2,3.3",
       "a grid of more than 1024 configurations"},
      {"--words 0", "--words"},
      {"--steps 5 --seeds 0:9007199254740992", "more than the 2^28"},
      {"--lr nan", "--lr"},
      // Many inputs (version 3).
      {"--inputs 0", "--inputs"},
      {"--inputs 1048577", "--inputs"},
      {"--task random --inputs 2,0", "--inputs"},
      {"--test-inputs -1", "--test-inputs"},
      {"--test-inputs 1048577", "--test-inputs"},
      {"--test-inputs some", "--test-inputs"},
      {"--task previous --words 4 --d-model 4 --inputs 4", "every input would be X = I_n"},
      {"--task lesson --words 4 --d-model 4 --test-inputs 2", "a held-out input would be X = I_n"},
      {"--task previous --words 4 --vocab 1 --inputs 8",
       "--vocab 1 with --task previous and --inputs 8: every input would be one sequence"},
      {"--task reverse --words 4 --vocab 1 --test-inputs 3",
       "--vocab 1 with --task reverse and --test-inputs 3"},
      {"--task previous --words 4 --d-model 7 --vocab 2",
       "--d-model must be the vocabulary plus the positions, 6"},
      {"--task reverse --words 3 --d-model 5 --vocab 2 --d-v 4", "must equal --d-model"},
      {"--task random --vocab 3", "--vocab: --task random draws its inputs as normals"},
      {"--task teacher --vocab 3", "--vocab: --task teacher"},
      {"--vocab 1025", "--vocab"},
      {"--task lesson --teacher-scale 0.5", "--teacher-scale: it applies to --task teacher"},
      {"--task random --found-below 0.1", "--found-below: it applies to --task teacher"},
      {"--task teacher --teacher-scale 0", "--teacher-scale"},
      {"--task teacher --found-below 2", "--found-below"},
      {"--task random --inputs 4 --map-inputs 65", "--map-inputs 65: the run measures 64 inputs"},
      {"--task random --map-inputs 2", "--map-inputs 2: the run measures 1 input (--test-inputs"},
      {"--map-inputs 0", "--map-inputs"},
      {"--nudge maybe", "--nudge"},
      // Frozen maps: a map to freeze, and something left to train.
      {"--map frozen", "--map"},
      {"--map uniform,uniform", "uniform is given twice"},
      {"--task random --map known", "--map known: --task random has no known map"},
      {"--task lesson --map uniform --train qk",
       "--map uniform with --train qk: the maps are frozen and W_V is the identity"},
      {"--task teacher --map known --train qk", "--map known with --train qk"},
      {"--task lesson --map learned,known --train qk,qkv", "(train=qk map=known)"},
      {"--task reverse --words 4 --d-model 4 --map known --causal",
       "--map known with --task reverse and --causal: queries i < (n-1)/2 cannot see"},
      {"--task random --words 1024 --d-model 1024 --d-k 8 --inputs 1048576 --seeds 0:2",
       "of memory (the inputs and the mean maps)"},
  };
  for (const auto& [args, says] : cases)
    test::expect_refused(base + args, 2, {says}, test::Refusal().leaves_no(file));
  // A disk that cannot take the per-seed file is a destination refused (exit 1), as a full one.
  test::expect_refused(base + "--task random --words 1 --d-model 1 --d-k 1 --seeds 0:100000000000",
                       1, {"TB of results", "free on that disk"}, test::Refusal().leaves_no(file));
  // --per-seed writes .csv or .npy: another extension is refused, not written as CSV.
  for (const std::string name : {"x.parquet", "x.csv.gz", "x.txt"})
    test::expect_refused(
        "--table attention-sweep -q --per-seed " + dir.file(name), 2,
        {"unknown extension '" + name.substr(name.rfind('.')) + "' (it writes .csv or .npy)"},
        test::Refusal().leaves_no(dir.file(name)));
  // Memory (no --per-seed): a sweep told to keep results that cannot fit, refused before work.
  test::expect_refused(
      "--table attention-sweep -q --task random --words 8 --d-model 16 --d-k 16 --seeds "
      "0:100000000 --map-memory 1099511627776",
      2, {"of memory"});
}

// The second pass (each seed's JSD to the mean map) from the results the first pass kept, or
// by training every seed again (--map-memory 0): the same bytes, table and per-seed rows.
TEST(AttentionSweep, KeptAndRetrainedSecondPassesGiveTheSameBytes) {
  TempDir dir;
  const std::string args =
      "--table attention-sweep --format csv --task random --words 4 --d-model 6 --d-k 4 "
      "--seeds 0:3000 --steps 200 --per-seed ";
  const auto kept = test::run_demo(args + dir.file("kept.csv") + " -q");
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  const auto again = test::run_demo(args + dir.file("again.csv") + " --map-memory 0 -v");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("training every seed again"), std::string::npos) << again.err;
  EXPECT_EQ(again.out, kept.out);
  EXPECT_EQ(test::read_file(dir.file("again.csv")), test::read_file(dir.file("kept.csv")));
}

// Every training call on the CPU holds at least one lane pack of seeds per thread (a pack
// trains 8 seeds in lockstep, so a call of fewer takes as long), though a chunk here is 2
// seeds; the calls' sizes change no byte of the output. The adversary, which trains nothing,
// is off.
TEST(AttentionSweep, CpuCallsHoldALanePackPerThread) {
  const std::string args =
      "--table attention-sweep --format csv --task teacher --words 8 --d-model 16 --d-k 16 "
      "--inputs 64 --steps 50 --seeds 0:32 --device cpu --adversary off -v --threads ";
  std::string out;
  for (int threads : {1, 2}) {
    const auto r = test::run_demo(args + std::to_string(threads));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::smatch chunk, calls;
    ASSERT_TRUE(std::regex_search(r.err, chunk, std::regex("32 seeds in 16 chunks of (\\d+)")))
        << r.err;
    ASSERT_EQ(chunk[1], "2") << r.err;
    ASSERT_TRUE(std::regex_search(r.err, calls,
                                  std::regex("attention-sweep: (\\d+) calls of (\\d+) to (\\d+) "
                                             "chunks \\(at least (\\d+),")))
        << r.err;
    const int seeds_least = 8 * threads;  // a lane pack of 8 seeds per thread
    EXPECT_EQ(std::stoi(calls[4]) * 2, seeds_least) << r.err;
    EXPECT_GE(std::stoi(calls[2]) * 2, seeds_least) << r.err;  // every call, the last too here
    EXPECT_LE(std::stoi(calls[1]), 32 / seeds_least) << r.err;
    if (threads == 1)
      out = r.out;
    else
      EXPECT_EQ(r.out, out);
  }
}

// Past --quantile-budget the quantiles come from bins: within the bounds the notes state (map
// entries 2^-15 and the JSD ln 2 / 2^17 absolute, loss and distance 2^-15 of the value) of the
// exact ones, every other cell the same.
TEST(AttentionSweep, BinnedQuantilesAreWithinTheirBounds) {
  const std::string args =
      "--table attention-sweep -q --format csv --task random --words 3 --d-model 4 --d-k 3 "
      "--seeds 0:2000 --steps 50";
  const auto exact = test::run_demo(args);
  const auto binned = test::run_demo(args + " --quantile-budget 100");
  ASSERT_EQ(exact.exit_code, 0) << exact.err;
  ASSERT_EQ(binned.exit_code, 0) << binned.err;
  const auto rows_of = [](const std::string& csv) {
    std::vector<std::vector<std::string>> rows;
    for (const std::string& line : test::split(csv, '\n'))
      if (!line.empty()) rows.push_back(test::split(line, ','));
    return rows;
  };
  const auto a = rows_of(exact.out), b = rows_of(binned.out);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 10u);
  // Linear scales: half a bin (map entries and the not-unique fraction 2^-14 wide on [0, 1],
  // tau_b's on [-1, 1], a JSD's ln 2 / 2^16); relative ones 2^-15 of the value.
  const auto bound_of = [](const std::string& q, double x) {
    if (q.rfind("P[", 0) == 0 || q.find("not unique") != std::string::npos)
      return std::ldexp(1.0, -15);
    if (q.find("JSD") != std::string::npos) return std::log(2.0) / (1 << 17);
    if (q.find("tau_b") != std::string::npos) return std::ldexp(1.0, -14);
    return std::ldexp(std::fabs(x), -15);
  };
  int binned_rows = 0;
  for (std::size_t r = 1; r < a.size(); ++r) {
    const std::string& q = a[r][0];
    SCOPED_TRACE(q);
    ASSERT_EQ(a[r].size(), b[r].size());
    for (std::size_t c = 0; c < 6; ++c)
      EXPECT_EQ(a[r][c], b[r][c]);  // name, over, seeds, mean,
                                    // std, min
    EXPECT_EQ(a[r][11], b[r][11]);  // max
    if (b[r][12] != "binned") {
      EXPECT_EQ(a[r], b[r]);
      continue;
    }
    ++binned_rows;
    EXPECT_EQ(a[r][12], "exact");
    for (std::size_t c = 6; c < 11; ++c) {
      const double x = std::stod(a[r][c]), y = std::stod(b[r][c]);
      const double bound = bound_of(q, x);
      EXPECT_LE(std::fabs(x - y), bound * (1 + 1e-12)) << "column " << c;
    }
    for (std::size_t c = 13; c < 15; ++c) {  // the median's interval: two order statistics
      ASSERT_FALSE(a[r][c].empty()) << "column " << c;
      const double x = std::stod(a[r][c]), y = std::stod(b[r][c]);
      const double bound = bound_of(q, x);
      EXPECT_LE(std::fabs(x - y), bound * (1 + 1e-12)) << "column " << c;
    }
  }
  // Over the finite seeds (none converged): loss, JSD to mean, pair JSD trained and at the
  // start, distance, 9 entries, the changes of the loss and output distances of three
  // interventions (no known map), the adversarial JSD and not-unique fraction, tau_b.
  EXPECT_EQ(binned_rows, 5 + 9 + 6 + 2 + 1);
}

// --per-seed FILE.npy: the maps as one array (seeds, |R|, n) numpy maps without reading, and
// the seeds, losses, JSDs and outputs beside it; the same numbers as the CSV rows.
TEST(AttentionSweep, PerSeedNpyHoldsTheRowsAsArrays) {
  if (!test::have_numpy()) GTEST_SKIP() << "python3-numpy not installed";
  TempDir dir;
  const std::string args =
      "--table attention-sweep -q --task random --words 4 --d-model 6 --d-k 4 --d-v 5 "
      "--seeds 7:507 --steps 30 --per-seed ";
  ASSERT_EQ(test::run_demo(args + dir.file("rows.csv")).exit_code, 0);
  const auto r = test::run_demo(args + dir.file("maps.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string out = test::run_python(
      "import numpy as np, csv\n"
      "d = '" +
      dir.file("") +
      "'\n"
      "m = np.load(d + 'maps.npy', mmap_mode='r')\n"
      "s = np.load(d + 'maps.seeds.npy'); l = np.load(d + 'maps.loss.npy')\n"
      "j = np.load(d + 'maps.jsd.npy'); o = np.load(d + 'maps.out.npy', mmap_mode='r')\n"
      "rows = list(csv.DictReader(open(d + 'rows.csv')))\n"
      "ok = m.shape == (500, 4, 4) and o.shape == (500, 4, 5) and s.dtype == np.uint64\n"
      "ok = ok and (s == np.arange(7, 507)).all() and m.dtype == np.float64\n"
      "for k, row in enumerate(rows):\n"
      "    ok = ok and float(row['loss']) == l[k] and float(row['jsd_to_mean']) == j[k]\n"
      "    ok = ok and all(float(row['p_%d_%d' % (a, b)]) == m[k, a, b] for a in range(4) "
      "for b in range(4))\n"
      "ok = ok and np.allclose(m.sum(axis=2), 1) and (o != 0).any()\n"
      "print('ok' if ok and len(rows) == 500 else 'mismatch')\n");
  EXPECT_EQ(out, "ok\n");
}

// The arrays beside FILE.npy: one that exists is refused before any work (like FILE itself),
// and a killed run's temporary of one is cleared.
TEST(AttentionSweep, PerSeedNpySiblingsAreOutputsToo) {
  TempDir dir;
  const std::string args =
      "--table attention-sweep -q --steps 5 --seeds 0:10 --per-seed " + dir.file("maps.npy");
  const std::string stale = dir.file("maps.loss.npy.tmp-" + std::to_string(test::dead_pid()));
  test::write_file(stale, "partial");
  const auto ok = test::run_demo(args);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_FALSE(std::filesystem::exists(stale));
  std::filesystem::remove(dir.file("maps.npy"));
  test::expect_refused(args, 1, {".npy exists; pass --force"},
                       test::Refusal().leaves_no(dir.file("maps.npy")));
}

// Refused before any work: a --per-seed .npy with no name before the extension, and one file
// that two chosen experiments would both write.
TEST(AttentionSweep, PerSeedNamesThatCannotWorkAreRefused) {
  TempDir dir;
  test::expect_refused(
      "--table attention-sweep -q --steps 5 --seeds 0:10 --per-seed " + dir.file(".npy"), 2,
      {"a file name before the extension"}, test::Refusal().leaves_no(dir.file(".npy")));
  test::expect_refused(
      "--table attention-sweep,training-sweep -q --steps 5 --seeds 0:50 "
      "--per-seed " +
          dir.file("both.csv"),
      2, {"more than one chosen table writes it"}, test::Refusal().leaves_no(dir.file("both.csv")));
}

// --out's folder is made before the other outputs are checked, so --per-seed may name a file in
// the folder --out creates; a refusal after that leaves no folder behind.
TEST(AttentionSweep, PerSeedMayNameAFileInTheFolderOutCreates) {
  TempDir dir;
  const std::string base = "--table attention-sweep -q --steps 5 --seeds 0:3 --adversary off ";
  const std::string out = dir.file("new");
  const auto r = test::run_demo(base + "--out " + out + " --per-seed " + out + "/m.npy");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(out + "/m.npy"));
  EXPECT_TRUE(std::filesystem::exists(out + "/attention-sweep.json"));
  const std::string other = dir.file("other");
  test::expect_refused(base + "--out " + other + " --per-seed " + other + "/attention-sweep.csv", 1,
                       {"both write", "attention-sweep.csv"}, test::Refusal().leaves_no(other));
}

// A sweep far larger than memory is accepted, says how long it will take, and stops on SIGTERM.
TEST(AttentionSweep, ABillionSeedsIsAcceptedWithATimeEstimate) {
  const auto r = test::signal_when_ready(
      "--table attention-sweep --task random --words 8 --d-model 16 --d-k 16 --steps 1 "
      "--seeds 0:1000000000 --device cpu",
      "expected to take about", SIGTERM);
  SCOPED_TRACE(r.err);
  ASSERT_TRUE(r.ready);
  EXPECT_FALSE(r.hung);
  EXPECT_EQ(r.exit_code, 143);
}

// Runs that blow up (losses up to 4.5e307, every one finite): the final loss's mean and std are
// finite and those of the per-seed losses. numpy's np.std gives inf on them (it squares the
// deviations, 1e614), so the reference is exact rational arithmetic in Python, the std rounded
// from 50 digits; and np.std of the losses divided by 2^1000 (exact), times 2^1000.
TEST(AttentionSweep, DivergingRunsGiveAFiniteLossMeanAndStd) {
  if (!test::have_numpy()) GTEST_SKIP() << "python3-numpy not installed";
  TempDir dir;
  const std::string rows = dir.file("rows.csv");
  const Table t = test::run_table("attention-sweep", {{"--task", "random"},
                                                      {"--task-seed", "4"},
                                                      {"--words", "5"},
                                                      {"--d-model", "6"},
                                                      {"--d-k", "4"},
                                                      {"--d-v", "6"},
                                                      {"--seeds", "0:400"},
                                                      {"--steps", "300"},
                                                      {"--lr", "0.05"},
                                                      {"--init-scale", "0.5"},
                                                      {"--per-seed", rows}});
  const auto lines = test::lines_of(
      test::run_python("import csv, math, numpy as np\n"
                       "from fractions import Fraction\n"
                       "from decimal import Decimal, getcontext\n"
                       "rows = list(csv.DictReader(open('" +
                       rows +
                       "')))\n"
                       "used = [float(r['loss']) for r in rows\n"
                       "        if all(math.isfinite(float(v)) for k, v in r.items()\n"
                       "               if k == 'loss' or k.startswith('p_'))]\n"
                       "x = [Fraction(v) for v in used]\n"
                       "m = sum(x) / len(x)\n"
                       "var = sum((v - m) ** 2 for v in x) / len(x)\n"
                       "getcontext().prec = 50\n"
                       "sd = (Decimal(var.numerator) / Decimal(var.denominator)).sqrt()\n"
                       "a = np.array(used)\n"
                       "print(len(used), max(used))\n"
                       "print(repr(float(m)), repr(float(sd)))\n"
                       "print(repr(float(np.std(a / 2.0**1000) * 2.0**1000)))\n"
                       "gone = [r for r in rows if not all(math.isfinite(float(v))\n"
                       "        for k, v in r.items() if k == 'loss' or k.startswith('p_'))\n"
                       "        or float(r['loss']) > 10 * float(r['start_loss'])]\n"
                       "print(len(gone), sum(1 for r in rows if float(r['loss']) < 1e-4))\n"));
  ASSERT_EQ(lines.size(), 4u);
  std::istringstream first(lines[0]), exact(lines[1]);
  double used, largest, mean, sd;
  first >> used >> largest;
  exact >> mean >> sd;
  const double np_std = std::stod(lines[2]);
  EXPECT_GT(largest, 1e307);  // the blow-up this checks
  EXPECT_EQ(cell(t, "final loss", "seeds", "finite"), used);
  const double got_mean = cell(t, "final loss", "mean", "finite");
  const double got_sd = cell(t, "final loss", "std", "finite");
  ASSERT_TRUE(std::isfinite(got_mean) && std::isfinite(got_sd)) << got_mean << " " << got_sd;
  EXPECT_LE(std::fabs(got_mean - mean), 1e-13 * mean);
  EXPECT_LE(std::fabs(got_sd - sd), 1e-13 * sd);
  EXPECT_LE(std::fabs(got_sd - np_std), 1e-13 * sd);
  // Diverged runs counted in their own row (non-finite, or a final loss above 10 times the
  // starting one), none converged, the converged rows empty, and a note that says so.
  std::istringstream counts(lines[3]);
  double diverged = 0, converged = -1;
  counts >> diverged >> converged;
  EXPECT_GT(diverged, 200);  // most of them blow up
  EXPECT_EQ(cell(t, "diverged (fraction)", "mean", "all"), diverged / 400);
  EXPECT_EQ(converged, 0);
  EXPECT_EQ(cell(t, "converged (fraction)", "mean", "all"), 0.0);
  EXPECT_EQ(cell(t, "JSD between pairs of seeds", "seeds", "converged"), 0.0);
  bool said = false;
  for (const std::string& note : t.notes) said = said || note.rfind("no seed converged", 0) == 0;
  EXPECT_TRUE(said);
}

// The output distance of two runs far out on opposite sides: every difference finite, the sum of
// their squares (4e308) not. Reference: the same sum in long double (range beyond 1e4900).
TEST(AttentionSweep, OutputDistanceOfHugeOutputsIsFinite) {
  const std::vector<double> a = {1e154, 1.2e154, -3.0, 0.0, 7e153, -1e154};
  const std::vector<double> b = {-1e154, -1.1e154, 5.0, 1e150, -6e153, 1.3e154};
  const int rows = 2;
  long double sq = 0;
  for (std::size_t e = 0; e < a.size(); ++e) {
    const long double d = static_cast<long double>(a[e]) - b[e];
    sq += d * d;
  }
  ASSERT_GT(sq, static_cast<long double>(std::numeric_limits<double>::max()));
  const double want = static_cast<double>(std::sqrt(sq / rows));
  const double got = rms_distance(a.data(), b.data(), static_cast<int>(a.size()), rows);
  EXPECT_LE(std::fabs(got - want), 1e-15 * want) << got << " vs " << want;
  // Ordinary outputs: the plain sum of squares, bit for bit.
  const std::vector<double> c = {0.25, -1.5, 3.0}, d = {0.5, 2.0, -1.0};
  double plain = 0;
  for (int e = 0; e < 3; ++e) plain += (c[e] - d[e]) * (c[e] - d[e]);
  EXPECT_EQ(rms_distance(c.data(), d.data(), 3, 2), std::sqrt(plain / 2));
  // A non-finite output stays non-finite.
  const std::vector<double> bad = {NAN, 0.0, 0.0};
  EXPECT_TRUE(std::isnan(rms_distance(bad.data(), d.data(), 3, 2)));
}

// The training and measurement against tests/oracle/variability_reference.py, numpy float64 written
// from the spec alone: every seed's final, starting and test loss, every head's map on every
// measured input, and the measures against the known map, at 1e-9 relative (losses) and
// absolute (weights, JSD), on random configurations: every task, one input (version 2's) or
// many (token tasks with a vocabulary, random and teacher inputs, held-out or not), 1 to 3
// heads, causal or not, the three scales, qk, qkv and qkvo, SGD and Adam, both schedules.
TEST(AttentionSweep, EqualsTheNumpyReferenceOnRandomConfigurations) {
  if (!test::have_numpy()) GTEST_SKIP() << "python3-numpy not installed";
  std::mt19937_64 rng(2026);
  const std::vector<std::string> tasks = {"lesson", "previous", "reverse", "random", "teacher"};
  for (int trial = 0; trial < 20; ++trial) {
    TempDir dir;
    const std::string task = tasks[trial % 5];
    const bool token = task != "random" && task != "teacher";
    const int heads = 1 + static_cast<int>(rng() % 3);
    const int n = 2 + static_cast<int>(rng() % 4);
    const std::string train = trial % 3 == 0 ? "qk" : trial % 3 == 1 ? "qkv" : "qkvo";
    // Many inputs on every trial from the sixth on, alternately held out or not; a token task's
    // then have a vocabulary.
    const bool many = trial >= 5;
    const int inputs = many ? 1 + static_cast<int>(rng() % 4) : 1;
    const int test_inputs = many && trial % 2 == 0 ? 1 + static_cast<int>(rng() % 3) : 0;
    const int vocab = token && many ? 2 + static_cast<int>(rng() % 3) : 0;  // 1: inputs alike
    const int d_model = token ? vocab + n : 2 + static_cast<int>(rng() % 4);
    // The output width must be d_model for the token tasks; W_V = I needs d_v = d_model (qk).
    int d_v = heads * (1 + static_cast<int>(rng() % 3));
    if (train == "qk" || (token && train != "qkvo")) d_v = d_model;
    const int use_heads = d_v % heads == 0 ? heads : 1;
    const int d_k = use_heads * (1 + static_cast<int>(rng() % 3));
    const std::string scale = trial % 5 == 0 ? "none" : trial % 5 == 1 ? "0.6" : "sqrt";
    const std::string optimizer = trial % 2 ? "adam" : "sgd";
    const std::string causal = trial % 4 < 2 ? "on" : "off";
    const std::string schedule = trial % 7 == 3 ? "simultaneous" : "sequential";
    const std::string lr = optimizer == "adam" ? "0.05" : token ? "0.1" : "0.02";
    const int measured = test_inputs > 0 ? test_inputs : inputs;
    // The teacher at the default scale (auto) or a given one; a student of seed 4, the task
    // seed, at the teacher's init scale starts at the teacher (start loss 0, found).
    std::string init_scale = "0.7", extra;
    if (task == "teacher") {
      extra = trial % 2 ? " --teacher-scale 0.45 --found-below 0.01" : "";
      if (trial % 2) init_scale = "0.45";
    }
    std::string common = "--task " + task + " --task-seed " +
                         std::to_string(task == "teacher" ? 4 : trial) + " --words " +
                         std::to_string(n) + " --d-model " + std::to_string(d_model) + " --d-k " +
                         std::to_string(d_k) + " --d-v " + std::to_string(d_v) + " --heads " +
                         std::to_string(use_heads) + " --causal " + causal + " --scale " + scale +
                         " --train " + train + " --optimizer " + optimizer + " --schedule " +
                         schedule + " --steps 25 --lr " + lr + " --init-scale " + init_scale +
                         " --seeds 3:7 --map-inputs " + std::to_string(measured) + extra;
    if (many)
      common += " --inputs " + std::to_string(inputs) + " --test-inputs " +
                std::to_string(test_inputs) +
                (vocab > 0 ? " --vocab " + std::to_string(vocab) : "");
    SCOPED_TRACE(common);
    const auto r = test::run_demo("--table attention-sweep -q " + common + " --per-seed " +
                                  dir.file("demo.csv"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto ref = test::run_command("/usr/bin/python3 " + std::string(ATTN_SOURCE_DIR) +
                                       "/tests/oracle/variability_reference.py " + common + " > " +
                                       dir.file("ref.csv"));
    ASSERT_EQ(ref.exit_code, 0) << ref.err;
    const auto mine = test::read_csv(dir.file("demo.csv")).columns();
    const auto theirs = test::read_csv(dir.file("ref.csv")).columns();
    ASSERT_EQ(mine.at("seed").size(), 4u);
    int compared = 0;
    for (const auto& [name, values] : theirs) {
      if (name.rfind("o_", 0) == 0) continue;  // outputs: in the .npy, not the CSV
      ASSERT_TRUE(mine.count(name)) << name;
      for (std::size_t i = 0; i < values.size(); ++i) {
        const double scale_of = name.find("loss") != std::string::npos ? std::fabs(values[i]) : 1;
        EXPECT_LE(std::fabs(mine.at(name)[i] - values[i]), 1e-9 * std::max(1.0, scale_of))
            << name << " seed " << mine.at("seed")[i];
        ++compared;
      }
    }
    for (double v : mine.at("loss")) EXPECT_TRUE(std::isfinite(v)) << "a run that diverged";
    const int rows = task == "lesson" ? 1 : task == "previous" ? n - 1 : n;
    const bool known = task != "random";
    EXPECT_EQ(compared, 4 * (4 + (known ? 2 : 0) + measured * use_heads * rows * n));
    if (task == "teacher" && trial % 2) {  // seed 4 starts at the teacher
      EXPECT_EQ(mine.at("start_loss")[1], 0.0);
      EXPECT_EQ(mine.at("seed")[1], 4.0);
    }
  }
}

// The one-input head with fused multiply-add products against the version-2 head (separately
// rounded multiplies and adds) on ten configurations (tests/data/head_v2, made by the version-2
// binary: tools/make_head_v2_fixture.sh), 32 seeds, 10 steps each: every map entry within
// 1e-12 (absolute: a probability), the final and starting losses' roots (the residual norms)
// within 1e-12 of the starting residual norm (a loss near 0 is rounding noise squared, so its
// relative change says nothing). The numeric gradient divides the loss's rounding by 2h = 2e-5,
// so its runs move 1e5 times further: 1e-7 there. Short runs: longer ones amplify each step's
// rounding difference through the training's own dynamics (tools/make_head_v2_fixture.sh).
TEST(AttentionSweep, OneInputEqualsTheVersion2Head) {
  const std::string dir = std::string(ATTN_TEST_DATA) + "/head_v2/";
  int configurations = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".args") continue;
    ++configurations;
    const std::string name = entry.path().stem().string();
    const std::string args = test::lines_of(test::read_file(entry.path().string()))[0];
    SCOPED_TRACE(name + ": " + args);
    TempDir tmp;
    const auto r =
        test::run_demo("--table attention-sweep -q " + args + " --per-seed " + tmp.file("new.csv"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto old = test::read_csv(dir + name + ".csv").columns();
    const auto now = test::read_csv(tmp.file("new.csv")).columns();
    const double tol = args.find("--grad numeric") != std::string::npos ? 1e-7 : 1e-12;
    ASSERT_EQ(old.at("seed").size(), 32u);
    ASSERT_EQ(now.at("seed"), old.at("seed"));
    int maps = 0;
    for (std::size_t i = 0; i < old.at("seed").size(); ++i) {
      const double scale = std::sqrt(old.at("start_loss")[i]);
      for (const char* loss : {"loss", "start_loss"})
        EXPECT_LE(std::fabs(std::sqrt(now.at(loss)[i]) - std::sqrt(old.at(loss)[i])), tol * scale)
            << loss << " seed " << i;
      for (const auto& [column, values] : old)
        if (column.rfind("p_", 0) == 0) {
          ASSERT_TRUE(now.count(column)) << column;
          EXPECT_LE(std::fabs(now.at(column)[i] - values[i]), tol) << column << " seed " << i;
          ++maps;
        }
    }
    EXPECT_GT(maps, 32);
  }
  EXPECT_EQ(configurations, 10);
}

// The 95% Wilson score interval against Newcombe's worked examples (Statistics in Medicine 17,
// 857-872, 1998, Table I, method 3): 81/263, 15/148, 0/20, 1/29 (four decimals), and its
// closed form at k = 0 (upper z² / (n + z²)).
TEST(AttentionSweepStatistics, WilsonIntervalsAreNewcombes) {
  const struct {
    std::int64_t k, n;
    double lo, hi;
  } cases[] = {{81, 263, 0.2553, 0.3662},
               {15, 148, 0.0624, 0.1605},
               {0, 20, 0.0, 0.1611},
               {1, 29, 0.0061, 0.1718}};
  for (const auto& c : cases) {
    const auto [lo, hi] = wilson_interval(c.k, c.n);
    EXPECT_NEAR(lo, c.lo, 5e-5) << c.k << "/" << c.n;
    EXPECT_NEAR(hi, c.hi, 5e-5) << c.k << "/" << c.n;
  }
  const double z2 = 1.959963984540054 * 1.959963984540054;
  EXPECT_EQ(wilson_interval(0, 10).first, 0.0);
  EXPECT_NEAR(wilson_interval(0, 10).second, z2 / (10 + z2), 1e-15);
  EXPECT_NEAR(wilson_interval(10, 10).first, 10 / (10 + z2), 1e-15);
  EXPECT_TRUE(std::isnan(wilson_interval(0, 0).first));
}

// The median's distribution-free interval: the rank l against exact binomial sums (128-bit
// integers: P(B <= l - 1) <= 0.025 exactly when 40 Σ_{k<l} C(n, k) <= 2^n) for n up to 100, the
// textbook ranks (n = 10: x_(2) to x_(9); n = 100: x_(40) to x_(61)), none below 6, and near
// n/2 - 0.98 √n for large n.
TEST(AttentionSweepStatistics, MedianIntervalRanksAreTheBinomials) {
  for (std::int64_t n = 1; n <= 100; ++n) {
    unsigned __int128 c = 1, below = 0;  // C(n, k), Σ_{k' < k} C(n, k')
    const unsigned __int128 all = static_cast<unsigned __int128>(1) << n;
    std::int64_t want = 0;
    for (std::int64_t k = 0; k <= n / 2; ++k) {
      below += c;  // now Σ_{k' <= k}
      if (40 * below > all) break;
      want = k + 1;
      c = c * static_cast<unsigned __int128>(n - k) / static_cast<unsigned __int128>(k + 1);
    }
    EXPECT_EQ(median_interval_rank(n), want) << "n " << n;
  }
  EXPECT_EQ(median_interval_rank(5), 0);
  EXPECT_EQ(median_interval_rank(6), 1);
  EXPECT_EQ(median_interval_rank(10), 2);
  EXPECT_EQ(median_interval_rank(100), 40);
  for (const std::int64_t n : {10000, 1000000, 100000000}) {
    const double approx = n / 2.0 - 0.98 * std::sqrt(static_cast<double>(n));
    EXPECT_NEAR(static_cast<double>(median_interval_rank(n)), approx, 2.0) << n;
  }
}

// Many inputs (spec "Version 3"): the measures over the measured inputs against the per-seed
// rows (every measured input's maps, --map-inputs all of them), recomputed from the spec's
// formulas: JSD to the mean maps and between pairs (the mean over the inputs and loss rows),
// argmax agreement over every input's rows, the generalized fraction and its Wilson interval,
// the test loss median and its interval's order statistics.
TEST(AttentionSweep, ManyInputMeasuresAgreeWithThePerSeedRows) {
  TempDir dir;
  const std::string rows = dir.file("rows.csv");
  const int n = 3, seeds = 40, measured = 4;
  const Table t = test::run_table("attention-sweep", {{"--task", "teacher"},
                                                      {"--words", std::to_string(n)},
                                                      {"--d-model", "4"},
                                                      {"--d-k", "2"},
                                                      {"--inputs", "3"},
                                                      {"--test-inputs", "4"},
                                                      {"--map-inputs", "4"},
                                                      {"--seeds", "10:50"},
                                                      {"--steps", "300"},
                                                      {"--lr", "0.05"},
                                                      {"--converged-below", "0.25"},
                                                      {"--per-seed", rows}});
  const auto c = test::read_csv(rows).columns();
  ASSERT_EQ(c.at("seed").size(), static_cast<std::size_t>(seeds));
  const int map = measured * n * n;
  std::vector<std::vector<double>> maps(seeds, std::vector<double>(map));
  std::vector<double> mean(map, 0.0);
  for (int s = 0; s < seeds; ++s)
    for (int e = 0; e < map; ++e) {
      const int b = e / (n * n), i = e / n % n, j = e % n;
      maps[s][e] =
          c.at("p_in" + std::to_string(b) + "_" + std::to_string(i) + "_" + std::to_string(j))[s];
      mean[e] += maps[s][e] / seeds;
    }
  const auto map_jsd = [&](const std::vector<double>& a, const std::vector<double>& b) {
    double sum = 0;
    for (int r = 0; r < measured * n; ++r)
      sum += jsd_reference({a.begin() + r * n, a.begin() + (r + 1) * n},
                           {b.begin() + r * n, b.begin() + (r + 1) * n});
    return sum / (measured * n);
  };
  double to_mean = 0, pairs = 0;
  int generalized = 0;
  for (int s = 0; s < seeds; ++s) {
    EXPECT_NEAR(c.at("jsd_to_mean")[s], map_jsd(maps[s], mean), 1e-12);
    to_mean += map_jsd(maps[s], mean) / seeds;
    generalized += c.at("generalized")[s] != 0;
    EXPECT_EQ(c.at("generalized")[s] != 0, c.at("test_loss")[s] < 0.25 && c.at("diverged")[s] == 0);
  }
  for (int s = 0; s + 1 < seeds; s += 2) pairs += map_jsd(maps[s], maps[s + 1]) / (seeds / 2);
  EXPECT_NEAR(cell(t, "JSD to the mean map", "mean", "finite"), to_mean, 1e-12);
  EXPECT_NEAR(cell(t, "JSD between pairs of seeds", "mean", "finite"), pairs, 1e-12);
  double agree = 0;
  for (int r = 0; r < measured * n; ++r) {
    std::vector<int> counts(n, 0);
    for (int s = 0; s < seeds; ++s) {
      int best = 0;
      for (int j = 1; j < n; ++j)
        if (maps[s][r * n + j] > maps[s][r * n + best]) best = j;
      counts[best]++;
    }
    agree += static_cast<double>(*std::max_element(counts.begin(), counts.end())) / seeds /
             (measured * n);
  }
  EXPECT_NEAR(cell(t, "argmax agreement", "mean", "finite"), agree, 1e-12);
  ASSERT_GT(generalized, 0);
  ASSERT_LT(generalized, seeds);
  EXPECT_EQ(cell(t, "generalized (fraction)", "mean", "all"), generalized / double(seeds));
  const auto [lo, hi] = wilson_interval(generalized, seeds);
  EXPECT_EQ(cell(t, "generalized (fraction)", "ci95_low", "all"), lo);
  EXPECT_EQ(cell(t, "generalized (fraction)", "ci95_high", "all"), hi);
  // The test loss over the finite seeds: its median, and the median's interval the order
  // statistics x_(l), x_(n-l+1) of the sorted per-seed test losses (l = 14 of 40).
  std::vector<double> test_loss = c.at("test_loss");
  std::sort(test_loss.begin(), test_loss.end());
  ASSERT_EQ(median_interval_rank(seeds), 14);
  EXPECT_EQ(cell(t, "test loss", "p50", "finite"), (test_loss[19] + test_loss[20]) / 2);
  EXPECT_EQ(cell(t, "test loss", "ci95_low", "finite"), test_loss[13]);
  EXPECT_EQ(cell(t, "test loss", "ci95_high", "finite"), test_loss[seeds - 14]);
  EXPECT_EQ(t.run["measured_inputs"], measured);
}

// "JSD between pairs at the start" is the pairs' JSD at their starting weights: a training that
// cannot move its weights (a learning rate of 1e-300 rounds every step away) ends where it
// started, and the two rows are equal; trained for real, the start's row is unchanged.
TEST(AttentionSweep, PairJsdAtTheStartIsTheUntrainedPairs) {
  const Table still = test::run_table("attention-sweep", {{"--task", "random"},
                                                          {"--words", "4"},
                                                          {"--d-model", "5"},
                                                          {"--d-k", "3"},
                                                          {"--inputs", "2"},
                                                          {"--seeds", "0:20"},
                                                          {"--steps", "3"},
                                                          {"--lr", "1e-300"}});
  const double start = cell(still, "JSD between pairs at the start", "mean", "finite");
  EXPECT_GT(start, 1e-4);
  EXPECT_EQ(cell(still, "JSD between pairs of seeds", "mean", "finite"), start);
  const Table moved = test::run_table("attention-sweep", {{"--task", "random"},
                                                          {"--words", "4"},
                                                          {"--d-model", "5"},
                                                          {"--d-k", "3"},
                                                          {"--inputs", "2"},
                                                          {"--seeds", "0:20"},
                                                          {"--steps", "200"},
                                                          {"--lr", "0.05"}});
  EXPECT_EQ(cell(moved, "JSD between pairs at the start", "mean", "finite"), start);
  EXPECT_NE(cell(moved, "JSD between pairs of seeds", "mean", "finite"), start);
}

// --nudge: the lesson's training contracts (every seed settles where its nudged twin settles),
// the random task at n = 8, d = 16 over 300 steps is chaotic (most seeds' maps end far from
// their twins'); the table's fraction counts the per-seed JSDs above 1e-6 nats.
TEST(AttentionSweep, NudgeTellsChaoticTrainingsFromContractingOnes) {
  TempDir dir;
  const Table lesson = test::run_table(
      "attention-sweep", {{"--task", "lesson"}, {"--seeds", "0:40"}, {"--nudge", "on"}});
  EXPECT_EQ(cell(lesson, "rounding-sensitive (fraction)", "mean", "finite"), 0.0);
  EXPECT_LT(cell(lesson, "JSD after a nudge (one ulp of W_Q)", "max", "finite"), 1e-20);
  const std::string rows = dir.file("rows.csv");
  const Table chaos = test::run_table("attention-sweep", {{"--task", "random"},
                                                          {"--words", "8"},
                                                          {"--d-model", "16"},
                                                          {"--d-k", "16"},
                                                          {"--steps", "300"},
                                                          {"--seeds", "0:32"},
                                                          {"--nudge", "on"},
                                                          {"--per-seed", rows}});
  const auto c = test::read_csv(rows).columns();
  int sensitive = 0, finite = 0;
  for (std::size_t s = 0; s < c.at("seed").size(); ++s) {
    if (c.at("diverged")[s] != 0 && !std::isfinite(c.at("loss")[s])) continue;
    ++finite;
    sensitive += !(c.at("nudge_jsd")[s] <= 1e-6);
  }
  EXPECT_GT(sensitive, finite / 2);
  EXPECT_EQ(cell(chaos, "rounding-sensitive (fraction)", "mean", "finite"),
            static_cast<double>(sensitive) / finite);
  EXPECT_EQ(cell(chaos, "rounding-sensitive (fraction)", "seeds", "finite"), finite);
  EXPECT_EQ(chaos.run["nudge"], true);
}

// The per-seed weights (FILE.w_q.npy and siblings) recompute, in numpy from the spec, the
// measured maps, outputs and test loss the sweep wrote: the held-out inputs regenerated from
// the task seed (training inputs first, then held-out, X then Y each), two heads, W_O.
TEST(AttentionSweep, ExportedWeightsGiveTheMeasuredMapsInNumpy) {
  if (!test::have_numpy()) GTEST_SKIP() << "python3-numpy not installed";
  TempDir dir;
  const auto r = test::run_demo(
      "--table attention-sweep -q --task random --task-seed 5 --words 4 --d-model 5 --d-k 4 "
      "--d-v 6 --heads 2 --train qkvo --inputs 3 --test-inputs 2 --map-inputs 2 --seeds 0:12 "
      "--steps 50 --lr 0.02 --per-seed " +
      dir.file("s.npy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string out = test::run_python(
      "import numpy as np\n"
      "d = '" +
      dir.file("") +
      "'\n"
      "L = lambda k: np.load(d + 's.' + k + '.npy')\n"
      "P, O = np.load(d + 's.npy'), L('out')\n"
      "wq, wk, wv, wo = L('w_q'), L('w_k'), L('w_v'), L('w_o')\n"
      "g = np.random.default_rng(5)\n"
      "data = [(g.normal(size=(4, 5)), g.normal(size=(4, 5))) for _ in range(5)][3:]\n"
      "ok = P.shape == (12, 2, 2, 4, 4) and O.shape == (12, 2, 4, 5) and wq.shape == (12, 5, 4)\n"
      "ok = ok and wv.shape == (12, 5, 6) and wo.shape == (12, 6, 5)\n"
      "worst = 0\n"
      "for s in range(12):\n"
      "    loss = 0\n"
      "    for b, (X, Y) in enumerate(data):\n"
      "        Q, K, V = X @ wq[s], X @ wk[s], X @ wv[s]\n"
      "        Ob = np.zeros((4, 6))\n"
      "        for h in range(2):\n"
      "            S = Q[:, 2*h:2*h+2] @ K[:, 2*h:2*h+2].T / np.sqrt(2)\n"
      "            e = np.exp(S - S.max(axis=1, keepdims=True)); p = e / e.sum(axis=1, "
      "keepdims=True)\n"
      "            worst = max(worst, abs(p - P[s, b, h]).max())\n"
      "            Ob[:, 3*h:3*h+3] = p @ V[:, 3*h:3*h+3]\n"
      "        F = Ob @ wo[s]\n"
      "        worst = max(worst, abs(F - O[s, b]).max() / max(1, abs(F).max()))\n"
      "        loss += ((F - Y) ** 2).sum() / 2\n"
      "    worst = max(worst, abs(loss - L('test_loss')[s]) / loss)\n"
      "print('ok' if ok and worst < 1e-12 else 'mismatch %g' % worst)\n");
  EXPECT_EQ(out, "ok\n");
}

// The JSD of rows holding the smallest subnormal weight (a softmax whose scores ran ~745 apart):
// finite, and what the definition gives (p ln(2p / (p + q)) / 2 for each entry; here 0 to
// within the subnormal), where halving p + q first would divide by 0.
TEST(AttentionSweep, JsdOfSubnormalWeightsIsFinite) {
  const double tiny = std::numeric_limits<double>::denorm_min();
  const std::vector<double> p = {1.0, tiny}, q = {1.0, 0.0}, r = {tiny, 1.0};
  EXPECT_TRUE(std::isfinite(jsd(p.data(), q.data(), 2)));
  EXPECT_LE(jsd(p.data(), q.data(), 2), 1e-300);
  EXPECT_NEAR(jsd(r.data(), q.data(), 2), std::log(2.0), 1e-15);
  const std::vector<double> a = {0.25, 0.75}, b = {0.5, 0.5};  // ordinary rows: the formula
  const double m0 = 0.375, m1 = 0.625;
  EXPECT_NEAR(jsd(a.data(), b.data(), 2),
              0.5 * (0.25 * std::log(0.25 / m0) + 0.75 * std::log(0.75 / m1)) +
                  0.5 * (0.5 * std::log(0.5 / m0) + 0.5 * std::log(0.5 / m1)),
              1e-16);
}

// --task teacher: the seed equal to the task seed, at the teacher's scale (auto: 1/sqrt(d_model)),
// starts at the teacher (spec): start loss 0, the teacher's maps (found, JSD 0), and the table
// says so; at another scale it does not.
TEST(AttentionSweep, TheTaskSeedAtTheTeachersScaleStartsAtTheTeacher) {
  TempDir dir;
  const std::map<std::string, std::string> common = {
      {"--task", "teacher"}, {"--task-seed", "2"}, {"--words", "4"},   {"--d-model", "4"},
      {"--d-k", "4"},        {"--inputs", "3"},    {"--seeds", "0:4"}, {"--steps", "5"}};
  auto args = common;
  args["--init-scale"] = "0.5";
  args["--per-seed"] = dir.file("rows.csv");
  const Table t = test::run_table("attention-sweep", args);
  const auto c = test::read_csv(dir.file("rows.csv")).columns();
  EXPECT_EQ(c.at("start_loss")[2], 0.0);
  EXPECT_EQ(c.at("loss")[2], 0.0);
  EXPECT_EQ(c.at("found")[2], 1.0);
  EXPECT_EQ(c.at("jsd_to_known")[2], 0.0);
  for (int s : {0, 1, 3}) EXPECT_GT(c.at("start_loss")[s], 0.0);
  const auto said = [](const Table& table) {
    return std::any_of(table.notes.begin(), table.notes.end(), [](const std::string& n) {
      return n.find("seed 2 is the task seed at the teacher's scale") != std::string::npos;
    });
  };
  EXPECT_TRUE(said(t));
  EXPECT_EQ(t.run["teacher_scale"], 0.5);
  EXPECT_FALSE(said(test::run_table("attention-sweep", common)));  // init scale auto: 0.25
}

// min_assignment against every permutation, on random cost matrices of 1 to 6 heads.
TEST(AttentionSweep, HeadMatchingFindsTheBestPermutation) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  for (int h = 1; h <= 6; ++h)
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> cost(h * h);
      for (double& c : cost) c = trial % 4 == 0 ? std::floor(4 * u(rng)) : u(rng);  // ties too
      std::vector<int> perm(h);
      for (int i = 0; i < h; ++i) perm[i] = i;
      double best = INFINITY;
      do {
        double sum = 0;
        for (int i = 0; i < h; ++i) sum += cost[i * h + perm[i]];
        best = std::min(best, sum);
      } while (std::next_permutation(perm.begin(), perm.end()));
      std::vector<int> columns;
      const double got = min_assignment(cost, h, &columns);
      EXPECT_NEAR(got, best, 1e-12) << "heads " << h;
      std::vector<int> sorted = columns;
      std::sort(sorted.begin(), sorted.end());
      for (int i = 0; i < h; ++i) EXPECT_EQ(sorted[i], i);  // a permutation
    }
}

// Multi-head Adam on the random task: the head-matched pairwise JSD from the per-seed maps (two
// heads: the better of the two pairings, by hand), the head-averaged pairwise JSD, and the
// matched one never above the identity pairing.
// A JSD lies in [0, ln 2] for any two distributions, subnormal weights included: the mean
// (p + q) / 2 of a subnormal weight and 0 rounds to 0, and p / m must not be taken as infinite
// (a large random head's sweep has such weights).
TEST(AttentionSweep, JsdOfSubnormalWeightsStaysInItsDomain) {
  const double tiny = std::numeric_limits<double>::denorm_min();
  const double p[3] = {tiny, 0.5, 0.5 - tiny}, q[3] = {0, 0.5, 0.5};
  const double j = jsd(p, q, 3);
  EXPECT_TRUE(std::isfinite(j));
  EXPECT_GE(j, 0);
  EXPECT_LE(j, 1e-300);
  const double a[2] = {1, 0}, b[2] = {0, 1};
  EXPECT_EQ(jsd(a, b, 2), std::log(2.0));  // maps that share nothing
}

TEST(AttentionSweep, HeadMatchedPairJsdAgreesWithThePerSeedMaps) {
  TempDir dir;
  const std::string rows = dir.file("rows.csv");
  const int n = 3, seeds = 40;
  const Table t = test::run_table("attention-sweep", {{"--task", "random"},
                                                      {"--words", std::to_string(n)},
                                                      {"--d-model", "4"},
                                                      {"--d-k", "4"},
                                                      {"--heads", "2"},
                                                      {"--optimizer", "adam"},
                                                      {"--lr", "0.02"},
                                                      {"--seeds", "0:40"},
                                                      {"--steps", "100"},
                                                      {"--per-seed", rows}});
  const auto c = test::read_csv(rows).columns();
  const auto head_map = [&](int s, int h) {
    std::vector<double> m(n * n);
    for (int e = 0; e < n * n; ++e)
      m[e] = c.at("p_" + std::to_string(h) + "_" + std::to_string(e / n) + "_" +
                  std::to_string(e % n))[s];
    return m;
  };
  const auto jsd_of = [&](const std::vector<double>& a, const std::vector<double>& b) {
    double sum = 0;
    for (int r = 0; r < n; ++r)
      sum += jsd_reference({a.begin() + r * n, a.begin() + (r + 1) * n},
                           {b.begin() + r * n, b.begin() + (r + 1) * n});
    return sum / n;
  };
  double matched = 0, averaged = 0, identity = 0;
  for (int s = 0; s + 1 < seeds; s += 2) {
    const auto a0 = head_map(s, 0), a1 = head_map(s, 1), b0 = head_map(s + 1, 0),
               b1 = head_map(s + 1, 1);
    const double same = (jsd_of(a0, b0) + jsd_of(a1, b1)) / 2;
    const double swapped = (jsd_of(a0, b1) + jsd_of(a1, b0)) / 2;
    matched += std::min(same, swapped) / (seeds / 2);
    identity += same / (seeds / 2);
    std::vector<double> pa(n * n), pb(n * n);
    for (int e = 0; e < n * n; ++e) {
      pa[e] = (a0[e] + a1[e]) / 2;
      pb[e] = (b0[e] + b1[e]) / 2;
    }
    averaged += jsd_of(pa, pb) / (seeds / 2);
  }
  EXPECT_NEAR(cell(t, "JSD between pairs (heads matched)", "mean", "finite"), matched, 1e-12);
  EXPECT_NEAR(cell(t, "JSD between pairs of seeds", "mean", "finite"), averaged, 1e-12);
  EXPECT_LE(matched, identity);
  EXPECT_EQ(t.run["optimizer"], "adam");
}

// The known map of --task previous (row i attends to key i - 1): the found fraction and the JSD
// to the known map from the per-seed rows. And the lesson's point as numbers: with --train qk
// (W_V = I, one head) every seed that fits the task attends as the algorithm says and the maps
// agree; with W_V trained, seeds reach the same loss with other maps, so fewer find the
// sub-diagonal and the maps differ far more between seeds.
TEST(AttentionSweep, KnownMapIsFoundWhenTheMapIsForcedAndNotWhenItIsFree) {
  TempDir dir;
  const int n = 5, seeds = 60;
  const Table t = test::run_table("attention-sweep", {{"--task", "previous"},
                                                      {"--words", std::to_string(n)},
                                                      {"--d-model", std::to_string(n)},
                                                      {"--d-k", std::to_string(n)},
                                                      {"--train", "qk,qkv"},
                                                      {"--causal", "on"},
                                                      {"--seeds", "0:60"},
                                                      {"--steps", "1500"}});
  const double found_qk = cell(t, "found the known map (fraction)", "mean", "finite", "train=qk");
  const double found_qkv = cell(t, "found the known map (fraction)", "mean", "finite", "train=qkv");
  EXPECT_EQ(found_qk, 1.0);
  EXPECT_LT(found_qkv, 0.5);
  EXPECT_GT(cell(t, "JSD between pairs of seeds", "mean", "finite", "train=qkv"),
            10 * cell(t, "JSD between pairs of seeds", "mean", "finite", "train=qk"));
  EXPECT_EQ(cell(t, "converged (fraction)", "seeds", "all", "train=qkv"), seeds);
  // The measures against the per-seed rows of the qkv configuration alone.
  const std::string rows = dir.file("rows.csv");
  test::run_table("attention-sweep", {{"--task", "previous"},
                                      {"--words", std::to_string(n)},
                                      {"--d-model", std::to_string(n)},
                                      {"--d-k", std::to_string(n)},
                                      {"--train", "qkv"},
                                      {"--causal", "on"},
                                      {"--seeds", "0:60"},
                                      {"--steps", "1500"},
                                      {"--per-seed", rows}});
  const auto c = test::read_csv(rows).columns();
  int found = 0;
  double to_known = 0;
  for (int s = 0; s < seeds; ++s) {
    bool all = true;
    double sum = 0;
    for (int i = 1; i < n; ++i) {
      std::vector<double> row(n), key(n, 0.0);
      for (int j = 0; j < n; ++j)
        row[j] = c.at("p_" + std::to_string(i) + "_" + std::to_string(j))[s];
      key[i - 1] = 1;
      all = all && std::max_element(row.begin(), row.end()) - row.begin() == i - 1;
      sum += jsd_reference(row, key);
      for (int j = i + 1; j < n; ++j) EXPECT_EQ(row[j], 0.0) << "causal";
    }
    found += all;
    to_known += sum / (n - 1) / seeds;
  }
  EXPECT_EQ(found_qkv, static_cast<double>(found) / seeds);
  EXPECT_NEAR(cell(t, "JSD to the known map", "mean", "finite", "train=qkv"), to_known, 1e-12);
}

// A grid runs each configuration on the same seeds: its block of rows is the table of the same
// configuration run alone, cell for cell.
TEST(AttentionSweep, AGridBlockEqualsThatConfigurationAlone) {
  const std::string args =
      "--table attention-sweep -q --format csv --task random --words 3 --d-model 4 --seeds 0:40 "
      "--steps 30";
  const auto grid =
      test::run_demo(args + " --d-k 2,4 --scale sqrt,none --optimizer sgd,adam --inputs 1,3");
  const auto one = test::run_demo(args + " --d-k 4 --scale none --optimizer adam --inputs 3");
  ASSERT_EQ(grid.exit_code, 0) << grid.err;
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::vector<std::string> block;
  for (const std::string& line : test::split(grid.out, '\n'))
    if (line.rfind("d_k=4 scale=none optimizer=adam inputs=3,", 0) == 0)
      block.push_back(line.substr(line.find(',') + 1));
  std::vector<std::string> alone;
  for (const std::string& line : test::split(one.out, '\n'))
    if (!line.empty() && line.rfind("quantity,", 0) != 0) alone.push_back(line);
  ASSERT_GT(alone.size(), 10u);
  EXPECT_EQ(block, alone);
}

// --map is a grid axis: each configuration named in the table (CSV and JSON), its run and the
// grid figure's points; --map learned is the run without --map, byte for byte (its block of the
// grid, and its per-seed rows alone); a frozen map's block is that configuration alone. The
// frozen maps are what the measures see: uniform (1/2 on row 1 of the causal previous task), the
// known map (found by every seed, JSD 0 to it), and the same for every pair of seeds at the start.
TEST(AttentionSweep, MapIsAGridAxisAndLearnedIsTheRunWithoutIt) {
  TempDir dir;
  const std::string args =
      "--table attention-sweep -q --task previous --words 4 --d-model 4 --d-k 2 --causal --seeds "
      "0:6 --steps 30";
  const auto grid = test::run_demo(args + " --format csv --map learned,uniform,known");
  ASSERT_EQ(grid.exit_code, 0) << grid.err;
  const auto block = [&](const std::string& name) {
    std::vector<std::string> lines;
    for (const std::string& line : test::split(grid.out, '\n'))
      if (line.rfind(name + ",", 0) == 0) lines.push_back(line.substr(line.find(',') + 1));
    return lines;
  };
  const auto alone = [&](const std::string& more) {
    const auto r = test::run_demo(args + " --format csv" + more);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines;
    for (const std::string& line : test::split(r.out, '\n'))
      if (!line.empty() && line.rfind("quantity,", 0) != 0) lines.push_back(line);
    return lines;
  };
  const std::vector<std::string> learned = alone("");
  ASSERT_GT(learned.size(), 10u);
  EXPECT_EQ(block("map=learned"), learned);
  EXPECT_EQ(alone(" --map learned"), learned);
  EXPECT_EQ(block("map=uniform"), alone(" --map uniform"));
  EXPECT_EQ(block("map=known"), alone(" --map known"));
  // The per-seed rows of --map learned: the run without --map's, byte for byte.
  const auto a = test::run_demo(args + " --per-seed " + dir.file("a.csv"));
  const auto b = test::run_demo(args + " --map learned --per-seed " + dir.file("b.csv"));
  ASSERT_EQ(a.exit_code + b.exit_code, 0) << a.err << b.err;
  EXPECT_EQ(test::read_file(dir.file("a.csv")), test::read_file(dir.file("b.csv")));

  const auto json = test::run_demo(args + " --format json --map learned,uniform,known");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json t = nlohmann::json::parse(json.out)["tables"][0];
  EXPECT_EQ(t["run"]["map"], "learned");
  const std::vector<std::string> names = {"map=learned", "map=uniform", "map=known"};
  for (std::size_t k = 0; k < names.size(); ++k) {
    EXPECT_EQ(t["run"]["configurations"][k]["name"], names[k]);
    EXPECT_EQ(t["run"]["configurations"][k]["map"], names[k].substr(4));
    EXPECT_EQ(t["grid"][k]["map"], names[k].substr(4));
  }
  bool noted = false;
  for (const auto& note : t["notes"])
    noted = noted || note.get<std::string>().rfind(
                         "--map uniform, known: every head's map "
                         "frozen",
                         0) == 0;
  EXPECT_TRUE(noted) << t["notes"];
  const auto value = [&](const std::string& config, const std::string& quantity,
                         const std::string& over, const std::string& column) -> double {
    for (const auto& row : t["rows"])
      if (row["configuration"] == config && row["quantity"] == quantity && row["over"] == over)
        return row[column].get<double>();
    ADD_FAILURE() << config << " " << quantity;
    return NAN;
  };
  EXPECT_EQ(value("map=uniform", "P[1][0]", "finite", "min"), 0.5);
  EXPECT_EQ(value("map=uniform", "P[1][1]", "finite", "max"), 0.5);
  EXPECT_EQ(value("map=uniform", "P[1][2]", "finite", "max"), 0.0);
  EXPECT_EQ(value("map=known", "found the known map (fraction)", "finite", "mean"), 1.0);
  EXPECT_EQ(value("map=known", "JSD to the known map", "finite", "max"), 0.0);
  for (const std::string config : {"map=uniform", "map=known"}) {
    EXPECT_EQ(value(config, "JSD between pairs at the start", "finite", "max"), 0.0) << config;
    EXPECT_EQ(value(config, "JSD between pairs of seeds", "finite", "max"), 0.0) << config;
  }
  EXPECT_GT(value("map=learned", "JSD between pairs of seeds", "finite", "max"), 0.0);
}

// `--causal` alone means on, wherever it stands on the line; `--causal off` and none mean off.
TEST(AttentionSweep, CausalAloneIsOn) {
  const auto causal = [](const std::string& args) {
    const auto r =
        test::run_demo("--table attention-sweep --format json -q --steps 2 --seeds 0:2 " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["tables"][0]["run"]["causal"].get<bool>();
  };
  EXPECT_TRUE(causal("--causal"));
  EXPECT_TRUE(causal("--causal --task lesson"));
  EXPECT_FALSE(causal("--causal off"));
  EXPECT_FALSE(causal(""));
}

// `--nudge` alone means on, wherever it stands on the line; `--nudge off` and none mean off.
TEST(AttentionSweep, NudgeAloneIsOn) {
  const auto nudge = [](const std::string& args) {
    const auto r =
        test::run_demo("--table attention-sweep --format json -q --steps 2 --seeds 0:2 " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["tables"][0]["run"]["nudge"].get<bool>();
  };
  EXPECT_TRUE(nudge("--nudge"));
  EXPECT_TRUE(nudge("--nudge --task lesson"));
  EXPECT_FALSE(nudge("--nudge off"));
  EXPECT_FALSE(nudge(""));
}

// A second pass's per-seed records (experiments/per_seed_maps.hpp) read back as a chunk's state
// (SeedMeasures::from_state, as every state is folded): one seed of one input's 2 x 2 head
// with --nudge and a known map, each value of the record edited beyond what it can be, each
// refused naming the value.
TEST(SeedMeasuresState, RecordsOutsideTheirDomainsAreRefused) {
  PerSeedRecord record;
  record.results = SeedResults{1, 2, 2, 1, 1};  // |R| 1, n 2, d_out 2, one head, one input
  record.nudge = true;
  record.known = true;
  ASSERT_EQ(record.size(), 9 + 12 + 2 + 2 + 11);
  // loss, start loss, test loss, converged, generalized, diverged, nudge JSD, JSD to the known
  // map, found; W_Q, W_K, W_V; the map row; the outputs; the interventions' changes of the loss
  // and output distances (uniform, permuted, patched, known), adversarial JSD, not-unique
  // fraction, tau_b.
  const std::vector<double> good = {1e-5, 0.5, 2e-5, 1,    1,   0,   1e-9, 0.01, 0,
                                    0.1,  -2,  3,    0.25, 1,   2,   3,    4,    -1,
                                    -2,   -3,  -4,   0.3,  0.7, 0.5, -0.5, 0.5,  0.2,
                                    1.0,  0.3, -0.1, 0.4,  2.0, 0.6, 0.05, 0,    0.8};
  const double below = 1e-3;
  const auto state = [&](const std::vector<double>& r) {
    SeedMeasures m;
    m.loss = {1e-5};
    m.jsd = {0.02};
    m.jsd_converged = {0.01};
    m.records = r;
    return m.to_state();
  };
  const SeedMeasures read = SeedMeasures::from_state(state(good), 1, &record, below);
  EXPECT_EQ(read.records, good);
  const auto refused = [&](std::vector<std::pair<int, double>> edits, const std::string& says,
                           const PerSeedRecord& as) {
    std::vector<double> r = good;
    for (const auto& [k, v] : edits) r[k] = v;
    try {
      SeedMeasures::from_state(state(r), 1, &as, below);
      ADD_FAILURE() << "accepted: " << says;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  };
  refused({{1, -1}}, "seed 0 of the chunk: a loss of -1, outside [0, inf)", record);
  refused({{2, -1}}, "a loss of -1, outside [0, inf)", record);
  refused({{3, 0.5}}, "a flag 'converged' of 0.5, not 0 or 1", record);
  refused({{8, 2}}, "a flag 'found' of 2, not 0 or 1", record);
  refused({{3, 0}}, "a seed marked not converged with a loss of 1e-05", record);
  refused({{2, 0.5}}, "a seed marked generalized with a test loss of 0.5", record);
  refused({{1, 1e-7}},
          "a seed not marked diverged with a final loss of 1e-05, a start loss of 1e-07", record);
  refused({{6, 5}}, "a JSD of 5, outside [0, 0.693147]", record);
  refused({{7, 0.9}}, "a JSD of 0.9, outside [0, 0.693147]", record);
  refused({{7, NAN}, {8, 1}}, "a seed that found the known map without a JSD to it", record);
  refused({{7, NAN}}, "a seed not marked diverged without a JSD to the known map", record);
  refused({{9, INFINITY}}, "a final weight of inf", record);
  refused({{22, 0.9}}, "weights sum to 1.2, not 1", record);
  refused({{21, 5}, {22, -4}}, "a weight of the map of 5, outside [0, 1]", record);
  refused({{0, 2e-5}}, "records whose loss is not the seed's loss", record);
  refused({{26, -1}}, "an output distance of -1", record);
  refused({{33, 0.9}}, "a JSD of 0.9, outside [0, 0.693147]", record);
  refused({{34, 2}}, "a fraction of rows of 2, outside [0, 1]", record);
  refused({{35, 1.5}}, "a Kendall's tau of 1.5, outside [-1, 1]", record);
  PerSeedRecord plain = record;
  plain.nudge = false;
  plain.known = false;
  refused({{7, NAN}}, "a nudge JSD without --nudge", plain);
  refused({{6, NAN}}, "a known map's measures without one", plain);
  refused({{6, NAN}, {7, NAN}}, "a measure dl_known without a known map", plain);
}

}  // namespace
}  // namespace attn
