// test_compare.cpp: host/compare.hpp (compare_results) and `demo compare A B --tolerance T`.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "helpers.hpp"
#include "host/compare.hpp"

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
// absolute floor (numpy's allclose, made symmetric) lets it pass without loosening the others.
TEST(CompareResults, AbsoluteFloorCountsCellsOutside) {
  json b = doc();
  b["tables"][1]["rows"][0]["x"] = 10.0 * (1 + 1e-6);
  json a = doc(), c = b;
  a["tables"][0]["rows"][0]["v"] = 1e-24;
  c["tables"][0]["rows"][0]["v"] = 3e-24;
  b["tables"][0]["rows"][0]["v"] = 1e-24;
  const auto rel_only = compare_results(a, c, 1e-5, 0);
  EXPECT_EQ(find(rel_only, "alpha")->outside, 1);
  EXPECT_DOUBLE_EQ(find(rel_only, "alpha")->max_abs, 2e-24);
  EXPECT_EQ(find(rel_only, "beta")->outside, 0);  // 1e-6 relative, within 1e-5
  const auto floored = compare_results(a, c, 1e-5, 1e-12);
  EXPECT_EQ(find(floored, "alpha")->outside, 0);
  // The floor does not excuse a difference above it: 1e-5 absolute on x = 10 at rtol 1e-9.
  EXPECT_EQ(find(compare_results(a, c, 1e-9, 1e-12), "beta")->outside, 1);
  // |a - b| <= atol + rtol max(|a|, |b|): exactly on the line agrees.
  json d = doc(), e = doc();
  d["tables"][1]["rows"][0]["x"] = 1.0;
  e["tables"][1]["rows"][0]["x"] = 1.5;
  EXPECT_EQ(find(compare_results(d, e, 0, 0.5), "beta")->outside, 0);
  EXPECT_EQ(find(compare_results(d, e, 0, 0.25), "beta")->outside, 1);
  EXPECT_EQ(find(compare_results(d, e, 0.25, 0.125), "beta")->outside, 0);  // 0.125 + 0.375
  // Non-finite values: never excused by a floor.
  e["tables"][1]["rows"][0]["x"] = "nan";
  EXPECT_EQ(find(compare_results(d, e, 1, 1e300), "beta")->outside, 1);
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
  for (const char* bad : {"-1", "nan", "x"}) {
    const ProcessResult r = run_demo(args(pa, pb, "1e-9") + " --atol " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out << r.err;
    EXPECT_EQ(r.out, "") << bad;
  }
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

void expect_unreadable(const std::string& a, const std::string& b) {
  SCOPED_TRACE("demo " + args(a, b, "1e-9"));
  const ProcessResult r = run_demo(args(a, b, "1e-9"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(r.err.empty());
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
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

}  // namespace
}  // namespace attn
