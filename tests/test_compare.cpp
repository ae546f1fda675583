// test_compare.cpp: host/compare.hpp (compare_results) and `demo compare A B --tolerance T`.
#include <gtest/gtest.h>

#include <optional>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "helpers.hpp"
#include "host/compare.hpp"
#include "host/format.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::ProcessResult;
using test::run_demo;

using test::TempDir;

json doc() {
  return json::parse(R"({
    "provenance": {"version": "0.1.0"},
    "tables": [
      {"name": "alpha", "columns": ["k", "v", "label", "vec"],
       "rows": [{"k": 1, "v": 2.0, "label": "a", "vec": [1.0, 2.0]},
                {"k": 2, "v": 4.0, "label": "b", "vec": [3.0, 4.0]}]},
      {"name": "beta", "columns": ["x"],
       "rows": [{"x": 10.0}]}
    ]})");
}

const TableDiff* find(const std::vector<TableDiff>& d, const std::string& name) {
  for (const auto& t : d)
    if (t.table == name) return &t;
  return nullptr;
}

TEST(CompareResults, IdenticalDocuments) {
  const auto d = compare_results(doc(), doc());
  ASSERT_EQ(d.size(), 2u);
  for (const auto& t : d) {
    EXPECT_EQ(t.max_rel, 0.0) << t.table;
    EXPECT_EQ(t.mismatch, "") << t.table;
  }
  EXPECT_NE(find(d, "alpha"), nullptr);
  EXPECT_NE(find(d, "beta"), nullptr);
}

TEST(CompareResults, ChangedNumberGivesItsRelativeDifferenceAndPlace) {
  json b = doc();
  b["tables"][0]["rows"][1]["v"] = 4.4;
  b["tables"][0]["rows"][0]["v"] = 2.1;  // a smaller relative change: 0.1 / 2.1
  const auto d = compare_results(doc(), b);
  const TableDiff* a = find(d, "alpha");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->mismatch, "");
  EXPECT_DOUBLE_EQ(a->max_rel, (4.4 - 4.0) / 4.4);  // |a - b| / max(|a|, |b|)
  EXPECT_NE(a->where.find("row 1"), std::string::npos) << a->where;
  EXPECT_NE(a->where.find("v"), std::string::npos) << a->where;
  EXPECT_EQ(a->a, 4.0);
  EXPECT_EQ(a->b, 4.4);
  // The other table is untouched.
  EXPECT_EQ(find(d, "beta")->max_rel, 0.0);
}

TEST(CompareResults, RelativeDifferenceIsSymmetricAndSignAware) {
  json b = doc();
  b["tables"][1]["rows"][0]["x"] = -10.0;
  const auto d1 = compare_results(doc(), b);
  const auto d2 = compare_results(b, doc());
  EXPECT_DOUBLE_EQ(find(d1, "beta")->max_rel, 2.0);  // |10 - -10| / 10
  EXPECT_DOUBLE_EQ(find(d2, "beta")->max_rel, 2.0);
  // An integer and the same real are the same number.
  json c = doc();
  c["tables"][0]["rows"][0]["k"] = 1.0;
  EXPECT_EQ(find(compare_results(doc(), c), "alpha")->max_rel, 0.0);
}

TEST(CompareResults, VectorCellsElementByElement) {
  json b = doc();
  b["tables"][0]["rows"][1]["vec"][1] = 5.0;
  const auto diffs = compare_results(doc(), b);  // keeps the results alive for `a`
  const TableDiff* a = find(diffs, "alpha");
  EXPECT_EQ(a->mismatch, "");
  EXPECT_DOUBLE_EQ(a->max_rel, 1.0 / 5.0);
  EXPECT_NE(a->where.find("row 1"), std::string::npos) << a->where;
  EXPECT_NE(a->where.find("vec"), std::string::npos) << a->where;
  // Different lengths: the shapes differ.
  json c = doc();
  c["tables"][0]["rows"][0]["vec"].push_back(7.0);
  EXPECT_NE(find(compare_results(doc(), c), "alpha")->mismatch, "");
}

TEST(CompareResults, ChangedTextIsAMismatch) {
  json b = doc();
  b["tables"][0]["rows"][0]["label"] = "z";
  const auto d = compare_results(doc(), b);
  EXPECT_NE(find(d, "alpha")->mismatch, "");
  EXPECT_EQ(find(d, "beta")->mismatch, "");
}

