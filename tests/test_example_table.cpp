// test_example_table.cpp: the worked example of docs/ADDING_AN_EXPERIMENT.md
// (docs/examples/softmax_temperature.cpp) is a working table: one file, nothing else changed,
// and everything the driver does for a table works for it.
#include <gtest/gtest.h>

#include <cmath>

#include "experiments/registry.hpp"
#include "helpers.hpp"

namespace attn {
const Experiment& softmax_temperature_experiment();
namespace {

TEST(ExampleTable, RunsWithItsDefaultsAndGivenFlags) {
  const Experiment& e = softmax_temperature_experiment();
  EXPECT_EQ(find_experiment(e.name), nullptr);  // kept out of the product
  Options o;
  o.quiet = true;
  const Backend cpu = Backend::select("cpu", 1);
  const Table t = run_experiment(e, o, {{"--temperatures", "1,100"}, {"--keys", "3"}}, cpu).at(0);
  ASSERT_EQ(t.rows.size(), 2u);
  for (const auto& r : t.rows) {
    const double T = static_cast<double>(std::get<std::int64_t>(r[0]));
    // Exact: the largest weight is 1 / sum_j exp((j - (n - 1)) / T).
    double sum = 0;
    for (int j = 0; j < 3; ++j) sum += std::exp((j - 2) / T);
    EXPECT_NEAR(std::get<double>(r[1]), 1 / sum, 1e-15) << T;
  }
  EXPECT_EQ(t.run["backend"], "host");
  EXPECT_EQ(run_experiment(e, o, {}, cpu).at(0).rows.size(), 5u);  // the declared default
  EXPECT_THROW((void)run_experiment(e, o, {{"--keys", "0"}}, cpu), std::invalid_argument);
  EXPECT_EQ(figure_names(e.figures),
            (std::vector<std::string>{"softmax-temperature.png", "softmax-temperature.svg"}));
  EXPECT_NE(e.figures[0].script(t).find("$D << EOD"), std::string::npos);
}

}  // namespace
}  // namespace attn
