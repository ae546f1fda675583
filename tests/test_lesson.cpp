// test_lesson.cpp: every number spec/EXPERIMENTS.md lists, from `demo --table all`'s own
// experiment code. Expected values are the lesson's printed numbers (checked as the strings the
// table shows) and the spec's float64 values or exact maths (checked numerically).
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.hpp"
#include "host/format.hpp"
#include "table_helpers.hpp"

namespace attn {
namespace {

using test::run_table;

// The values of the matrix-table row (case, quantity, row).
std::vector<double> values(const Table& t, const std::string& c, const std::string& q,
                           const std::string& row) {
  for (const auto& r : t.rows)
    if (std::get<std::string>(r[0]) == c && std::get<std::string>(r[1]) == q &&
        std::get<std::string>(r[2]) == row)
      return std::get<std::vector<double>>(r[3]);
  ADD_FAILURE() << "no row " << c << " / " << q << " / " << row;
  return {};
}

// A real as the table shows it, e.g. shown(0.7679, "%.3f") == "0.768".
std::string shown(double v, const char* fmt) { return display_real(v, fmt); }

void expect_row(const std::vector<double>& got, const std::vector<std::string>& lesson,
                const char* fmt = "~%.3f") {
  ASSERT_EQ(got.size(), lesson.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(shown(got[i], fmt), lesson[i]) << i;
}

std::vector<double> softmax(std::vector<double> s) {
  double sum = 0;
  for (double& x : s) sum += (x = std::exp(x));
  for (double& x : s) x /= sum;
  return s;
}

TEST(LessonRnnDecay, FactorsAreWToTheN) {
  const Table t = run_table("rnn-decay");
  const std::vector<std::pair<std::int64_t, std::string>> lesson = {
      {1, "0.5"}, {2, "0.25"}, {3, "0.125"}, {5, "0.0312"}, {10, "0.000977"}, {50, "8.88e-16"}};
  ASSERT_EQ(t.rows.size(), lesson.size());
  for (std::size_t i = 0; i < lesson.size(); ++i) {
    EXPECT_EQ(std::get<std::int64_t>(t.rows[i][0]), lesson[i].first);
    const double f = std::get<double>(t.rows[i][2]);
    EXPECT_EQ(f, std::ldexp(1.0, -int(lesson[i].first)));  // 0.5^n exactly
    EXPECT_EQ(shown(f, "%.3g"), lesson[i].second);
  }
}

TEST(LessonWeightedAverage, EveryNumber) {
  const Table t = run_table("weighted-average");
  expect_row(values(t, "lesson", "scores X X^T", "cat"), {"4", "2", "0"});
  expect_row(values(t, "lesson", "scores X X^T", "dog"), {"2", "2", "2"});
  expect_row(values(t, "lesson", "scores X X^T", "car"), {"0", "2", "4"});
  const auto unscaled = values(t, "lesson", "weights, no scaling", "cat");
  expect_row(unscaled, {"0.867", "0.117", "0.016"});
  const auto exact = softmax({4, 2, 0});
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(unscaled[i], exact[i], 1e-15);
  EXPECT_EQ(shown(unscaled[0], "%.2f"), "0.87");  // the question: cat on itself
  expect_row(values(t, "lesson", "scores / sqrt(2)", "cat"), {"2.828", "1.414", "0"});
  const auto w = values(t, "lesson", "weights", "cat");
  expect_row(w, {"0.768", "0.187", "0.045"});
  const auto w_exact = softmax({4 / std::sqrt(2.0), 2 / std::sqrt(2.0), 0});
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(w[i], w_exact[i], 1e-15);
  for (double x : values(t, "lesson", "weights", "dog")) EXPECT_NEAR(x, 1.0 / 3, 1e-15);
  expect_row(values(t, "lesson", "weights", "car"), {"0.045", "0.187", "0.768"});
  const auto out = values(t, "lesson", "output", "cat");
  expect_row(out, {"1.723", "0.277"});
  EXPECT_NEAR(out[0], 2 * w_exact[0] + w_exact[1], 1e-15);
  EXPECT_EQ(shown(out[0], "%.2f"), "1.72");  // the question: cat's x
  expect_row(values(t, "lesson", "output", "dog"), {"1", "1"});
  expect_row(values(t, "lesson", "output", "car"), {"0.277", "1.723"});
  const auto car = values(t, "car=[5,5]", "weights", "car");
  expect_row(car, {"5.2e-13", "5.2e-13", "1.000"});
  const auto car_exact = softmax({10 / std::sqrt(2.0), 10 / std::sqrt(2.0), 50 / std::sqrt(2.0)});
  EXPECT_NEAR(car[0], car_exact[0], 1e-24);
  for (const char* row : {"cat", "dog", "car"})
    for (double x : values(t, "all equal", "weights", row)) EXPECT_NEAR(x, 1.0 / 3, 1e-15);
}

TEST(LessonQkv, EveryNumber) {
  const Table t = run_table("qkv");
  expect_row(values(t, "swapped keys", "K = X W_K", "cat"), {"0", "2"});
  expect_row(values(t, "swapped keys", "K = X W_K", "dog"), {"1", "1"});
  expect_row(values(t, "swapped keys", "K = X W_K", "car"), {"2", "0"});
  expect_row(values(t, "swapped keys", "scores Q K^T", "cat"), {"0", "2", "4"});
  expect_row(values(t, "swapped keys", "scores Q K^T", "dog"), {"2", "2", "2"});
  expect_row(values(t, "swapped keys", "scores Q K^T", "car"), {"4", "2", "0"});
  expect_row(values(t, "swapped keys", "weights", "cat"), {"0.045", "0.187", "0.768"});
  expect_row(values(t, "one-way keys", "K = X W_K", "cat"), {"0", "0"});
  expect_row(values(t, "one-way keys", "K = X W_K", "dog"), {"1", "0"});
  expect_row(values(t, "one-way keys", "K = X W_K", "car"), {"2", "0"});
  const auto cat = values(t, "one-way keys", "scores Q K^T", "cat");
  const auto car = values(t, "one-way keys", "scores Q K^T", "car");
  expect_row(cat, {"0", "2", "4"});
  expect_row(values(t, "one-way keys", "scores Q K^T", "dog"), {"0", "1", "2"});
  expect_row(car, {"0", "0", "0"});
  EXPECT_EQ(cat[2], 4.0);  // cat -> car
  EXPECT_EQ(car[0], 0.0);  // car -> cat (the question)
  expect_row(values(t, "one-way keys", "weights", "cat"), {"0.045", "0.187", "0.768"});
  expect_row(values(t, "one-way keys", "weights", "dog"), {"0.140", "0.284", "0.576"});
  for (double x : values(t, "one-way keys", "weights", "car")) EXPECT_NEAR(x, 1.0 / 3, 1e-15);
  expect_row(values(t, "V keeps only x", "output", "cat"), {"1.723", "0"});
  expect_row(values(t, "V keeps only x", "output", "dog"), {"1", "0"});
  expect_row(values(t, "V keeps only x", "output", "car"), {"0.277", "0"});
  expect_row(values(t, "5 words, d_k = 4", "shape of Q K^T", "-"), {"5", "5"});
  // Symmetry flags come from the scores themselves.
  int yes = 0, no = 0;
  for (const auto& r : t.rows)
    if (std::get<std::string>(r[1]) == "scores symmetric") {
      const auto& v = std::get<std::string>(r[3]);
      (v == "yes" ? yes : no)++;
      if (std::get<std::string>(r[0]) == "one-way keys") {
        EXPECT_EQ(v, "no");
      }
      if (std::get<std::string>(r[0]) == "swapped keys") {
        EXPECT_EQ(v, "yes");
      }
    }
  EXPECT_EQ(yes + no, 3);
}

TEST(LessonKnob, GradientDescentOnC) {
  const Table t = run_table("knob");
  // step, c, p, loss as the spec prints them.
  const std::vector<std::vector<std::string>> lesson = {{"0", "0", "0.500", "0.50000"},
                                                        {"1", "0.354", "0.562", "0.38338"},
                                                        {"10", "1.960", "0.800", "0.08003"},
                                                        {"100", "4.017", "0.945", "0.00609"},
                                                        {"1000", "5.796", "0.984", "0.00053"}};
  ASSERT_EQ(t.rows.size(), lesson.size());
  for (std::size_t i = 0; i < lesson.size(); ++i) {
    const auto& r = t.rows[i];
    EXPECT_EQ(std::to_string(std::get<std::int64_t>(r[0])), lesson[i][0]);
    const double c = std::get<double>(r[1]), p = std::get<double>(r[2]),
                 loss = std::get<double>(r[3]);
    EXPECT_EQ(shown(c, "%.3f"), lesson[i][1]);
    EXPECT_EQ(shown(p, "%.3f"), lesson[i][2]);
    EXPECT_EQ(shown(loss, "~%.5f"), lesson[i][3]);
    // The closed forms: p = sigma(c / sqrt 2), loss = 2 (1 - p)^2, dloss/dc = -4(1-p)p(1-p)/sqrt2.
    EXPECT_NEAR(p, 1 / (1 + std::exp(-c / std::sqrt(2.0))), 1e-15);
    EXPECT_NEAR(loss, 2 * (1 - p) * (1 - p), 1e-15);
    EXPECT_NEAR(std::get<double>(r[4]), -4 * (1 - p) * p * (1 - p) / std::sqrt(2.0), 1e-15);
  }
  EXPECT_NEAR(std::get<double>(t.rows[1][1]), 1.0 / (2 * std::sqrt(2.0)),
              1e-15);  // 4 * .5 * .25 / sqrt2
  EXPECT_EQ(t.notes.at(1),
            "c grows at every step, each step smaller than the last: yes (softmax reaches 1 only "
            "at infinity)");
  // Step 0 alone: no step was taken, so nothing is said of the steps.
  const Table none = run_table("knob", {{"--knob-steps", "0"}});
  ASSERT_EQ(none.rows.size(), 1u);
  EXPECT_EQ(none.notes.at(1), "no step taken (--knob-steps reports step 0 only)");
}

TEST(LessonDkStd, TheLessonsStreamDigitForDigit) {
  const Table t = run_table("dk-std");
  const double spec[3][3] = {{2, 1.4231747727493471, 1.006336532624687},
                             {64, 8.075434445380946, 1.0094293056726182},
                             {512, 22.54818437424204, 0.9964983796544435}};
  const char* lesson[3][2] = {{"1.42", "1.01"}, {"8.08", "1.01"}, {"22.55", "1.00"}};
  ASSERT_EQ(t.rows.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const auto& r = t.rows[i];
    EXPECT_EQ(std::get<std::int64_t>(r[t.column("d_k")]), std::int64_t(spec[i][0]));
    EXPECT_EQ(std::get<std::int64_t>(r[t.column("samples")]), 10000);
    const double sd = std::get<double>(r[t.column("std")]);
    const double scaled = std::get<double>(r[t.column("std_scaled")]);
    EXPECT_NEAR(sd, spec[i][1], 1e-9 * spec[i][1]);
    EXPECT_NEAR(scaled, spec[i][2], 1e-9 * spec[i][2]);
    EXPECT_EQ(shown(sd, "%.2f"), lesson[i][0]);
    EXPECT_EQ(shown(scaled, "%.2f"), lesson[i][1]);
    EXPECT_EQ(std::get<std::string>(r[t.column("rng")]), "numpy");
  }
}

TEST(LessonTraining, TheTable) {
  const Table t = run_table("training");
  struct Want {
    std::string config;
    std::int64_t seed;  // -1: no seed
    double weight;
    const char* shown_weight;
  };
  const std::vector<Want> want = {{"qk-identity", -1, 0.9971924306100606, "1.00"},
                                  {"all-identity", -1, 0.5222323347878286, "0.52"},
                                  {"all-random", 0, 0.16210782312718855, "0.16"},
                                  {"all-random", 1, 0.7317287020936569, "0.73"}};
  for (const Want& w : want) {
    bool found = false;
    for (const auto& r : t.rows) {
      const bool seedless = std::holds_alternative<std::monostate>(r[1]);
      if (std::get<std::string>(r[0]) != w.config) continue;
      if (w.seed >= 0 && (seedless || std::get<std::uint64_t>(r[1]) != std::uint64_t(w.seed)))
        continue;
      found = true;
      const double a = std::get<double>(r[t.column("weight_on_apple")]);
      EXPECT_NEAR(a, w.weight, 1e-9 * w.weight) << w.config;
      EXPECT_EQ(shown(a, "%.2f"), w.shown_weight);
      EXPECT_EQ(shown(std::get<double>(r[t.column("loss")]), "%.4f"), "0.0000") << w.config;
    }
    EXPECT_TRUE(found) << w.config;
  }
  int qk_random = 0;
  for (const auto& r : t.rows)
    if (std::get<std::string>(r[0]) == "qk-random") {
      ++qk_random;
      EXPECT_NEAR(std::get<double>(r[t.column("weight_on_apple")]), 0.997, 0.001);
    }
  EXPECT_EQ(qk_random, 2);  // seeds 0 and 1
}

TEST(LessonSelfAttention, TheCheckpoint) {
  const Table t = run_table("self-attention");
  expect_row(values(t, "all identity", "output", "cat"), {"1.723", "0.277"});
  expect_row(values(t, "all identity", "output", "dog"), {"1", "1"});
  expect_row(values(t, "all identity", "output", "car"), {"0.277", "1.723"});
  expect_row(values(t, "swapped keys", "output", "cat"), {"0.277", "1.723"});
  expect_row(values(t, "swapped keys", "output", "dog"), {"1", "1"});
  expect_row(values(t, "swapped keys", "output", "car"), {"1.723", "0.277"});
  expect_row(values(t, "V keeps only x", "output", "cat"), {"1.723", "0"});
  expect_row(values(t, "V keeps only x", "output", "dog"), {"1", "0"});
  expect_row(values(t, "V keeps only x", "output", "car"), {"0.277", "0"});
}

// `demo --table all` is the seven lesson tables, in the lesson's order.
TEST(LessonAll, AllIsTheLessonsTables) {
  const auto r = test::run_demo("--format json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& t : j["tables"]) names.push_back(t["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"rnn-decay", "weighted-average", "qkv", "knob",
                                             "dk-std", "training", "self-attention"}));
}

}  // namespace
}  // namespace attn