TEST(CompareResults, DifferentRowCountsIsAMismatch) {
  json b = doc();
  b["tables"][0]["rows"].erase(1);
  EXPECT_NE(find(compare_results(doc(), b), "alpha")->mismatch, "");
  EXPECT_NE(find(compare_results(b, doc()), "alpha")->mismatch, "");
}

TEST(CompareResults, DifferentColumnsIsAMismatch) {
  json b = doc();
  b["tables"][1]["columns"] = json::parse(R"(["y"])");
  b["tables"][1]["rows"][0] = json::parse(R"({"y": 10.0})");
  EXPECT_NE(find(compare_results(doc(), b), "beta")->mismatch, "");
}

TEST(CompareResults, TableInOnlyOneDocument) {
  json b = doc();
  b["tables"].erase(1);
  for (const auto& d : {compare_results(doc(), b), compare_results(b, doc())}) {
    ASSERT_EQ(d.size(), 2u);
    const TableDiff* beta = find(d, "beta");
    ASSERT_NE(beta, nullptr);
    EXPECT_NE(beta->mismatch, "");
    EXPECT_EQ(find(d, "alpha")->mismatch, "");
  }
}

TEST(CompareResults, NonFiniteValues) {
  const auto with_x = [](const json& x) {
    json d = doc();
    d["tables"][1]["rows"][0]["x"] = x;
    return d;
  };
  // demo writes non-finite reals as "nan", "inf", "-inf".
  const auto rel = [&](const json& x, const json& y) {
    const auto diffs = compare_results(with_x(x), with_x(y));
    const TableDiff* t = find(diffs, "beta");
    EXPECT_EQ(t->mismatch, "") << x << " vs " << y;
    return t->max_rel;
  };
  EXPECT_EQ(rel("nan", "nan"), 0.0);
  EXPECT_EQ(rel("inf", "inf"), 0.0);
  EXPECT_EQ(rel("-inf", "-inf"), 0.0);
  EXPECT_TRUE(std::isinf(rel("nan", 1.0)));
  EXPECT_TRUE(std::isinf(rel(1.0, "nan")));
  EXPECT_TRUE(std::isinf(rel("inf", "-inf")));
  EXPECT_TRUE(std::isinf(rel("inf", 1e308)));
  EXPECT_EQ(rel(0.0, 0.0), 0.0);
  EXPECT_EQ(rel(0.0, 1e-300), 1.0);
  // A nan next to a finite value: the infinite difference is reported, with its place.
  const auto diffs = compare_results(with_x("nan"), with_x(1.0));
  const TableDiff* t = find(diffs, "beta");
  EXPECT_NE(t->where.find("row 0"), std::string::npos) << t->where;
  EXPECT_TRUE(std::isnan(t->a));
  EXPECT_EQ(t->b, 1.0);
}

// The training table's loss is rounding noise near 1e-24: a relative test fails on it, an
// absolute floor (numpy's allclose) lets it pass without loosening the others.
bool outside(const nlohmann::json& a, const nlohmann::json& b, double rtol,
             std::optional<double> atol, const std::string& table) {
  const std::vector<TableDiff> diffs = compare_results(a, b, CompareRule{rtol, atol});
  const TableDiff* t = find(diffs, table);
  return t->worst > 1 || !t->mismatch.empty();
}

TEST(CompareResults, AbsoluteFloorCountsCellsOutside) {
  json b = doc();
  b["tables"][1]["rows"][0]["x"] = 10.0 * (1 + 1e-6);
  json a = doc(), c = b;
  a["tables"][0]["rows"][0]["v"] = 1e-24;
  c["tables"][0]["rows"][0]["v"] = 3e-24;
  EXPECT_TRUE(outside(a, c, 1e-5, 0.0, "alpha"));
  const std::vector<TableDiff> rel_only = compare_results(a, c, CompareRule{1e-5, 0.0});
  EXPECT_DOUBLE_EQ(find(rel_only, "alpha")->max_abs, 2e-24);
  EXPECT_FALSE(outside(a, c, 1e-5, 0.0, "beta"));  // 1e-6 relative, within 1e-5
  EXPECT_FALSE(outside(a, c, 1e-5, 1e-12, "alpha"));
  // The floor does not excuse a difference above it: 1e-5 absolute on x = 10 at rtol 1e-9.
  EXPECT_TRUE(outside(a, c, 1e-9, 1e-12, "beta"));
  // |a - b| <= atol + rtol |b|: exactly on the line agrees.
  json d = doc(), e = doc();
  d["tables"][1]["rows"][0]["x"] = 1.0;
  e["tables"][1]["rows"][0]["x"] = 1.5;
  EXPECT_FALSE(outside(d, e, 0, 0.5, "beta"));
  EXPECT_TRUE(outside(d, e, 0, 0.25, "beta"));
  EXPECT_FALSE(outside(d, e, 0.25, 0.125, "beta"));  // 0.125 + 0.25 * 1.5
  // Non-finite values: never excused by a floor.
  e["tables"][1]["rows"][0]["x"] = "nan";
  EXPECT_TRUE(outside(d, e, 1, 1e300, "beta"));
}

