// rnn_decay.cpp: section 1. In an RNN h_t = tanh(w h_{t-1} + x_t), ignoring tanh, word 1's
// effect after n later words is multiplied by w^n; the lesson's table has w = 0.5.
#include <cmath>

#include "experiments/registry.hpp"
#include "host/format.hpp"

namespace attn {

namespace {

std::vector<Table> run(const RunContext& ctx) {
  const double w = ctx.get<double>("--w");
  Table t;
  t.name = "rnn-decay";
  t.title =
      "the first word's effect after n later words is multiplied by w^n (w = " + human_number(w) +
      ")";
  t.columns = {{"n"}, {"w"}, {"factor", "%.3g"}};
  for (std::int64_t n : ctx.get<std::vector<std::int64_t>>("--n"))
    t.add_row({n, w, std::pow(w, static_cast<double>(n))});
  t.notes.push_back(
      "n = 3 answers the lesson's question; attention reads word 1 in one step at any distance");
  t.run = {{"w", w}};
  return {t};
}

}  // namespace

const Experiment& rnn_decay_experiment() {
  static const Experiment e{
      .name = "rnn-decay",
      .summary = "an RNN's first word fades as w^n (section 1)",
      .in_all = true,
      .params = {param::real("--w", "0.5", "RNN weight w", -1e6, 1e6, false),
                 param::int_list("--n", "1,2,3,5,10,50", "Numbers of later words", 0, 100000)},
      .run = run};
  return e;
}

}  // namespace attn
