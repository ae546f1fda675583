// softmax_temperature.cpp: the worked example of docs/ADDING_AN_EXPERIMENT.md. An experiment
// with two options and a figure, in one file. It is not part of the product: it is not listed in
// experiments/registry.cpp; tests/test_example_table.cpp compiles and runs it.
//
// What it shows: softmax of the scores (0, 1, ..., n-1) / T. As the temperature T falls the
// weights saturate on the largest score; the largest weight is 1 / sum_j exp((j - (n-1)) / T)
// (exact, the formula in the test).
#include <cmath>
#include <sstream>

#include "experiments/registry.hpp"
#include "host/format.hpp"
#include "softmax.hpp"

namespace attn {
namespace {

// The figure: the largest weight against T (log scale).
std::string figure_script(const Table& t) {
  std::ostringstream s;
  s << "$D << EOD\n";
  for (const auto& r : t.rows)
    s << round_trip(plot::num(r[0])) << " " << round_trip(plot::num(r[1])) << "\n";
  s << "EOD\nset logscale x\nset xlabel 'temperature T'\nset ylabel 'largest weight'\n"
    << "set yrange [0:1.05]\nset grid\nplot $D using 1:2 with linespoints pt 7 notitle\n";
  return s.str();
}

std::vector<Table> run(const RunContext& ctx) {
  const int keys = static_cast<int>(ctx.get<std::int64_t>("--keys"));
  const auto& temperatures = ctx.get<std::vector<std::int64_t>>("--temperatures");
  Table t;
  t.name = "softmax-temperature";
  t.title = "softmax of scores 0..n-1 divided by T: low T saturates";
  t.columns = {{"T"}, {"max_weight", "%.4f"}};
  std::vector<double> scores(keys), weights(keys);
  for (std::int64_t T : temperatures) {
    for (int j = 0; j < keys; ++j) scores[j] = j;
    softmax_row(scores.data(), weights.data(), keys, 1.0 / static_cast<double>(T), keys);
    t.add_row({T, weights[keys - 1]});
  }
  return {t};
}

}  // namespace

const Experiment& softmax_temperature_experiment() {
  static const Experiment e{
      // --table NAME and the file stem; the line for --list
      .name = "softmax-temperature",
      .summary = "softmax saturates as the temperature falls (an example table)",
      .in_all = false,     // not in --table all
      .runs = Runs::host,  // plain arithmetic; Runs::backend if it calls kernels
      // what it reads, what it draws, and the --help example
      .params = {param::integer("--keys", "4", "Keys per row", 1, 65536),
                 param::int_list("--temperatures", "1,2,4,8,16", "Temperatures T", 1, 1000000)},
      .figures = {{"softmax-temperature", false, figure_script}},
      .examples = {"demo --table softmax-temperature --temperatures 1,10,100"},
      .run = run};
  return e;
}

}  // namespace attn