// ---- demo compare ----------------------------------------------------------------------------

std::string args(const std::string& a, const std::string& b, const std::string& tol) {
  return "compare '" + a + "' '" + b + "' --tolerance " + tol;
}

TEST(DemoCompare, ExitCodeFollowsTheTolerance) {
  TempDir dir;
  json b = doc();
  b["tables"][0]["rows"][0]["v"] = 2.0 * (1 + 1e-6);  // relative difference just under 1e-6
  const std::string pa = dir.write("a.json", doc().dump(2));
  const std::string pb = dir.write("b.json", b.dump(2));

  const ProcessResult same = run_demo(args(pa, pa, "0"));
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;

  const ProcessResult within = run_demo(args(pa, pb, "1e-5"));
  EXPECT_EQ(within.exit_code, 0) << within.out << within.err;
  EXPECT_NE(within.out.find("alpha"), std::string::npos) << within.out;
  EXPECT_NE(within.out.find("beta"), std::string::npos) << within.out;

  const ProcessResult above = run_demo(args(pa, pb, "1e-7"));
  EXPECT_EQ(above.exit_code, 1) << above.out << above.err;
  EXPECT_NE(above.out.find("alpha"), std::string::npos) << above.out;
  EXPECT_NE(above.out.find("beta"), std::string::npos) << above.out;
}

TEST(DemoCompare, AtolGivesAnAbsoluteFloor) {
  TempDir dir;
  json a = doc(), b = doc();
  a["tables"][1]["rows"][0]["x"] = 1e-24;
  b["tables"][1]["rows"][0]["x"] = 5e-25;
  const std::string pa = dir.write("a.json", a.dump()), pb = dir.write("b.json", b.dump());
  const ProcessResult rel = run_demo(args(pa, pb, "1e-9"));
  EXPECT_EQ(rel.exit_code, 1) << rel.out << rel.err;
  const ProcessResult floor = run_demo(args(pa, pb, "1e-9") + " --atol 1e-12");
  EXPECT_EQ(floor.exit_code, 0) << floor.out << floor.err;
  EXPECT_NE(floor.out.find("atol 1e-12"), std::string::npos) << floor.out;
  for (const char* bad : {"-1", "nan", "x"})
    test::expect_refused(args(pa, pb, "1e-9") + " --atol " + bad, 2, {"--atol"});
}

