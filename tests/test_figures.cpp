// test_figures.cpp (test_tables): the gnuplot scripts of the tables' figures, read as text
// (what gnuplot is told to draw), and `demo replot`, which draws a stored result's figures again.
// - The grid: a categorical configuration has its own x position and its own label; series at
//   one x are set apart, dashed drawn after solid; intervals from the grid points; a fraction
//   that is not defined (NaN) is marked, never drawn as 0; a JSD that spans decades on a log axis.
// - The loss-JSD scatter: a diverged loss left out and counted in the title, the convergence
//   threshold drawn.
// - The map: ticks at the cells' centres, each cell's value up to 16 words; a heatmap of one
//   row (attention-sweep's map, demo attention's weights) has its cells drawn.
// - The other tables' figures, drawn from tables run here: each title names the configuration
//   and the seeds or samples each value is over (training-sweep, softmax-saturation, dk-std),
//   or the words and matrices of each panel (weighted-average, qkv); the references drawn.
// - replot: the figures of a result file, byte for byte the same script as the run's; each bad
//   input refused with one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "experiments/map_measures.hpp"
#include "experiments/registry.hpp"
#include "helpers.hpp"
#include "host/array_io.hpp"
#include "host/plots.hpp"
#include "table_helpers.hpp"

namespace attn {
namespace {

using test::TempDir;

// attention-sweep's figure `stem`'s script for t.
std::string script(const std::string& stem, const Table& t) {
  for (const Figure& f : find_experiment("attention-sweep")->figures)
    if (f.stem == stem) return f.script(t);
  ADD_FAILURE() << "no figure " << stem;
  return "";
}

// The lines of datablock `name` ("$F0_0") in a script: each as its numbers (NaN for "NaN").
std::vector<std::vector<double>> block(const std::string& s, const std::string& name) {
  std::vector<std::vector<double>> rows;
  const std::size_t at = s.find(name + " << EOD\n");
  if (at == std::string::npos) return rows;
  std::istringstream in(s.substr(at));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && line != "EOD") {
    std::istringstream words(line);
    std::vector<double> row;
    std::string w;
    while (words >> w) row.push_back(w == "NaN" ? NAN : std::stod(w));
    rows.push_back(row);
  }
  return rows;
}

// A grid point as attention-sweep's table writes it.
nlohmann::json point(const std::string& name, const std::string& d_k, double converged,
                     double found, double jsd_converged, double jsd_finite) {
  const auto interval = [](double v) {
    return std::isfinite(v) ? nlohmann::json{v * 0.9, std::min(1.0, v * 1.1)}
                            : nlohmann::json{nullptr, nullptr};
  };
  return {{"name", name},
          {"d-k", d_k},
          {"converged", converged},
          {"converged_ci95", interval(converged)},
          {"found", std::isfinite(found) ? nlohmann::json(found) : nlohmann::json(nullptr)},
          {"found_ci95", interval(found)},
          {"pair_jsd_converged_median",
           std::isfinite(jsd_converged) ? nlohmann::json(jsd_converged) : nlohmann::json(nullptr)},
          {"pair_jsd_converged_median_ci95", interval(jsd_converged)},
          {"pair_jsd_finite_median", jsd_finite},
          {"pair_jsd_finite_median_ci95", interval(jsd_finite)}};
}

Table grid_table(const nlohmann::json& points) {
  Table t;
  t.name = "attention-sweep";
  t.extra["grid"] = points;
  t.run = {{"task", "previous"}, {"words", 8},    {"d_model", 8},
           {"d_k", 8},           {"steps", 1000}, {"converged_below", 1e-2}};
  return t;
}

TEST(AttentionSweepFigures, CategoricalConfigurationsHaveTheirOwnPositionsAndLabels) {
  // The lesson's headline: qk finds the known map with no seed below the loss threshold.
  const Table t = grid_table({point("train=qk", "8", 0.0, 1.0, NAN, 5e-4),
                              point("train=qkv", "8", 0.99, 0.0025, 0.17, 0.17)});
  const std::string s = script("attention-sweep-grid", t);
  ASSERT_FALSE(s.empty());
  // One label per configuration, at its own position.
  EXPECT_NE(s.find("set xtics (\"qk\" 0, \"qkv\" 1)"), std::string::npos) << s;
  EXPECT_NE(s.find("set xlabel \"train\""), std::string::npos) << s;
  // converged ($F0_0) and found ($F1_0): one point per configuration, each near its position,
  // the two series at one configuration apart.
  const auto converged = block(s, "$F0_0"), found = block(s, "$F1_0");
  ASSERT_EQ(converged.size(), 2u);
  ASSERT_EQ(found.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(converged[i][0], i, 0.3);
    EXPECT_NEAR(found[i][0], i, 0.3);
    EXPECT_NE(converged[i][0], found[i][0]);
  }
  EXPECT_EQ(found[0][1], 1.0);  // qk found the map: drawn at 1
  EXPECT_EQ(converged[0][1], 0.0);
  // y, low, high: the intervals of the grid points.
  EXPECT_DOUBLE_EQ(converged[1][2], 0.99 * 0.9);
  EXPECT_DOUBLE_EQ(converged[1][3], std::min(1.0, 0.99 * 1.1));
  EXPECT_NE(s.find("using 1:2:3:4 with yerrorbars"), std::string::npos);
  // The JSD over converged seeds of qk is not defined: not drawn, marked at its place.
  const auto jsd = block(s, "$J0_0");
  ASSERT_EQ(jsd.size(), 2u);
  EXPECT_TRUE(std::isnan(jsd[0][1]));
  EXPECT_NE(s.find("set label 'n/a' at " + round_trip(jsd[0][0])), std::string::npos);
  // The title names the configuration and the threshold.
  EXPECT_NE(s.find("task previous"), std::string::npos);
  EXPECT_NE(s.find("1000 steps"), std::string::npos);
  EXPECT_NE(s.find("converged: loss < 0.01"), std::string::npos);
}

TEST(AttentionSweepFigures, HeldOutInputsAddGeneralizedTheStartNullAndTheKnownMap) {
  // A grid over inputs with held-out inputs and a known map: the table's rows carry generalized,
  // the pairs' JSD at the start and the JSD to the known map; the figure draws each from them.
  const Table points = grid_table(
      {point("inputs=1", "8", 1.0, 0.0, 0.3, 0.3), point("inputs=64", "8", 0.9, 1.0, 1e-6, 2e-6)});
  Table t = points;
  for (const char* c :
       {"configuration", "quantity", "over", "seeds", "mean", "p50", "ci95_low", "ci95_high"})
    t.columns.push_back({c});
  const auto row = [&t](const char* config, const char* quantity, const char* over, double mean,
                        double p50, double lo, double hi) {
    t.add_row({std::string(config), std::string(quantity), std::string(over), std::int64_t(100),
               mean, p50, lo, hi});
  };
  row("inputs=1", "generalized (fraction)", "all", 0.25, NAN, 0.2, 0.3);
  row("inputs=64", "generalized (fraction)", "all", 0.875, NAN, 0.8, 0.9);
  row("inputs=1", "JSD between pairs at the start", "finite", 0.1, 0.125, 0.11, 0.14);
  row("inputs=64", "JSD between pairs at the start", "finite", 0.1, 0.0625, 0.06, 0.07);
  row("inputs=1", "JSD between pairs at the start", "converged", 0.1, 0.5, 0.4, 0.6);
  row("inputs=1", "JSD to the known map", "finite", 0.3, 0.25, 0.2, 0.3);
  row("inputs=64", "JSD to the known map", "finite", 1e-5, 2e-5, 1e-5, 3e-5);
  const std::string s = script("attention-sweep-grid", t);
  // Fractions: converged, generalized, found; generalized is the rows' mean with their interval.
  const auto generalized = block(s, "$F1_0");
  ASSERT_EQ(generalized.size(), 2u) << s;
  EXPECT_EQ(generalized[0][1], 0.25);
  EXPECT_EQ(generalized[1][1], 0.875);
  EXPECT_EQ(generalized[1][2], 0.8);
  EXPECT_EQ(generalized[1][3], 0.9);
  EXPECT_EQ(block(s, "$F2_0").size(), 2u);  // found, after generalized
  // JSD: pairs (converged, finite), the pairs at the start (finite seeds' medians) and the JSD
  // to the known map (finite), on a log axis (the values span decades).
  const auto start = block(s, "$J2_0"), known = block(s, "$J3_0");
  ASSERT_EQ(start.size(), 2u) << s;
  ASSERT_EQ(known.size(), 2u) << s;
  EXPECT_EQ(start[0][1], 0.125);
  EXPECT_EQ(start[1][1], 0.0625);
  EXPECT_EQ(known[1][1], 2e-5);
  EXPECT_EQ(known[1][2], 1e-5);
  EXPECT_NE(s.find("pairs at the start, all finite seeds"), std::string::npos);
  EXPECT_NE(s.find("set logscale y"), std::string::npos);
  // Without the rows (an older result's grid), those series are left out, not drawn as n/a.
  const std::string old = script("attention-sweep-grid", points);
  EXPECT_EQ(old.find("$J2_0"), std::string::npos);
  EXPECT_EQ(old.find("generalized"), std::string::npos);
}

// A binned median in the first bin of the JSD's scale (past the quantile budget) is known only
// to lie between 0 and the bin's width: on the log axis it is that upper bound (a marker at the
// width, its bar to the bottom edge, the key saying so), not the bin's centre as a value; an
// exact median that small, and a binned one above the first bin, are drawn as they are.
TEST(AttentionSweepFigures, ABinnedMedianBelowTheResolutionIsDrawnAsAnUpperBound) {
  const double width = 2 * QuantileSketch::error_bound(kJsdScale);  // ln 2 / 2^16
  const double centre = width / 2;
  Table t = grid_table({point("inputs=1", "8", 1.0, 0.0, 0.3, 0.3),
                        point("inputs=16", "8", 0.9, 1.0, 1e-8, 2e-8),
                        point("inputs=64", "8", 0.9, 1.0, 1e-8, 2e-8)});
  for (const char* c : {"configuration", "quantity", "over", "seeds", "mean", "p50", "ci95_low",
                        "ci95_high", "quantiles"})
    t.columns.push_back({c});
  const auto row = [&t](const char* config, const char* quantity, double p50, const char* how) {
    t.add_row({std::string(config), std::string(quantity), std::string("finite"),
               std::int64_t(10000), p50, p50, p50, p50, std::string(how)});
  };
  row("inputs=1", "JSD to the known map", 0.25, "binned");
  row("inputs=16", "JSD to the known map", centre, "binned");  // the first bin: a bound
  row("inputs=64", "JSD to the known map", 1e-8, "exact");     // exact: a value
  row("inputs=16", "JSD between pairs of seeds", 2e-8, "exact");
  const std::string s = script("attention-sweep-grid", t);
  const auto known = block(s, "$J2_0"), bound = block(s, "$J2_0_bound");
  ASSERT_EQ(known.size(), 3u) << s;
  EXPECT_EQ(known[0][1], 0.25);
  EXPECT_TRUE(std::isnan(known[1][1])) << s;  // not drawn as a value
  EXPECT_EQ(known[2][1], 1e-8);
  ASSERT_EQ(bound.size(), 1u) << s;
  EXPECT_EQ(bound[0][0], known[1][0]);
  EXPECT_EQ(bound[0][1], width);
  EXPECT_EQ(bound[0][3], width);
  const std::size_t r = s.find("set yrange [", s.find("set logscale y"));
  ASSERT_NE(r, std::string::npos) << s;
  EXPECT_EQ(bound[0][2], std::stod(s.substr(r + 12))) << s;  // the bar to the bottom edge
  EXPECT_NE(s.find("pt 11 notitle"), std::string::npos) << s;
  EXPECT_NE(s.find("keyentry with points pt 11"), std::string::npos) << s;
  EXPECT_NE(s.find("at most (binned, below 1.1e-05 nats)"), std::string::npos) << s;
  EXPECT_EQ(block(s, "$J1_0_bound").size(), 0u) << "the exact pairs: no bound";
  // Binned, but above the first bin: drawn as it is.
  t.rows[1][5] = t.rows[1][6] = t.rows[1][7] = 3 * width;
  const std::string above = script("attention-sweep-grid", t);
  EXPECT_EQ(block(above, "$J2_0")[1][1], 3 * width) << above;
  EXPECT_EQ(above.find("keyentry"), std::string::npos) << above;
}

TEST(AttentionSweepFigures, InterventionsDrawMediansWithPercentilesAndTheThresholds) {
  // Two configurations' intervention rows over finite seeds (the converged rows must not be
  // drawn); no known map (random task): its series is left out, not drawn as n/a.
  Table t;
  t.name = "attention-sweep";
  for (const char* c : {"configuration", "quantity", "over", "seeds", "p05", "p50", "p95"})
    t.columns.push_back({c});
  t.run = {{"task", "teacher"}, {"steps", 1000}, {"epsilon", 0.01}, {"seeds", "0:100"}};
  const auto row = [&t](const char* config, const char* quantity, const char* over, double p05,
                        double p50, double p95) {
    t.add_row({std::string(config), std::string(quantity), std::string(over), std::int64_t(100),
               p05, p50, p95});
  };
  for (const char* c : {"inputs=1", "inputs=64"}) {
    const double k = std::string(c) == "inputs=1" ? 1 : 1e-3;
    row(c, "converged (fraction)", "all", NAN, NAN, NAN);
    row(c, "output distance between pairs", "converged", 9, 9, 9);
    row(c, "output distance between pairs", "finite", 0.5 * k, k, 2 * k);
    row(c, "output distance (uniform map)", "finite", 0.25, 0.5, 0.75);
    row(c, "output distance (permuted map)", "finite", 0.5, 1, 1.5);
    row(c, "output distance (patched map)", "finite", 0.1 * k, 0.2 * k, 0.3 * k);
    row(c, "output distance (known map)", "finite", NAN, NAN, NAN);
    row(c, "adversarial JSD within epsilon", "finite", 1e-3, 2e-3, 4e-2);
    row(c, "Kendall's tau_b (weights vs importance)", "finite", -0.5, 0.25, 0.75);
  }
  const std::string s = script("attention-sweep-interventions", t);
  ASSERT_FALSE(s.empty());
  EXPECT_NE(s.find("set xtics (\"1\" 0, \"64\" 1)"), std::string::npos) << s;
  EXPECT_NE(s.find("set xlabel \"inputs\""), std::string::npos) << s;
  // Output distances: pairs, uniform, permuted, patched ($I0..$I3); the known map has no value.
  const auto pairs = block(s, "$I0"), uniform = block(s, "$I1"), patched = block(s, "$I3");
  ASSERT_EQ(pairs.size(), 2u) << s;
  EXPECT_EQ(pairs[0][1], 1.0);  // the finite seeds' median, not the converged row's 9
  EXPECT_EQ(pairs[1][1], 1e-3);
  EXPECT_EQ(pairs[1][2], 0.5e-3);
  EXPECT_EQ(pairs[1][3], 2e-3);
  EXPECT_EQ(uniform[0][1], 0.5);
  EXPECT_EQ(patched[1][1], 0.2e-3);
  EXPECT_NEAR(pairs[0][0], 0, 0.3);
  EXPECT_NE(pairs[0][0], uniform[0][0]);  // series at one configuration set apart
  EXPECT_EQ(s.find("the known map"), std::string::npos) << s;
  EXPECT_NE(s.find("set logscale y"), std::string::npos);  // 2e-4 to 1.5: decades
  // The adversarial map ($I4, after patched) with the 0.1 nats line; tau_b ($I5) with 0.
  const auto adversarial = block(s, "$I4"), tau = block(s, "$I5");
  ASSERT_EQ(adversarial.size(), 2u) << s;
  EXPECT_EQ(adversarial[0][1], 2e-3);
  EXPECT_EQ(adversarial[0][3], 4e-2);
  EXPECT_NE(s.find("first 0.1 to graph 1, first 0.1"), std::string::npos);
  EXPECT_NE(s.find("within epsilon 0.01"), std::string::npos);
  ASSERT_EQ(tau.size(), 2u);
  EXPECT_EQ(tau[1][1], 0.25);
  EXPECT_EQ(tau[1][2], -0.5);
  EXPECT_NE(s.find("first 0 to graph 1, first 0"), std::string::npos);
  // The title: the configuration, the seeds and what the points and bars are.
  EXPECT_NE(s.find("task teacher"), std::string::npos);
  EXPECT_NE(s.find("5th to 95th percentile"), std::string::npos);
  // Each series keeps its colour and marker where another is not drawn (here the pairs').
  const auto style_of = [](const std::string& script, const std::string& title) {
    const std::size_t at = script.find(" title \"" + title + "\"");
    const std::size_t lc = at == std::string::npos ? at : script.rfind(" lc ", at);
    return lc == std::string::npos ? std::string() : script.substr(lc, at - lc);
  };
  Table no_pairs = t;
  no_pairs.rows.erase(std::remove_if(no_pairs.rows.begin(), no_pairs.rows.end(),
                                     [](const auto& r) {
                                       return plot::text(r[1]) == "output distance between pairs";
                                     }),
                      no_pairs.rows.end());
  EXPECT_EQ(style_of(s, "uniform map"), " lc 2 pt 6") << s;
  EXPECT_EQ(style_of(script("attention-sweep-interventions", no_pairs), "uniform map"),
            " lc 2 pt 6");
  // A diverged configuration's median and 95th percentile (1e140) stop the axis three decades
  // above the points' median median (0.5: pairs 1, 1e-3, uniform 0.5, 0.5, permuted 1, 1,
  // patched 0.2, 2e-4, known 0 left out), the median written at the top; a 0 on the log axis is
  // marked 0, not n/a.
  for (auto& r : t.rows) {
    const std::string q = plot::text(r[1]);
    if (q == "output distance (uniform map)") r[6] = 1e140;
    if (q == "output distance between pairs" && plot::text(r[0]) == "inputs=1" &&
        plot::text(r[2]) == "finite")
      r[5] = r[6] = 1e140;
    if (q == "output distance (known map)" && plot::text(r[0]) == "inputs=64")
      r[4] = r[5] = r[6] = 0.0;
  }
  const std::string w = script("attention-sweep-interventions", t);
  EXPECT_NE(w.find("set yrange [" + round_trip(1e-4 / 2) + ":" + round_trip(2 * 0.5e3) + "]"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("set label '" + human_number(1e140) + "' at "), std::string::npos) << w;
  EXPECT_NE(w.find("set label '0' at "), std::string::npos) << w;
  // A table without intervention rows draws no such figure.
  Table none = t;
  none.rows = {t.rows[0]};  // the converged fraction alone
  EXPECT_EQ(script("attention-sweep-interventions", none), "");
}

// An interventions table of one configuration (inputs=1, 100 finite seeds): row() adds a
// quantity's 5th, 50th and 95th percentiles, as the table's rows hold them.
struct SpreadRows {
  Table t;
  SpreadRows() {
    t.name = "attention-sweep";
    for (const char* c : {"configuration", "quantity", "over", "seeds", "p05", "p50", "p95"})
      t.columns.push_back({c});
    t.run = {{"task", "teacher"}, {"steps", 1000}, {"seeds", "0:100"}};
  }
  void row(const char* quantity, double p05, double p50, double p95) {
    t.add_row({std::string("inputs=1"), std::string(quantity), std::string("finite"),
               std::int64_t(100), p05, p50, p95});
  }
};

// On a log axis an interval or percentile that reaches 0 runs to the axis' bottom edge (it was
// drawn ending at the point, as if it had no lower part), and a note says so; on a linear axis
// and where nothing reaches 0 there is no note.
TEST(AttentionSweepFigures, ABarReachingZeroOnALogAxisRunsToTheBottomEdge) {
  SpreadRows spread;
  Table& t = spread.t;
  spread.row("output distance between pairs", 1e-3, 2e-3, 4e-3);
  spread.row("output distance (uniform map)", 0.0, 0.5, 0.75);  // a 5th percentile of 0
  spread.row("output distance (permuted map)", 0.5, 1, 1.5);
  spread.row("Kendall's tau_b (weights vs importance)", 0.0, 0.25,
             0.75);  // linear axis: a 0 is a value
  const std::string s = script("attention-sweep-interventions", t);
  const auto uniform = block(s, "$I1");
  ASSERT_EQ(uniform.size(), 1u) << s;
  const std::size_t range = s.find("set yrange [");
  ASSERT_NE(range, std::string::npos) << s;
  const double bottom = std::stod(s.substr(range + 12));
  EXPECT_GT(uniform[0][2], 0.0) << s;
  EXPECT_LE(uniform[0][2], bottom) << s;  // to (and clipped at) the bottom edge
  EXPECT_EQ(uniform[0][1], 0.5);
  EXPECT_EQ(block(s, "$I3")[0][2], 0.0) << s;  // tau_b's 0 on its linear axis, as it is
  EXPECT_NE(s.find("its 5th percentile is 0"), std::string::npos) << s;
  Table positive = t;
  positive.rows[1][4] = 0.25;
  EXPECT_EQ(script("attention-sweep-interventions", positive).find("percentile is 0"),
            std::string::npos);
  // The grid's JSD panel: a median's interval from 0 (the start null of identical maps) on a
  // log axis (the medians span decades) runs to the axis' bottom, which the panel sets.
  nlohmann::json low = point("inputs=1", "8", 1.0, NAN, 0.3, 0.3);
  low["pair_jsd_finite_median_ci95"] = {0.0, 0.4};
  const Table g = grid_table({low, point("inputs=64", "8", 0.9, NAN, 1e-6, 2e-6)});
  const std::string j = script("attention-sweep-grid", g);
  const auto finite = block(j, "$J1_0");
  ASSERT_EQ(finite.size(), 2u) << j;
  const std::size_t jr = j.find("set yrange [", j.find("set logscale y"));
  ASSERT_NE(jr, std::string::npos) << j;
  EXPECT_EQ(finite[0][2], std::stod(j.substr(jr + 12))) << j;
  EXPECT_GT(finite[0][2], 0.0);
  EXPECT_NE(j.find("its interval runs below the axis"), std::string::npos) << j;
  // An interval's end near 0 (1e-12 under medians of 1e-6 and more) does not stretch the axis:
  // it stops three decades below the smallest median, the bar at its edge.
  nlohmann::json near = point("inputs=1", "8", 1.0, NAN, 0.3, 0.3);
  near["pair_jsd_finite_median_ci95"] = {1e-12, 0.4};
  const std::string k = script("attention-sweep-grid",
                               grid_table({near, point("inputs=64", "8", 0.9, NAN, 1e-6, 2e-6)}));
  const std::size_t kr = k.find("set yrange [", k.find("set logscale y"));
  ASSERT_NE(kr, std::string::npos) << k;
  const double edge = std::stod(k.substr(kr + 12));
  EXPECT_DOUBLE_EQ(edge, 1e-6 / 1e3 / 2) << k;  // the smallest median 1e-6, three decades, half
  EXPECT_EQ(block(k, "$J1_0")[0][2], edge) << k;
}

// The interventions' log axes: one under three decades labels 1, 2 and 5 times each power of
// ten (its powers alone are two or three labels); a wider one labels the powers. The adversarial
// panel's axis reaches 0.3 at least, so that the 0.1 nats line and its label are inside.
TEST(AttentionSweepFigures, ANarrowLogAxisLabelsOneTwoAndFiveTimesEachPowerOfTen) {
  SpreadRows spread;
  Table& t = spread.t;
  spread.row("output distance between pairs", 1e-6, 1e-3, 1);  // seven decades with the margins
  spread.row("output distance (uniform map)", 0.5, 1, 1.5);
  spread.row("adversarial JSD within epsilon", 0.004, 0.007, 0.02);
  const std::string s = script("attention-sweep-interventions", t);
  const std::size_t outputs = s.find("output distance when the map is replaced"),
                    adversarial = s.find("how far a map keeps the output");
  ASSERT_NE(outputs, std::string::npos) << s;
  ASSERT_NE(adversarial, std::string::npos) << s;
  const std::string wide = s.substr(outputs, adversarial - outputs), narrow = s.substr(adversarial);
  EXPECT_NE(wide.find("set format y '10^{%L}'\nset ytics autofreq"), std::string::npos) << wide;
  // [0.004 / 2, 0.15 * 2]: 0.002 to 0.3.
  EXPECT_NE(narrow.find("set yrange [0.002:0.3]"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("set format y '%g'\nset ytics (2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1, 2e-1)"),
            std::string::npos)
      << narrow;
  // The next panel (tau_b, linear) takes its tics back.
  EXPECT_NE(narrow.find("set ytics autofreq", narrow.find("do the weights rank")),
            std::string::npos)
      << narrow;
}

// Diverged and identical seeds at the extremes (a 5th percentile of 1e-150, a median of 1.7e94)
// do not flatten the other points: the axis stops three decades below the smallest median and
// above the median median; a bar beyond runs to the edge (said in the title), a point beyond is
// its value, in three digits.
TEST(AttentionSweepFigures, ExtremeSeedsDoNotFlattenTheInterventionsAxis) {
  SpreadRows spread;
  Table& t = spread.t;
  spread.row("output distance between pairs", 1e-150, 1e-3, 1);
  spread.row("output distance (uniform map)", 0.5, 1, 1.5);
  spread.row("output distance (permuted map)", 1, 1.66857e94, 1e300);
  const std::string s = script("attention-sweep-interventions", t);
  // Medians 1e-3, 1, 1.7e94: bottom 1e-3 x 1e-3 / 2, top 1e3 (the median median's) x 2.
  EXPECT_NE(s.find("set yrange [" + round_trip(1e-6 / 2) + ":" + round_trip(1e3 * 2) + "]"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("its 5th percentile is 0 or below the axis"), std::string::npos) << s;
  EXPECT_NE(s.find("set label '1.67e+94'"), std::string::npos) << s;
}

TEST(AttentionSweepFigures, NotDefinedFoundIsMarkedNotDrawnAsZero) {
  const Table t = grid_table(
      {point("train=qk", "8", 0.0, NAN, NAN, 5e-4), point("train=qkv", "8", 0.5, 0.5, 0.17, 0.17)});
  const std::string s = script("attention-sweep-grid", t);
  const auto found = block(s, "$F1_0");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_TRUE(std::isnan(found[0][1]));  // gnuplot leaves NaN out
  EXPECT_TRUE(std::isnan(found[0][2]) && std::isnan(found[0][3]));
  EXPECT_NE(s.find("set label 'n/a' at " + round_trip(found[0][0])), std::string::npos) << s;
}

TEST(AttentionSweepFigures, AZeroOnALogAxisIsMarkedZeroNotNotDefined) {
  // Frozen maps: every seed's map the same, the pairs' JSD exactly 0, beside values that span
  // decades (a log axis): marked "0" at its place, not "n/a".
  const Table t = grid_table({point("map=learned", "8", 0.9, 1.0, 1e-7, 1e-2),
                              point("map=uniform", "8", 0.0, 0.0, NAN, 0)});
  const std::string s = script("attention-sweep-grid", t);
  EXPECT_NE(s.find("set logscale y"), std::string::npos) << s;
  const auto finite = block(s, "$J1_0");
  ASSERT_EQ(finite.size(), 2u) << s;
  EXPECT_TRUE(std::isnan(finite[1][1]));  // not drawn on the log axis
  EXPECT_NE(s.find("set label '0' at " + round_trip(finite[1][0])), std::string::npos) << s;
  const auto converged = block(s, "$J0_0");
  EXPECT_NE(s.find("set label 'n/a' at " + round_trip(converged[1][0])), std::string::npos) << s;
}

TEST(AttentionSweepFigures, DkGridDrawsEverySeriesWithOffsetsAndALogJsdAxis) {
  nlohmann::json points = nlohmann::json::array();
  for (const char* dk : {"2", "4", "8"}) {
    points.push_back(point(std::string("d_k=") + dk + " scale=sqrt", dk, 1.0, 1.0, 3e-4, 3e-4));
    points.push_back(point(std::string("d_k=") + dk + " scale=none", dk, 0.5, 0.5, 0.3, 0.35));
  }
  Table t = grid_table(points);
  t.run["configurations"] = {{{"name", "d_k=2"}, {"d-k", "2"}}, {{"name", "d_k=4"}, {"d-k", "4"}}};
  const std::string s = script("attention-sweep-grid", t);
  // Two groups (scale) x two quantities: four series per panel, at four distinct x per d_k.
  std::vector<double> at_2;
  for (const char* b : {"$F0_0", "$F0_1", "$F1_0", "$F1_1"}) {
    const auto rows = block(s, b);
    ASSERT_EQ(rows.size(), 3u) << b;
    at_2.push_back(rows[0][0]);
    EXPECT_NEAR(std::log2(rows[0][0]), 1.0, 0.3);
  }
  for (std::size_t i = 0; i < at_2.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(at_2[i], at_2[j]);
  // In each plot command every solid series comes before every dashed one (drawn over it).
  std::istringstream in(s);
  std::string line;
  int plots = 0;
  while (std::getline(in, line)) {
    if (line.rfind("plot ", 0) != 0) continue;
    ++plots;
    EXPECT_LT(line.rfind("dt 1"), line.find("dt 2")) << line;
    EXPECT_NE(line.find("pt 6"), std::string::npos);  // open markers on the dashed series
  }
  EXPECT_EQ(plots, 2);
  // JSD from 3e-4 to 0.35: a log axis; d_k's ticks at its values.
  EXPECT_NE(s.find("set logscale y"), std::string::npos);
  EXPECT_NE(s.find("set xtics (\"2\" 2, \"4\" 4, \"8\" 8)"), std::string::npos);
  EXPECT_EQ(s.find("task previous, 8 words, d_model 8, d_k"), std::string::npos)
      << "d_k varies: not in the title's configuration";
}

// The canvas a figure is drawn on (its size callback, else by `wide`).
std::string canvas(const std::string& stem, const Table& t) {
  for (const Figure& f : find_experiment("attention-sweep")->figures)
    if (f.stem == stem) return f.size ? f.size(t) : f.wide ? "1500,500" : "800,560";
  ADD_FAILURE() << "no figure " << stem;
  return "";
}

// A grid that varies d_k with several other axes (eight groups over d_k would each be a line
// with its own legend entries, which buried the panels): one position per configuration, each
// tic its values one above the other, the x label the axes in that order, the bottom margin
// room for the tics, the label and the key, and a canvas wide enough for 16 of them.
TEST(AttentionSweepFigures, AGridOfSeveralAxesTicksEachConfigurationByItsValues) {
  nlohmann::json points = nlohmann::json::array();
  std::vector<std::string> names;
  for (const char* dk : {"2", "4"})
    for (const char* heads : {"1", "2"})
      for (const char* opt : {"sgd", "adam"})
        for (const char* train : {"qk", "qkv"}) {
          names.push_back(std::string("d_k=") + dk + " heads=" + heads + " optimizer=" + opt +
                          " train=" + train);
          points.push_back(point(names.back(), dk, 0.5, NAN, 1e-3, 2e-3));
        }
  const Table t = grid_table(points);
  const std::string s = script("attention-sweep-grid", t);
  EXPECT_EQ(s.find("set logscale x"), std::string::npos) << s;  // categorical, not over d_k
  EXPECT_NE(s.find("set xlabel \"d_k / heads / optimizer / train (top to bottom)\""),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("set xtics (\"2\\n1\\nsgd\\nqk\" 0, \"2\\n1\\nsgd\\nqkv\" 1,"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("\"4\\n2\\nadam\\nqkv\" 15)"), std::string::npos) << s;
  EXPECT_NE(s.find("set bmargin 12\n"), std::string::npos) << s;  // 4 tic lines, 3, key 5
  EXPECT_EQ(block(s, "$F0_0").size(), 16u);  // one series of all configurations
  EXPECT_EQ(s.find("$F0_1"), std::string::npos);
  EXPECT_EQ(canvas("attention-sweep-grid", t), "1672,544");  // 2 (100 + (8 x 4 + 14) x 16): "adam"
  // One varied axis: its values as tics and its name as the label (not rotated names that
  // touch), on the usual canvas.
  const Table one = grid_table({point("train=qk", "8", 0.5, NAN, 1e-3, 2e-3),
                                point("train=qkv", "8", 0.5, NAN, 1e-3, 2e-3)});
  const std::string o = script("attention-sweep-grid", one);
  EXPECT_NE(o.find("set xtics (\"qk\" 0, \"qkv\" 1) noenhanced\n"), std::string::npos) << o;
  EXPECT_NE(o.find("set xlabel \"train\" noenhanced"), std::string::npos) << o;
  EXPECT_EQ(o.find("rotate by 30"), std::string::npos) << o;
  EXPECT_EQ(canvas("attention-sweep-grid", one), "1500,500");
  // d_k with one other axis of two values: d_k's axis, two lines, the usual canvas.
  nlohmann::json two = nlohmann::json::array();
  for (const char* dk : {"2", "4"})
    for (const char* scale : {"sqrt", "none"})
      two.push_back(point(std::string("d_k=") + dk + " scale=" + scale, dk, 0.5, NAN, 1e-3, 2e-3));
  EXPECT_NE(script("attention-sweep-grid", grid_table(two)).find("set logscale x 2"),
            std::string::npos);
  EXPECT_EQ(canvas("attention-sweep-grid", grid_table(two)), "1500,500");
}

TEST(AttentionSweepFigures, ScatterLeavesOutDivergedLossesAndDrawsTheThreshold) {
  Table t;
  t.name = "attention-sweep";
  std::vector<double> loss, jsd;
  for (int i = 0; i < 200; ++i) {
    loss.push_back(std::pow(10.0, -30.0 + 0.15 * i));  // 1e-30 .. 1e-0.15
    jsd.push_back(0.2);
  }
  loss.push_back(1e30);  // a diverged seed
  jsd.push_back(0.4);
  loss.push_back(0.0);  // no place on a log axis
  jsd.push_back(0.1);
  t.extra["scatter"] = {{"loss", loss}, {"jsd", jsd}};
  t.run = {{"task", "random"}, {"steps", 500}, {"converged_below", 1e-4}, {"seeds", "0:1000"}};
  const std::string s = script("attention-sweep-loss-jsd", t);
  const auto points = block(s, "$D");
  EXPECT_EQ(points.size(), 200u);
  for (const auto& p : points) EXPECT_LT(p[0], 1e3);
  EXPECT_NE(s.find("1 with a loss above"), std::string::npos) << s;
  EXPECT_NE(s.find("left out as diverged"), std::string::npos);
  EXPECT_NE(s.find("1 with a loss of 0 not drawn"), std::string::npos);
  const std::string at = round_trip(1e-4);
  EXPECT_NE(s.find("set arrow 1 from " + at + ", graph 0 to " + at + ", graph 1"),
            std::string::npos);
  EXPECT_NE(s.find("the first 202 seeds"), std::string::npos);
  // The x range ends within the finite losses, not at 1e30.
  const std::size_t r = s.find("set xrange [");
  ASSERT_NE(r, std::string::npos);
  const double hi = std::stod(s.substr(s.find(':', r) + 1));
  EXPECT_LT(hi, 1e3);
  // The threshold's label on the side with more room: 1e-4 lies right of the middle of 1e-30 ..
  // 1e-0.15 (log scale), so the label ends at the line; at the left edge it starts there.
  EXPECT_NE(s.find("graph 0.95 right offset -0.5,0"), std::string::npos) << s;
  Table left = t;
  std::vector<double> high(200);
  for (int i = 0; i < 200; ++i) high[i] = std::pow(10.0, -4.0 + 0.02 * i);  // 1e-4 .. 1e-0.02
  left.extra["scatter"] = {{"loss", high}, {"jsd", std::vector<double>(200, 0.2)}};
  const std::string l = script("attention-sweep-loss-jsd", left);
  EXPECT_NE(l.find("graph 0.95 left offset 0.5,0"), std::string::npos) << l;
}

TEST(AttentionSweepFigures, MapTicksAtCellCentresWithValuesUpTo16Words) {
  for (int n : {4, 17}) {
    Table t;
    t.name = "attention-sweep";
    nlohmann::json rows = nlohmann::json::array();
    for (int i = 0; i < n - 1; ++i) rows.push_back(std::vector<double>(n, 1.0 / n));
    t.extra["first_loss_row"] = 1;
    t.extra["mean_map"] = rows;
    t.extra["std_map"] = rows;
    const std::string s = script("attention-sweep-map", t);
    EXPECT_NE(s.find("set xtics 0,1," + std::to_string(n - 1)), std::string::npos) << s;
    EXPECT_NE(s.find("set ytics 1,1," + std::to_string(n - 1)), std::string::npos) << s;
    EXPECT_NE(s.find("set xrange [-0.5:" + std::to_string(n - 1) + ".5]"), std::string::npos);
    EXPECT_EQ(s.find("with labels") != std::string::npos, n <= 16) << n;
  }
}

// The cells plot group `group` ("gnuplot_plot_1a": a panel's first plot, the cells) of an SVG
// gnuplot wrote fills: each filled polygon's colour.
std::vector<std::string> cell_fills(const std::string& svg, const std::string& group) {
  std::vector<std::string> fills;
  const std::size_t at = svg.find("<g id=\"" + group + "\"");
  if (at == std::string::npos) return fills;
  const std::size_t end = svg.find("</g>", at);
  for (std::size_t p = svg.find("<polygon fill = '", at); p < end;
       p = svg.find("<polygon fill = '", p + 1)) {
    const std::size_t from = p + std::string("<polygon fill = '").size();
    fills.push_back(svg.substr(from, svg.find('\'', from) - from));
  }
  return fills;
}

// A heatmap of one row has its cells drawn (gnuplot's `with image` draws none there): demo
// attention's weights for one word (weight 1: the palette's top, #6f9fd8) and attention-sweep's
// map for two words (one loss row, two keys).
TEST(Heatmaps, OneRowHeatmapsHaveTheirCellsFilled) {
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot is not on PATH";
  TempDir dir;
  const std::string x = dir.write("x.json", "[[1, 2]]"),
                    w = dir.write("w.json", "[[1, 0], [0, 1]]");
  const auto a = test::run_demo("attention --x " + x + " --w-q " + w + " --w-k " + w + " --w-v " +
                                w + " -q --out " + dir.file("one-word"));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(
      cell_fills(test::read_file(dir.file("one-word/attention-weights.svg")), "gnuplot_plot_1a"),
      std::vector<std::string>{"rgb(111, 159, 216)"});
  const auto s = test::run_demo(
      "--table attention-sweep --task previous --words 2 --d-model 2 --d-k 2 --seeds 0:4 "
      "--steps 10 -q --out " +
      dir.file("sweep"));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const std::string map = test::read_file(dir.file("sweep/attention-sweep-map.svg"));
  EXPECT_EQ(cell_fills(map, "gnuplot_plot_1a").size(), 2u) << "the mean map's two cells";
  EXPECT_EQ(cell_fills(map, "gnuplot_plot_1b").size(), 2u) << "the std map's two cells";
}

// demo attention's heatmap: heads in rows of up to four panels (nine heads: eight drawn, two rows
// of four, not a strip of eight); a key the mask hides drawn as "-" without fill, not as a weight
// of 0.000 (mask row 2 hidden, and key 3 of query 0), and the title says so.
TEST(Heatmaps, HeadsInRowsOfFourAndMaskedKeysMarked) {
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot is not on PATH";
  TempDir dir;
  std::string x = "[", w = "[";
  for (int i = 0; i < 18; ++i) {
    w += std::string(i ? ", " : "") + "[";
    for (int j = 0; j < 18; ++j) w += std::string(j ? ", " : "") + (i == j ? "1" : "0.1");
    w += "]";
  }
  w += "]";
  for (int i = 0; i < 3; ++i) {
    x += std::string(i ? ", " : "") + "[";
    for (int j = 0; j < 18; ++j) x += std::string(j ? ", " : "") + std::to_string((i + j) % 5);
    x += "]";
  }
  x += "]";
  const std::string xf = dir.write("x.json", x), wf = dir.write("w.json", w);
  const auto nine = test::run_demo("attention --x " + xf + " --w-q " + wf + " --w-k " + wf +
                                   " --w-v " + wf + " --heads 9 -q --out " + dir.file("nine"));
  ASSERT_EQ(nine.exit_code, 0) << nine.err;
  const std::string svg = test::read_file(dir.file("nine/attention-weights.svg"));
  EXPECT_NE(svg.find("width=\"2280\" height=\"1080\""), std::string::npos)
      << svg.substr(0, 200);  // 4 panels of 560 across (and 40), 2 rows of 520 (and 40)
  EXPECT_EQ(svg.find("head 8"), std::string::npos);
  EXPECT_NE(svg.find("head 7"), std::string::npos);

  std::string hides = npy_header("|b1", {4, 4});
  for (const int keep : {1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1})
    hides += static_cast<char>(keep);
  const std::string m = dir.write("m.npy", hides);
  const std::string x4 = dir.write("x4.json", "[[1, 0], [0, 1], [1, 1], [2, 0]]");
  const std::string w2 = dir.write("w2.json", "[[1, 0], [0, 1]]");
  const auto masked =
      test::run_demo("attention --x " + x4 + " --w-q " + w2 + " --w-k " + w2 + " --w-v " + w2 +
                     " --mask " + m + " -q --out " + dir.file("masked"));
  ASSERT_EQ(masked.exit_code, 0) << masked.err;
  const std::string msvg = test::read_file(dir.file("masked/attention-weights.svg"));
  std::size_t dashes = 0;
  for (std::size_t at = msvg.find(">-</tspan>"); at != std::string::npos;
       at = msvg.find(">-</tspan>", at + 1))
    ++dashes;
  EXPECT_EQ(dashes, 5u) << "the 5 masked keys";
  const auto fills = cell_fills(msvg, "gnuplot_plot_1a");  // gnuplot paints NaN 'white'
  EXPECT_EQ(std::count(fills.begin(), fills.end(), "white"), 5) << "the 5 masked keys unfilled";
  EXPECT_EQ(fills.size(), 16u);
  EXPECT_NE(msvg.find("grey: a masked key"), std::string::npos);
  // Each masked key painted grey, so that without labels (more than 12 words) it is not the white
  // of a weight of 0.
  std::size_t grey = 0;
  for (std::size_t at = msvg.find("rgb(217, 217, 217)"); at != std::string::npos;
       at = msvg.find("rgb(217, 217, 217)", at + 1))
    ++grey;
  EXPECT_EQ(grey, 5u) << "the 5 masked keys grey";
}

// ---- the other tables' figures -----------------------------------------------------------------

// Table `table`'s figure `stem`'s script for t.
std::string figure_script(const std::string& table, const std::string& stem, const Table& t) {
  for (const Figure& f : find_experiment(table)->figures)
    if (f.stem == stem) return f.script(t);
  ADD_FAILURE() << "no figure " << stem << " of " << table;
  return "";
}

// The multiplot's title line of a script (its gnuplot string and options).
std::string multiplot_title(const std::string& s) {
  const std::size_t at = s.find("set multiplot");
  return at == std::string::npos ? "" : s.substr(at, s.find('\n', at) - at);
}

// The cell `column` of the row whose first cell is `key`.
double cell(const Table& t, const std::string& key, const char* column) {
  for (const auto& r : t.rows)
    if (plot::text(r[0]) == key) return plot::num(r[t.column(column)]);
  ADD_FAILURE() << "no row " << key;
  return NAN;
}

TEST(TrainingSweepFigure, TitleNamesTheSettingsTheSeedsAndEachConfigsCounts) {
  Table t = test::run_table("training-sweep", {{"--seeds", "3:43"},
                                               {"--steps", "40"},
                                               {"--lr", "0.25"},
                                               {"--grad", "analytic"},
                                               {"--converged-below", "0.01"}});
  std::string s = figure_script("training-sweep", "training-sweep", t);
  const std::string title = multiplot_title(s);
  for (const char* want :
       {"40 steps, lr 0.25, analytic gradients, sequential schedule, f64",
        "each config over the same 40 seeds (3:43)", "converged: final loss < 0.01", "W_V = I",
        "numpy default_rng(seed)", "dashed: median, dotted: p05 and p95"})
    EXPECT_NE(title.find(want), std::string::npos) << want << "\n" << title;
  EXPECT_NE(title.find(" noenhanced"), std::string::npos);  // default_rng keeps its underscore
  for (const char* config : {"all-random", "qk-random"}) {
    // Each panel: its seeds, converged fraction and quantiles; the median drawn where it is.
    const double converged = cell(t, config, "converged"), p50 = cell(t, config, "p50");
    EXPECT_NE(s.find(std::string("set title \"") + config + ": 40 seeds, " +
                     human_number(100 * converged) + "% converged\\nmedian " + human_number(p50) +
                     ", p05 " + human_number(cell(t, config, "p05")) + ", p95 " +
                     human_number(cell(t, config, "p95"))),
              std::string::npos)
        << config << "\n"
        << s;
    EXPECT_NE(s.find("set arrow from " + round_trip(p50) + ", graph 0 to " + round_trip(p50)),
              std::string::npos);
  }
  // Diverged runs are counted in their panel.
  t.rows[0][t.column("diverged")] = std::int64_t{3};
  s = figure_script("training-sweep", "training-sweep", t);
  EXPECT_NE(s.find(plot::text(t.rows[0][0]) + ": 40 seeds, "), std::string::npos);
  EXPECT_NE(s.find("% converged, 3 diverged (left out)"), std::string::npos) << s;
}

TEST(SoftmaxSaturationFigure, TitleNamesTheRowsTheGeneratorAndEqualScoresAreDrawn) {
  Table t =
      test::run_table("softmax-saturation",
                      {{"--d-k", "1,4"}, {"--samples", "300"}, {"--keys", "5"}, {"--seed", "7"}});
  std::string s = figure_script("softmax-saturation", "softmax-saturation", t);
  const std::string title = multiplot_title(s);
  for (const char* want : {"the mean over 300 rows per d_k (a query and its 5 keys, N(0, 1)",
                           "Philox4x32-10", "seed 7)"})
    EXPECT_NE(title.find(want), std::string::npos) << want << "\n" << title;
  // Equal scores: every weight 1/5, entropy ln 5, ||J||_F = sqrt(4)/5 (J = diag(p) - p p^T).
  for (const double v : {1.0 / 5, std::log(5.0), 2.0 / 5})
    EXPECT_NE(s.find(", " + round_trip(v) + " with lines dt 3"), std::string::npos) << v << "\n"
                                                                                    << s;
  EXPECT_EQ(title.find("left out"), std::string::npos);
  t.rows[1][t.column("non_finite")] = std::int64_t{2};
  EXPECT_NE(multiplot_title(figure_script("softmax-saturation", "softmax-saturation", t))
                .find("2 rows with a non-finite measure left out"),
            std::string::npos);
}

// With one d_k the x range is set around it (a factor 1.4 each way), as with several: gnuplot
// would otherwise draw the theory curve and the reference levels (functions of d_k) at that one
// x, a dot under the point, in dk-std's and softmax-saturation's figures.
TEST(DkFigures, OneDkSetsTheRangeSoThatTheReferenceLinesAreDrawn) {
  const std::string one = "set xrange [" + round_trip(64 / 1.4) + ":" + round_trip(64 * 1.4) + "]";
  const std::string dk = figure_script(
      "dk-std", "dk-std", test::run_table("dk-std", {{"--d-k", "64"}, {"--samples", "100"}}));
  EXPECT_NE(dk.find(one), std::string::npos) << dk;
  // The std axis holds the theory level 1 (the scaled points) above its bottom edge.
  const std::size_t yr = dk.find("set yrange [");
  ASSERT_NE(yr, std::string::npos) << dk;
  EXPECT_LT(std::stod(dk.substr(yr + 12)), 1.0 / 1.2) << dk;
  const std::string sat =
      figure_script("softmax-saturation", "softmax-saturation",
                    test::run_table("softmax-saturation", {{"--d-k", "64"}, {"--samples", "100"}}));
  EXPECT_NE(sat.find(one), std::string::npos) << sat;
  const std::string several = figure_script(
      "dk-std", "dk-std", test::run_table("dk-std", {{"--d-k", "2,512"}, {"--samples", "100"}}));
  EXPECT_NE(several.find("set xrange [" + round_trip(2 / 1.4) + ":" + round_trip(512 * 1.4) + "]"),
            std::string::npos)
      << several;
}

TEST(DkStdFigure, TitleNamesTheSamplesTheGeneratorAndItsSeed) {
  const auto title_of = [](const std::map<std::string, std::string>& flags) {
    return multiplot_title(figure_script("dk-std", "dk-std", test::run_table("dk-std", flags)));
  };
  std::string title = title_of({{"--d-k", "2,4"}, {"--samples", "2000"}, {"--seed", "3"}});
  EXPECT_NE(title.find("2000 samples of q.k per d_k; numpy default_rng(3)"), std::string::npos)
      << title;
  EXPECT_NE(title.find("bars: 95% intervals for the std (Bonett 2006)"), std::string::npos);
  title = title_of({{"--d-k", "2,4"}, {"--samples", "2000"}, {"--seed", "5"}, {"--rng", "philox"}});
  EXPECT_NE(title.find("2000 samples of q.k per d_k; Philox4x32-10 + Box-Muller (float32) "
                       "normals, seed 5"),
            std::string::npos)
      << title;
  // Below 1000 samples the table has no intervals: the figure says so and claims none.
  const std::string s = figure_script(
      "dk-std", "dk-std", test::run_table("dk-std", {{"--d-k", "2,4"}, {"--samples", "100"}}));
  EXPECT_NE(multiplot_title(s).find("no intervals"), std::string::npos) << s;
  EXPECT_EQ(s.find("95% CI"), std::string::npos);
  EXPECT_EQ(s.find("95% interval'"), std::string::npos);
  // The relative error's axis is padded so that its theory line (0) is inside, never on its edge.
  EXPECT_NE(s.find("set offsets 0, 0, graph 0.05, graph 0.05\n"), std::string::npos);
}

TEST(WeightHeatmaps, TitleNamesTheWordsAndEachPanelItsMatrices) {
  // The lesson's words (section 2) and matrices (section 3).
  std::string s = figure_script("qkv", "qkv-weights", test::run_table("qkv"));
  EXPECT_NE(multiplot_title(s).find("X: cat [2, 0], dog [1, 1], car [0, 2]"), std::string::npos)
      << s;
  for (const char* panel :
       {"swapped keys\\nW_K = [[0, 1], [1, 0]]", "one-way keys\\nW_K = [[0, 0], [1, 0]]",
        "V keeps only x\\nW_V = [[1, 0], [0, 0]]"})
    EXPECT_NE(s.find(std::string("set title \"") + panel + "\" noenhanced"), std::string::npos)
        << panel << "\n"
        << s;
  s = figure_script("weighted-average", "weighted-average-weights",
                    test::run_table("weighted-average"));
  EXPECT_NE(multiplot_title(s).find("Q = K = V = X"), std::string::npos) << s;
  EXPECT_NE(multiplot_title(s).find("softmax(Q K^T / sqrt(2))"), std::string::npos);
  for (const char* panel : {"lesson, no scaling\\nX: cat [2, 0], dog [1, 1], car [0, 2]",
                            "lesson\\nX: cat [2, 0], dog [1, 1], car [0, 2]",
                            "car=[5,5]\\nX: cat [2, 0], dog [1, 1], car [5, 5]",
                            "all equal\\nX: cat [1, 1], dog [1, 1], car [1, 1]"})
    EXPECT_NE(s.find(std::string("set title \"") + panel + "\" noenhanced"), std::string::npos)
        << panel << "\n"
        << s;
}

TEST(TitleLines, BreaksLongLinesAfterACommaAndEscapesQuotes) {
  EXPECT_EQ(plot::title_lines({"a, b, c", "", "say \"x\""}, 3), "\"a,\\nb,\\nc\\nsay \\\"x\\\"\"");
  EXPECT_EQ(plot::title_lines({"one line"}), "\"one line\"");
  EXPECT_EQ(plot::count(1e6), "1000000");
  EXPECT_EQ(plot::count(0.5), "0.5");
  EXPECT_EQ(plot::count(1, "seed", "seeds"), "1 seed");
  EXPECT_EQ(plot::count(0, "seed", "seeds"), "0 seeds");
  EXPECT_EQ(plot::count(2, "seed", "seeds"), "2 seeds");
}

// The map figure says what a cell is: with several heads each seed's map is their mean, with
// several measured inputs the first one's, and under a causal mask the keys j > i are masked.
TEST(AttentionSweepFigures, MapTitleSaysHeadsAreAveragedAndWhichInput) {
  const Table plain = test::run_table("attention-sweep", {{"--seeds", "0:4"}, {"--steps", "5"}});
  const std::string p = figure_script("attention-sweep", "attention-sweep-map", plain);
  EXPECT_EQ(p.find("mean of its"), std::string::npos) << p;
  EXPECT_EQ(p.find("measured inputs"), std::string::npos) << p;
  EXPECT_EQ(p.find("masked"), std::string::npos) << p;
  const Table t = test::run_table("attention-sweep", {{"--task", "previous"},
                                                      {"--vocab", "4"},
                                                      {"--words", "4"},
                                                      {"--d-model", "8"},
                                                      {"--d-k", "4"},
                                                      {"--heads", "2"},
                                                      {"--causal", "on"},
                                                      {"--inputs", "3"},
                                                      {"--test-inputs", "5"},
                                                      {"--seeds", "0:4"},
                                                      {"--steps", "5"}});
  const std::string s = figure_script("attention-sweep", "attention-sweep-map", t);
  for (const char* want :
       {"each seed's the mean of its 2 heads", "on the first of 5 measured inputs",
        "keys j > i masked (grey,", "weight 0)"})  // the title's lines break after a comma
    EXPECT_NE(s.find(want), std::string::npos) << want << "\n" << s;
}

// Under --causal the map's masked cells (key j > query i) are grey and carry no label, in both
// panels; without the mask every cell is labelled.
TEST(AttentionSweepFigures, MaskedCellsAreGreyAndUnlabelled) {
  const Table t = test::run_table("attention-sweep", {{"--causal", "on"},
                                                      {"--task", "random"},
                                                      {"--words", "4"},
                                                      {"--seeds", "0:4"},
                                                      {"--steps", "5"}});
  const std::string s = figure_script("attention-sweep", "attention-sweep-map", t);
  std::size_t grey = 0, hidden = 0;
  for (std::size_t at = 0; (at = s.find("lc rgb '#d9d9d9'", at)) != std::string::npos; ++at) ++grey;
  for (std::size_t at = 0; (at = s.find("?'':sprintf", at)) != std::string::npos; ++at) ++hidden;
  EXPECT_EQ(grey, 2u) << s;
  EXPECT_EQ(hidden, 2u) << s;
  EXPECT_NE(s.find("($1>($2+0))"), std::string::npos) << s;  // j > i, queries from row 0
  const Table plain = test::run_table(
      "attention-sweep",
      {{"--task", "random"}, {"--words", "4"}, {"--seeds", "0:4"}, {"--steps", "5"}});
  const std::string p = figure_script("attention-sweep", "attention-sweep-map", plain);
  EXPECT_EQ(p.find("#d9d9d9"), std::string::npos) << p;
  EXPECT_EQ(p.find("?'':"), std::string::npos) << p;
}

// One seed is "1 seed" in the figures' titles and captions, never "1 seeds".
TEST(Figures, OneSeedIsSingular) {
  const Table training = test::run_table(
      "training-sweep", {{"--seeds", "5:6"}, {"--steps", "10"}, {"--grad", "analytic"}});
  const std::string s = figure_script("training-sweep", "training-sweep", training);
  EXPECT_NE(s.find("each config over the same 1 seed (5:6)"), std::string::npos) << s;
  EXPECT_EQ(s.find("1 seeds"), std::string::npos) << s;
  const Table sweep = test::run_table("attention-sweep", {{"--seeds", "5:6"}, {"--steps", "10"}});
  for (const char* stem : {"attention-sweep-map", "attention-sweep-jsd"}) {
    const std::string a = figure_script("attention-sweep", stem, sweep);
    EXPECT_NE(a.find("of 1 seed (5:6)"), std::string::npos) << stem << "\n" << a;
    EXPECT_EQ(a.find("1 seeds"), std::string::npos) << stem << "\n" << a;
  }
}

// ---- demo replot -------------------------------------------------------------------------------

TEST(Replot, DrawsAStoredResultsFiguresAgain) {
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot is not on PATH";
  TempDir dir;
  const std::string run = dir.file("run"), again = dir.file("again");
  std::filesystem::create_directories(again);
  const auto r = test::run_demo(
      "--table attention-sweep --task previous --words 4 --d-model 4 --d-k 4 --seeds 0:40 "
      "--steps 50 -q --out " +
      run);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto p = test::run_demo("replot " + run + "/attention-sweep.json --out " + again + " -q");
  // Into a folder that does not exist yet: made, as a run's --out.
  const std::string fresh = dir.file("fresh/figures");
  ASSERT_EQ(
      test::run_demo("replot " + run + "/attention-sweep.json --out " + fresh + " -q").exit_code,
      0);
  EXPECT_TRUE(std::filesystem::exists(fresh + "/attention-sweep-map.svg"));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(p.out.empty());
  for (const char* f : {"attention-sweep-map", "attention-sweep-jsd", "attention-sweep-loss-jsd"}) {
    // The SVGs hold the drawing as text: the same figure from the run and from its file.
    EXPECT_EQ(test::read_file(again + "/" + f + ".svg"), test::read_file(run + "/" + f + ".svg"))
        << f;
    EXPECT_TRUE(std::filesystem::exists(again + "/" + f + ".png")) << f;
  }
  // Existing figures are replaced only with --force.
  test::expect_refused("replot " + run + "/attention-sweep.json --out " + again, 1,
                       {"replot:", "--force"});
  EXPECT_EQ(test::run_demo("replot " + run + "/attention-sweep.json --out " + again + " -q --force")
                .exit_code,
            0);
}

// A run that does not draw a figure it drew before (--no-plots, no gnuplot on PATH, no data for
// it) removes the earlier run's copy with --force, and is refused without it, so that no figure
// lies beside data it was not drawn from: a table's run, demo attention and replot.
TEST(StaleFigures, AFigureNotDrawnAgainIsRemovedWithForceAndRefusedWithout) {
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot is not on PATH";
  namespace fs = std::filesystem;
  TempDir dir;
  const std::string
      out = dir.file("sweep"),
      sweep =
          "--table attention-sweep --task previous --words 3 --d-model 3 --d-k 3 --seeds 0:4 "
          "--steps 10 -q --out " +
          out;
  const auto figures = [&](const std::string& folder) {
    std::vector<std::string> names;
    for (const auto& f : fs::directory_iterator(folder))
      if (f.path().extension() == ".png" || f.path().extension() == ".svg")
        names.push_back(f.path().filename().string());
    return names;
  };
  ASSERT_EQ(test::run_demo(sweep).exit_code, 0);
  ASSERT_EQ(figures(out).size(), 8u);
  ASSERT_EQ(test::run_demo(sweep + " --force --no-plots").exit_code, 0);
  EXPECT_TRUE(figures(out).empty());
  EXPECT_TRUE(fs::exists(out + "/attention-sweep.json"));
  // Without gnuplot on PATH, likewise.
  ASSERT_EQ(test::run_demo(sweep + " --force").exit_code, 0);
  ASSERT_EQ(figures(out).size(), 8u);
  const auto no_gnuplot = test::run_demo(sweep + " --force", "PATH=/nonexistent");
  ASSERT_EQ(no_gnuplot.exit_code, 0);
  EXPECT_NE(no_gnuplot.err.find("demo: warning: gnuplot not found: no figures"), std::string::npos)
      << no_gnuplot.err;
  EXPECT_TRUE(figures(out).empty());
  // An earlier figure alone in the folder: refused without --force, left as it was.
  const std::string lone = dir.file("lone");
  fs::create_directories(lone);
  test::write_file(lone + "/attention-sweep-map.png", "an earlier figure");
  test::expect_refused(sweep.substr(0, sweep.find("--out")) + "--out " + lone + " --no-plots", 1,
                       {"attention-sweep-map.png", "--force"});
  EXPECT_EQ(test::read_file(lone + "/attention-sweep-map.png"), "an earlier figure");

  // demo attention's heatmap.
  const std::string x = dir.write("x.json", "[[1, 2], [3, 4]]"),
                    w = dir.write("w.json", "[[1, 0], [0, 1]]");
  const std::string attention = "attention --x " + x + " --w-q " + w + " --w-k " + w + " --w-v " +
                                w + " -q --out " + dir.file("attention");
  ASSERT_EQ(test::run_demo(attention).exit_code, 0);
  ASSERT_EQ(figures(dir.file("attention")).size(), 2u);
  test::expect_refused(attention + " --no-plots", 1, {"exists", "--force"});
  ASSERT_EQ(test::run_demo(attention + " --no-plots --force").exit_code, 0);
  EXPECT_TRUE(figures(dir.file("attention")).empty());
  EXPECT_TRUE(fs::exists(dir.file("attention/weights.npy")));

  // replot of a result whose map is gone from the file: the map's figure is removed.
  ASSERT_EQ(test::run_demo(sweep + " --force").exit_code, 0);
  nlohmann::json j = test::read_json(out + "/attention-sweep.json");
  j["tables"][0].erase("mean_map");
  const std::string mapless = dir.write("mapless.json", j.dump());
  ASSERT_EQ(test::run_demo("replot " + mapless + " -q --force --out " + out).exit_code, 0);
  EXPECT_FALSE(fs::exists(out + "/attention-sweep-map.png"));
  EXPECT_FALSE(fs::exists(out + "/attention-sweep-map.svg"));
  EXPECT_EQ(figures(out).size(), 6u);
}

// A text in a figure's script is a string to gnuplot, never a command: a newline (and every
// control character) is escaped, and gnuplot reads the text back as it was.
TEST(Figures, TextInAScriptIsEscapedNeverRunAsACommand) {
  EXPECT_EQ(plot::quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(plot::quote("x\nsystem 'id' #\t\x7f"), "\"x\\012system 'id' #\\011\\177\"");
  const std::string title = plot::title_lines({"one\rtwo", "three\nsystem 'id'"});
  EXPECT_EQ(title, "\"one\\015two\\nthree\\012system 'id'\"");
  // gnuplot substitutes a shell command's output for `command` inside double quotes.
  EXPECT_EQ(plot::quote("a `id` b"), "\"a \\140id\\140 b\"");
  EXPECT_EQ(plot::title_lines({"`id`"}), "\"\\140id\\140\"");
  for (const std::string& s : {plot::quote("x\ny"), title})
    EXPECT_EQ(s.find('\n'), std::string::npos) << s;
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot is not on PATH";
  // End to end: a result file whose title and run fields carry a command after a newline, and
  // demo attention's input whose name does, draw their figures and run nothing.
  TempDir dir;
  const std::string marker = dir.file("ran");
  const std::string evil = " `touch " + marker + "`\nsystem 'touch " + marker + "' #";
  const auto r = test::run_demo("--table training-sweep --seeds 0:20 --steps 5 -q --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  j["tables"][0]["title"] = j["tables"][0]["title"].get<std::string>() + evil;
  for (auto& [key, value] : j["tables"][0]["run"].items())
    if (value.is_string()) value = value.get<std::string>() + evil;
  const auto drawn =
      test::run_demo("replot " + dir.write("evil.json", j.dump()) + " -q --out " + dir.file("o"));
  EXPECT_EQ(drawn.exit_code, 0) << drawn.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("o/training-sweep.svg")));
  const std::string x = dir.write("x.json", "[[1, 2], [3, 4]]"),
                    w = dir.write("w.json", "[[1, 0], [0, 1]]");
  // A file name holds no '/': its command touches a file in demo's folder (this test's).
  const std::string touched = "attn-ran-" + std::to_string(getpid());
  const std::string named =
      dir.file("x `touch " + touched + "` \nsystem \"touch " + touched + "\" #.json");
  std::filesystem::copy_file(x, named);
  const auto att = test::run_demo("attention --x '" + named + "' --w-q " + w + " --w-k " + w +
                                  " --w-v " + w + " -q --out " + dir.file("a"));
  EXPECT_EQ(att.exit_code, 0) << att.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("a/attention-weights.svg")));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "gnuplot ran a command from the text";
  EXPECT_FALSE(std::filesystem::exists(touched)) << "gnuplot ran a command from the file name";
  std::filesystem::remove(touched);
}

// An output path with a control character is refused before any work, in one line: a newline
// would split the messages that name it (the outputs, the checkpoint, --per-seed).
TEST(Figures, AnOutputNameWithAControlCharacterIsRefused) {
  TempDir dir;
  const std::string args = "--table training-sweep --seeds 0:20 --steps 5 -q";
  const std::string bad = "'" + dir.file("o\nx") + "'", tab = "'" + dir.file("o\tx") + "'";
  test::expect_refused(args + " --out " + bad, 1, {"--out", "holds a control character"},
                       test::Refusal().leaves_no(dir.file("o")));
  test::expect_refused(args + " --out " + tab, 1, {"--out", "holds a control character"});
  test::expect_refused(args + " --per-seed " + bad, 1, {"--per-seed", "control character"});
  test::expect_refused(args + " --checkpoint " + bad, 1, {"--checkpoint", "control character"});
  // An option taken as the name: refused, no folder or file named after it.
  test::expect_refused(args + " --out --force", 1,
                       {"--out --force: a name that starts with '-'", "write ./--force"},
                       test::Refusal().leaves_no("--force"));
  test::expect_refused(args + " --per-seed -q", 1, {"--per-seed -q: a name that starts with '-'"},
                       test::Refusal().leaves_no("-q"));
  test::expect_refused(args + " --checkpoint -v", 1, {"--checkpoint -v"},
                       test::Refusal().leaves_no("-v"));
  TempDir att;
  const std::string x = att.write("x.json", "[[1, 0], [0, 1]]");
  test::expect_refused(
      "attention --x " + x + " --w-q " + x + " --w-k " + x + " --w-v " + x + " --out -q", 1,
      {"--out -q: a name that starts with '-'"}, test::Refusal().leaves_no("-q"));
}

// A run whose every seed diverges (no finite value to draw) still writes its table and its
// figures, each panel with nothing to draw framed with a note: one configuration and grids.
TEST(Figures, ARunWithNoFiniteSeedWritesItsResults) {
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot is not on PATH";
  TempDir dir;
  for (const std::string grid : {"--lr 1e6", "--lr 1e5,1e6", "--lr 1e6 --d-k 2,4"}) {
    const std::string out = dir.file("out" + std::to_string(grid.size()));
    const auto r = test::run_demo("--table attention-sweep --seeds 0:6 --steps 50 -q " + grid +
                                  " --out " + out);
    ASSERT_EQ(r.exit_code, 0) << grid << ": " << r.err;
    EXPECT_TRUE(std::filesystem::exists(out + "/attention-sweep.json")) << grid;
    EXPECT_TRUE(std::filesystem::exists(out + "/attention-sweep-interventions.png")) << grid;
    const std::string svg = test::read_file(out + "/attention-sweep-interventions.svg");
    EXPECT_NE(svg.find("no finite seed"), std::string::npos) << grid;
  }
}

// replot draws every figure before any is renamed into place: a failure leaves none; a result
// with two tables of one name is refused before anything is drawn.
TEST(Replot, AllFiguresOrNoneAndOneTableOfEachName) {
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot is not on PATH";
  namespace fs = std::filesystem;
  TempDir dir;
  const std::string run = dir.file("run");
  ASSERT_EQ(test::run_demo("--table attention-sweep --task previous --words 3 --d-model 3 "
                           "--d-k 3 --seeds 0:8 --steps 50 -q --out " +
                           run)
                .exit_code,
            0);
  nlohmann::json j = test::read_json(run + "/attention-sweep.json");
  // The histogram's range reversed, which gnuplot cannot draw: the map is drawn before it.
  nlohmann::json broken = j;
  ASSERT_TRUE(broken["tables"][0].contains("jsd_histogram"));
  broken["tables"][0]["jsd_histogram"]["range"] = {1, 0};
  const std::string out = dir.file("out");
  fs::create_directories(out);
  const auto r =
      test::run_demo("replot " + dir.write("broken.json", broken.dump()) + " --out " + out);
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(test::is_one_line(r.err)) << r.err;
  EXPECT_TRUE(fs::is_empty(out)) << "figures drawn before the failure were left";
  // Two tables of one name.
  nlohmann::json twice = j;
  twice["tables"].push_back(j["tables"][0]);
  test::expect_refused("replot " + dir.write("twice.json", twice.dump()) + " --out " + out, 2,
                       {"replot:", "two tables named attention-sweep"});
  EXPECT_TRUE(fs::is_empty(out));
}

// A result of several tables: those with figures are drawn, one without (knob) is passed over
// and named.
TEST(Replot, ATableWithoutFiguresBesideOthersIsPassedOver) {
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot not on PATH";
  TempDir dir;
  const auto run = test::run_demo("--table knob,dk-std --samples 1000 --format json -q > " +
                                  dir.file("both.json"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string out = dir.file("out");
  const auto r = test::run_demo("replot " + dir.file("both.json") + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(out + "/dk-std.png"));
  EXPECT_NE(r.err.find("knob has no figures"), std::string::npos) << r.err;
}

// A result edited by hand whose data a figure cannot read (a field removed, a list cut short, a
// value of another type, a column removed) is refused in one line, exit 2, before any file is
// drawn: never read past a list's end.
TEST(Replot, DataAFigureCannotReadIsRefusedBeforeAnyFigure) {
  TempDir dir;
  const auto sweep =
      test::run_demo("--table attention-sweep --seeds 0:20 --steps 5 -q --format json");
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  const auto lesson = test::run_demo("--table qkv -q --format json");
  ASSERT_EQ(lesson.exit_code, 0) << lesson.err;
  const nlohmann::json s = nlohmann::json::parse(sweep.out), q = nlohmann::json::parse(lesson.out);
  ASSERT_TRUE(s["tables"][0].contains("scatter") && s["tables"][0].contains("first_loss_row"));
  using Damage = std::function<void(nlohmann::json&)>;
  const std::vector<std::tuple<std::string, nlohmann::json, Damage, std::string>> cases = {
      {"short-scatter", s, [](auto& t) { t["scatter"]["jsd"].erase(0); }, "is out of range"},
      {"short-range", s, [](auto& t) { t["jsd_histogram"]["range"] = {0}; }, "is out of range"},
      {"text-in-map", s, [](auto& t) { t["mean_map"][0][0] = "x"; }, "type must be number"},
      {"text-scatter", s, [](auto& t) { t["scatter"] = "not a scatter"; }, "cannot use"},
      {"no-first-row", s, [](auto& t) { t.erase("first_loss_row"); },
       "a JSON field that is not there"},
      {"no-values", q,
       [](auto& t) {
         t["columns"].erase(3);
         for (auto& r : t["rows"]) r.erase("values");
       },
       "has no column values"}};
  const std::string out = dir.file("out");
  for (const auto& [name, result, damage, says] : cases) {
    SCOPED_TRACE(name);
    nlohmann::json j = result;
    damage(j["tables"][0]);
    test::expect_refused("replot " + dir.write(name + ".json", j.dump()) + " --out " + out, 2,
                         {name + ".json: table ", "its data is not what demo writes", says},
                         test::Refusal().leaves_no(out));
  }
}

TEST(Replot, RefusesBadInputWithOneLine) {
  TempDir dir;
  const std::string out = dir.file("out");
  std::filesystem::create_directories(out);
  test::expect_refused("replot " + dir.file("missing.json") + " --out " + out, 2,
                       {"demo replot: error: " + dir.file("missing.json") + ": ", "no such file"});
  test::expect_refused("replot " + dir.write("text.json", "not json {") + " --out " + out, 2,
                       {"demo replot: error: ", "text.json: not JSON"});
  test::expect_refused("replot " + dir.write("list.json", "[1, 2]") + " --out " + out, 2,
                       {"not a result file"});
  test::expect_refused(
      "replot " + dir.write("nameless.json", R"({"provenance": {}, "tables": [{"rows": []}]})") +
          " --out " + out,
      2, {"not a result file"});
  test::expect_refused("replot " +
                           dir.write("other.json",
                                     R"({"provenance": {}, "tables": [{"name": "no-such-table",
                                         "columns": [], "rows": []}]})") +
                           " --out " + out,
                       2, {"no-such-table", "is not one of demo's"});
  // demo attention's result: named as such (its own run draws its figure).
  TempDir att;
  const std::string x = att.write("x.json", "[[1, 0], [0, 1]]");
  ASSERT_EQ(test::run_demo("attention --x " + x + " --w-q " + x + " --w-k " + x + " --w-v " + x +
                           " -q --no-plots --out " + att.file("o"))
                .exit_code,
            0);
  test::expect_refused("replot " + att.file("o/attention.json") + " --out " + out, 2,
                       {"a result of demo attention, whose figure its own run draws"});
  // A table without figures (knob writes none).
  TempDir knob;
  ASSERT_EQ(test::run_demo("--table knob -q --out " + knob.path.string()).exit_code, 0);
  test::expect_refused("replot " + knob.file("knob.json") + " --out " + out, 2,
                       {"table knob has no figures"});
  test::expect_refused("replot " + knob.file("knob.json"), 2, {"--out"});
  const std::string empty_sweep = dir.write(
      "sweep.json",
      R"({"provenance": {}, "tables": [{"name": "attention-sweep", "columns": [], "rows": []}]})");
  if (gnuplot_available()) {
    // A missing --out folder is made, as a run's is, and removed again when nothing is drawn.
    test::expect_refused("replot " + empty_sweep + " --out " + dir.file("nowhere"), 1,
                         {"hold no data for their figures"});
    EXPECT_FALSE(std::filesystem::exists(dir.file("nowhere")));
    test::expect_refused("replot " + empty_sweep + " --out /dev/null", 1,
                         {"--out /dev/null: not a folder"});
    const std::string not_utf8 = dir.file("o\xfe");
    std::filesystem::create_directories(not_utf8);
    test::expect_refused("replot " + empty_sweep + " --out '" + not_utf8 + "'", 1,
                         {"not valid UTF-8"});
  }
  EXPECT_TRUE(std::filesystem::is_empty(out));
}

}  // namespace
}  // namespace attn