TEST(DemoCompare, ShapeDifferencesFailWhateverTheTolerance) {
  TempDir dir;
  json b = doc();
  b["tables"][0]["rows"][0]["label"] = "changed";
  const std::string pa = dir.write("a.json", doc().dump());
  const std::string pb = dir.write("b.json", b.dump());
  const ProcessResult r = run_demo(args(pa, pb, "1e300"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("alpha"), std::string::npos) << r.out;
}

TEST(DemoCompare, RealResultFilesOfTwoRuns) {
  TempDir dir;
  const ProcessResult r1 = run_demo("--table rnn-decay,dk-std --format json -q");
  const ProcessResult r2 = run_demo("--table rnn-decay,dk-std --format json -q");
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  const std::string p1 = dir.write("one.json", r1.out), p2 = dir.write("two.json", r2.out);
  const ProcessResult c = run_demo(args(p1, p2, "0"));
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("rnn-decay"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("dk-std"), std::string::npos) << c.out;
}

// A file compare cannot use: exit 2, one line on stderr, nothing on stdout.
void expect_unreadable(const std::string& a, const std::string& b) {
  test::expect_refused(args(a, b, "1e-9"), 2);
}

TEST(DemoCompare, UnreadableOrInvalidJsonIsExitTwo) {
  TempDir dir;
  const std::string good = dir.write("good.json", doc().dump());
  const std::string garbage = dir.write("garbage.json", "this is not json {");
  const std::string truncated = dir.write("truncated.json", doc().dump().substr(0, 40));
  const std::string empty = dir.write("empty.json", "");
  expect_unreadable(garbage, good);
  expect_unreadable(good, truncated);
  expect_unreadable(empty, good);
  expect_unreadable((dir.path / "missing.json").string(), good);
}

// Well-formed JSON that is not a result document is as unusable as a broken file: a one-line
// error and exit 2, not a crash.
TEST(DemoCompare, JsonThatIsNotAResultFileIsExitTwo) {
  TempDir dir;
  const std::string good = dir.write("good.json", doc().dump());
  expect_unreadable(dir.write("tables-number.json", R"({"tables": 5})"), good);
  expect_unreadable(dir.write("rows-not-objects.json",
                              R"({"tables": [{"name": "beta", "columns": ["x"], "rows": [1]}]})"),
                    good);
}

// ---- allclose with a per-column absolute floor -------------------------------------------------

// A table "t" with one column "y" holding the given values.
json column_doc(const std::vector<json>& ys) {
  json d = json::parse(R"({"tables": [{"name": "t", "columns": ["y"], "rows": []}]})");
  for (const auto& y : ys) d["tables"][0]["rows"].push_back({{"y", y}});
  return d;
}

// numpy.isclose(a, b, rtol, atol) = |a - b| <= atol + rtol * |b| decides, value by value.
// A table "t" of rows (x, y): x a value of the row's own scale beside y.
json pair_doc(const std::vector<std::pair<double, double>>& rows) {
  json d = json::parse(R"({"tables": [{"name": "t", "columns": ["x", "y"], "rows": []}]})");
  for (const auto& [x, y] : rows) d["tables"][0]["rows"].push_back({{"x", x}, {"y", y}});
  return d;
}

TEST(CompareAllclose, ValuesCrossingZero) {
  // A CPU residue -1.39e-17 against 0, in a column whose values are of order 1, in a row whose
  // other value is of order 1: the default floor is rtol x 1 = 1e-9, so they agree (before any
  // floor: relative difference 1, failing at any tolerance).
  const auto near =
      compare_results(pair_doc({{1.0, 1.0}, {1.0, -1.39e-17}}), pair_doc({{1.0, 1.0}, {1.0, 0.0}}));
  ASSERT_EQ(near.size(), 1u);
  EXPECT_EQ(near[0].mismatch, "");
  EXPECT_DOUBLE_EQ(near[0].atol.at("y"), 1e-9);
  EXPECT_LE(near[0].worst, 1.0);
  EXPECT_DOUBLE_EQ(near[0].worst, 1.39e-17 / 1e-9);
  // With --atol 0 it is the relative rule again, and fails.
  CompareRule strict;
  strict.atol = 0.0;
  EXPECT_GT(compare_results(column_doc({1.0, -1.39e-17}), column_doc({1.0, 0.0}), strict)[0].worst,
            1.0);
  // Values of opposite sign at the column's own scale differ.
  const auto cross = compare_results(column_doc({1e-3, 1.0}), column_doc({-1e-3, 1.0}));
  EXPECT_GT(cross[0].worst, 1.0);
  EXPECT_NE(cross[0].where.find("row 0"), std::string::npos);
  EXPECT_EQ(cross[0].a, 1e-3);
  EXPECT_EQ(cross[0].b, -1e-3);
}

// A statistics table (a quantity a row): a row is held to its own scale, not to another row's
// values in the same column (a diverged run's loss of 5e307 beside JSDs near 0.01).
TEST(CompareAllclose, AStatisticsRowIsHeldToItsOwnScale) {
  const auto doc = [](double jsd_p50, double jsd_p05) {
    json d = json::parse(
        R"({"tables": [{"name": "t", "columns": ["quantity", "mean", "p05", "p50"], "rows": []}]})");
    d["tables"][0]["rows"].push_back(
        {{"quantity", "final loss"}, {"mean", 5e307}, {"p05", 0.5}, {"p50", 4e307}});
    d["tables"][0]["rows"].push_back(
        {{"quantity", "JSD"}, {"mean", 0.01}, {"p05", jsd_p05}, {"p50", jsd_p50}});
    return d;
  };
  // The JSD's median a thousand times larger: the column's scale (4e307 x 1e-9) would excuse it;
  // its row's (0.01 x 1e-9) does not.
  const auto changed = compare_results(doc(7e-3, 1e-4), doc(7e-6, 1e-4));
  EXPECT_GT(changed[0].worst, 1.0);
  EXPECT_EQ(changed[0].where, "row 1, column p50");
  // A rounding residue next to the row's 0.01 still agrees with 0: floor 1e-9 x 0.01.
  const auto residue = compare_results(doc(-1.2e-18, 1e-4), doc(0.0, 1e-4));
  EXPECT_LE(residue[0].worst, 1.0);
  EXPECT_DOUBLE_EQ(residue[0].worst, 1.2e-18 / (1e-9 * 0.01));
}

TEST(CompareAllclose, TinyLossesNeedAnAbsoluteFloor) {
  // Losses 1e-27 against 3e-27 (GPU against CPU): the column's own scale is 3e-27, so by
  // default they differ (worst = 2e-27 / (1e-9 * 3e-27 + 1e-9 * 3e-27)).
  const auto d = compare_results(column_doc({1e-27}), column_doc({3e-27}));
  EXPECT_GT(d[0].worst, 1.0);
  CompareRule loose;
  loose.atol = 1e-20;  // --atol 1e-20
  const auto e = compare_results(column_doc({1e-27}), column_doc({3e-27}), loose);
  EXPECT_LE(e[0].worst, 1.0);
  EXPECT_DOUBLE_EQ(e[0].worst, 2e-27 / (1e-20 + 1e-9 * 3e-27));
  EXPECT_DOUBLE_EQ(e[0].atol.at("y"), 1e-20);
  EXPECT_DOUBLE_EQ(e[0].atol_there, 1e-20);
}

TEST(CompareAllclose, RuleIsNumpysIsclose) {
  if (!test::have_numpy()) GTEST_SKIP() << "python3-numpy not installed";
  // Pairs around the boundary, decided here and by numpy.
  const std::vector<std::pair<double, double>> pairs = {
      {1.0, 1.0 + 2e-9}, {1.0, 1.0 + 5e-10}, {0.0, 1e-12}, {-5e-10, 5e-10}, {2.0, 2.0}};
  std::string program = "import numpy as np\n";
  for (const auto& [a, b] : pairs)
    program += "print(int(np.isclose(" + round_trip(a) + ", " + round_trip(b) +
               ", rtol=1e-9, atol=1e-9)))\n";
  const auto lines = test::lines_of(test::run_python(program));
  ASSERT_EQ(lines.size(), pairs.size());
  CompareRule rule;
  rule.atol = 1e-9;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto d =
        compare_results(column_doc({pairs[i].first}), column_doc({pairs[i].second}), rule);
    EXPECT_EQ(d[0].worst <= 1.0, lines[i] == "1") << pairs[i].first << " vs " << pairs[i].second;
  }
}

TEST(DemoCompare, AtolIsSettableAndStated) {
  TempDir dir;
  const std::string a = dir.write("a.json", column_doc({1e-27}).dump());
  const std::string b = dir.write("b.json", column_doc({3e-27}).dump());
  const ProcessResult strict = run_demo("compare '" + a + "' '" + b + "'");
  EXPECT_EQ(strict.exit_code, 1) << strict.out << strict.err;
  EXPECT_NE(strict.out.find("atol per column: y 3e-36"), std::string::npos) << strict.out;
  const ProcessResult loose = run_demo("compare '" + a + "' '" + b + "' --atol 1e-20");
  EXPECT_EQ(loose.exit_code, 0) << loose.out << loose.err;
  EXPECT_NE(loose.out.find("atol per column: y 1e-20"), std::string::npos) << loose.out;
  EXPECT_NE(loose.out.find("atol + rtol*|b|"), std::string::npos) << loose.out;
  for (const char* bad : {"-1", "nan", "x"})
    test::expect_refused("compare '" + a + "' '" + b + "' --atol " + bad, 2, {"--atol"});
}

// ---- a column of rounding noise: its rows' resolution as the floor ---------------------------

// A training-like table: seed (an integer), out (near 1), loss (rounding noise near 1e-24).
json noise_doc(double loss0, double loss1, double out0 = 1.0000000000008569,
               double out1 = 1.0000000000002194) {
  json d = json::parse(R"({"tables": [{"name": "t", "columns": ["seed", "out", "loss"],
                                       "rows": []}]})");
  d["tables"][0]["rows"].push_back({{"seed", 0}, {"out", out0}, {"loss", loss0}});
  d["tables"][0]["rows"].push_back({{"seed", 1}, {"out", out1}, {"loss", loss1}});
  return d;
}

TEST(CompareResolution, NoiseColumnTakesItsRowsResolution) {
  const json a = noise_doc(1.4930568584993397e-24, 6.572938206316364e-26);
  const json b = noise_doc(3 * 1.4930568584993397e-24, 3 * 6.572938206316364e-26);
  // Tripled: 1e-9 x the column's largest |b| (4.5e-33) would fail it.
  CompareRule column_floor;
  column_floor.atol = 1e-9 * 3 * 1.4930568584993397e-24;
  EXPECT_GT(compare_results(a, b, column_floor)[0].worst, 1.0);
  // By default the loss column lies below its rows' resolution, 2^-52 x |out|: it agrees.
  const auto d = compare_results(a, b);
  EXPECT_LE(d[0].worst, 1.0);
  EXPECT_EQ(d[0].at_resolution, std::set<std::string>{"loss"});
  EXPECT_EQ(d[0].atol.at("loss"), 0x1p-52 * 1.0000000000008569);  // the larger row's
  EXPECT_EQ(d[0].atol.at("out"), 1e-9 * 1.0000000000008569);      // ordinary columns as before
  // The worst cell is row 0's: its own row's floor.
  EXPECT_EQ(d[0].where, "row 0, column loss");
  EXPECT_EQ(d[0].atol_there, 0x1p-52 * 1.0000000000008569);
  EXPECT_DOUBLE_EQ(d[0].worst, 2 * 1.4930568584993397e-24 /
                                   (0x1p-52 * 1.0000000000008569 + 1e-9 * 4.479170575498019e-24));
  // A real difference, above the floor, fails from either side.
  EXPECT_GT(compare_results(noise_doc(1e-12, 6.6e-26), b)[0].worst, 1.0);
  const auto above = compare_results(a, noise_doc(1e-12, 6.6e-26));
  EXPECT_GT(above[0].worst, 1.0);
  EXPECT_TRUE(above[0].at_resolution.empty());  // 1e-12 is resolved next to 1
  EXPECT_GT(compare_results(a, noise_doc(4.5e-24, 1e-15))[0].worst, 1.0);
  // An explicit --atol replaces the floor, down to 0.
  CompareRule zero;
  zero.atol = 0.0;
  const auto strict = compare_results(a, b, zero);
  EXPECT_GT(strict[0].worst, 1.0);
  EXPECT_TRUE(strict[0].at_resolution.empty());
  EXPECT_EQ(strict[0].atol.at("loss"), 0.0);
}

// The resolution is a row's: a huge value in one row does not excuse another row's difference,
// and integers (counts, sizes) do not set it.
TEST(CompareResolution, RowByRowAndRealsOnly) {
  // Row 1's out is 1e300: its loss may move by up to 2^-52 x 1e300, row 0's by 2^-52 only.
  const json b = noise_doc(3e-20, 2e200, 1.0, 1e300);
  const auto noise = compare_results(noise_doc(1e-20, 1e200, 1.0, 1e300), b);
  EXPECT_LE(noise[0].worst, 1.0);
  EXPECT_EQ(noise[0].at_resolution, std::set<std::string>{"loss"});
  EXPECT_EQ(noise[0].atol.at("loss"), 0x1p-52 * 1e300);
  const auto moved = compare_results(noise_doc(0.5, 1e200, 1.0, 1e300), b);
  EXPECT_GT(moved[0].worst, 1.0);
  EXPECT_EQ(moved[0].where, "row 0, column loss");
  EXPECT_EQ(moved[0].atol_there, 0x1p-52);
  // An integer column of 4096 beside a lone real column: no resolution (the real column is the
  // row's largest real: its values are resolved).
  const auto ints = [](double y) {
    json d = json::parse(R"({"tables": [{"name": "t", "columns": ["d_k", "y"], "rows": []}]})");
    d["tables"][0]["rows"].push_back({{"d_k", 4096}, {"y", y}});
    return d;
  };
  const auto r = compare_results(ints(1e-27), ints(3e-27));
  EXPECT_GT(r[0].worst, 1.0);
  EXPECT_TRUE(r[0].at_resolution.empty());
}

// The lesson's training table with every loss tripled: `demo compare` agrees by default and says
// which floor; a loss moved to 1e-12 still differs; --atol 0 asks for the relative rule.
TEST(DemoCompare, TrainingLossNoiseAgreesAtTheResolution) {
  TempDir dir;
  const ProcessResult run = run_demo("--table training --configs all-random --format json -q");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  json tripled = json::parse(run.out), moved = json::parse(run.out);
  for (auto& row : tripled["tables"][0]["rows"]) {
    ASSERT_LT(row["loss"].get<double>(), 1e-20) << row;  // rounding noise next to out_x ~ 1
    row["loss"] = 3 * row["loss"].get<double>();
  }
  moved["tables"][0]["rows"][1]["loss"] = 1e-12;
  const std::string pa = dir.write("a.json", run.out), pb = dir.write("b.json", tripled.dump());
  const ProcessResult ok = run_demo("compare '" + pa + "' '" + pb + "'");
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("loss 2.22045e-16 (resolution)"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("resolution: a column whose every |b|"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("out_x 1e-09,"), std::string::npos) << ok.out;
  const ProcessResult real =
      run_demo("compare '" + pa + "' '" + dir.write("c.json", moved.dump()) + "'");
  EXPECT_EQ(real.exit_code, 1) << real.out << real.err;
  const ProcessResult strict = run_demo("compare '" + pa + "' '" + pb + "' --atol 0");
  EXPECT_EQ(strict.exit_code, 1) << strict.out << strict.err;
  EXPECT_EQ(strict.out.find("(resolution)"), std::string::npos) << strict.out;
}

// ---- files demo compare must refuse without crashing or hanging -------------------------------

TEST(CompareResults, RowLackingAListedColumnDiffers) {
  json b = doc();
  b["tables"][0]["rows"][1].erase("v");
  for (const auto& d : {compare_results(doc(), b), compare_results(b, doc())}) {
    const TableDiff* t = find(d, "alpha");
    ASSERT_NE(t, nullptr);
    EXPECT_NE(t->mismatch.find("lacks column v"), std::string::npos) << t->mismatch;
  }
  // Both lacking it: still not "agree".
  EXPECT_NE(find(compare_results(b, b), "alpha")->mismatch, "");
}

TEST(CompareResults, TwoTablesOfOneNameAreRefused) {
  json b = doc();
  b["tables"].push_back(b["tables"][0]);
  EXPECT_THROW(compare_results(doc(), b), std::invalid_argument);
  EXPECT_THROW(compare_results(b, doc()), std::invalid_argument);
}

TEST(DemoCompare, MissingColumnAndDuplicateTablesThroughTheBinary) {
  TempDir dir;
  json lacking = doc();
  lacking["tables"][0]["rows"][1].erase("v");
  json twice = doc();
  twice["tables"].push_back(twice["tables"][1]);
  const std::string good = dir.write("good.json", doc().dump());
  const ProcessResult r = run_demo(args(good, dir.write("lacking.json", lacking.dump()), "1e300"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("DIFFERS"), std::string::npos) << r.out;
  expect_unreadable(good, dir.write("twice.json", twice.dump()));
}

TEST(DemoCompare, DeepNestingIsRefusedNotACrash) {
  TempDir dir;
  const std::string good = dir.write("good.json", doc().dump());
  const std::string deep =
      dir.write("deep.json", std::string(100000, '[') + std::string(100000, ']'));
  expect_unreadable(deep, good);
  const std::string deep_objects =
      dir.write("deep-objects.json",
                "{\"tables\": " + std::string(50000, '[') + std::string(50000, ']') + "}");
  expect_unreadable(good, deep_objects);
  // Brackets inside strings do not count.
  json text = doc();
  text["tables"][0]["rows"][0]["label"] = std::string(1000, '[');
  const std::string t = dir.write("text.json", text.dump());
  const ProcessResult r = run_demo(args(t, t, "0"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(DemoCompare, FifoAndDirectoryAreRefusedWithoutWaiting) {
  TempDir dir;
  const std::string good = dir.write("good.json", doc().dump());
  const std::string fifo = dir.file("fifo.json");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // `timeout` turns a hang into exit 124.
  test::expect_refused("compare '" + fifo + "' '" + good + "'", 2, {"not a regular file"},
                       test::Refusal().under("timeout 20"));
  test::expect_refused("compare '" + good + "' /dev/null", 2);
  // A folder (the --out of a run) and a missing file, said as such.
  test::expect_refused("compare '" + dir.path.string() + "' '" + good + "'", 2,
                       {"FIRST: " + dir.path.string() + " is a folder, not a result file"});
  test::expect_refused("compare '" + good + "' '" + dir.file("none.json") + "'", 2,
                       {"SECOND: no such file " + dir.file("none.json")});
}

// Table names, column names and cells come from the files: a message or report line quotes a
// few dozen characters of each, never the whole.
TEST(DemoCompare, LongNamesAndCellsAreCutInMessages) {
  TempDir dir;
  const std::string good = dir.write("good.json", doc().dump());
  const std::string huge(100000, 'c');
  json twice = doc();
  twice["tables"][1]["columns"] = {huge, huge};
  test::expect_refused(args(dir.write("twice.json", twice.dump()), good, "0"), 2,
                       {"demo compare: error: ", "two columns named cccc", "ccc...\n"},
                       test::Refusal().shorter_than(300 + dir.path.string().size() * 2));
  json cell = doc(), named = doc();
  cell["tables"][0]["rows"][0]["label"] = huge;
  named["tables"][1]["name"] = huge;
  for (const json& other : {cell, named}) {
    const ProcessResult c = run_demo(args(dir.write("other.json", other.dump()), good, "0"));
    EXPECT_EQ(c.exit_code, 1) << c.err;
    EXPECT_NE(c.out.find("cccc..."), std::string::npos) << c.out.substr(0, 300);
    for (const std::string& line : test::lines_of(c.out))
      EXPECT_LT(line.size(), 300u) << line.substr(0, 300);
  }
}

TEST(DemoCompare, OutOfMemoryIsOneLineAndExitTwo) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves more address space than the limit allows";
#else
  TempDir dir;
  // 30 MB of numbers: about 1 GB as parsed JSON values, beyond a 400 MB address-space limit.
  std::string big = "{\"tables\": [{\"name\": \"t\", \"columns\": [\"y\"], \"rows\": [{\"y\": [";
  big.reserve(31u << 20);
  while (big.size() < (30u << 20)) big += "1,2,3,4,5,6,7,8,";
  big += "9]}]}]}";
  const std::string path = dir.write("big.json", big);
  big.clear();
  big.shrink_to_fit();
  test::expect_refused("compare '" + path + "' '" + path + "'", 2, {"out of memory"},
                       test::Refusal().under("ulimit -v 400000;"));
#endif
}

TEST(DemoCompare, FullStdoutIsAnError) {
  TempDir dir;
  const std::string good = dir.write("good.json", doc().dump());
  for (const char* redirect : {" > /dev/full", " >&-"})
    test::expect_refused(args(good, good, "0") + redirect, 2, {"stdout"});
}

// demo compare stops as every command does: SIGINT or SIGTERM while it reads, parses or
// compares ends it with 130 or 143, its "interrupted" line and nothing on stdout, not a kill by
// the signal. The stop audit (host/progress.hpp) checks the
// mechanism: each phase's stop checks within its budget, and a stop asked for is honoured.
TEST(CompareStops, ReadingParsingAndComparingStopAndAreAudited) {
  TempDir d;
  std::string rows;
  for (int r = 0; r < 300000; ++r)
    rows += std::string(r ? "," : "") + "{\"a\":" + std::to_string(r) + ",\"b\":0.5}";
  const std::string doc =
      "{\"tables\":[{\"name\":\"t\",\"columns\":[\"a\",\"b\"],\"rows\":[" + rows + "]}]}";
  const std::string a = d.write("a.json", doc), b = d.write("b.json", doc);
  const auto all = run_demo("compare " + a + " " + b, "ATTNLAB_STOP_AUDIT=1000000000");
  EXPECT_EQ(all.exit_code, 0) << all.err;
  const std::pair<std::string, double> phases[] = {{"reading " + a, 64 << 20},
                                                   {"scanning JSON", 1 << 24},
                                                   {"parsing " + a, 1 << 20},
                                                   {"comparing t", 1 << 20}};
  for (const auto& [label, budget] : phases) {
    const double most = test::stop_audit(all.err, label);
    EXPECT_GE(most, 0) << "no stop audit of " << label << " in:\n" << all.err;
    EXPECT_LE(most, budget) << label;
  }
  const auto stopped = run_demo("compare " + a + " " + b, "ATTNLAB_STOP_AUDIT=3");
  EXPECT_EQ(stopped.exit_code, 130) << stopped.err;
  EXPECT_NE(stopped.err.find("demo compare: interrupted"), std::string::npos) << stopped.err;
  EXPECT_TRUE(stopped.out.empty()) << stopped.out;
}

}  // namespace
}  // namespace attn
