// rnn_decay.cpp: section 1. In an RNN h_t = tanh(w h_{t-1} + x_t), ignoring tanh, word 1's
// effect after n later words is multiplied by w^n; the lesson's table has w = 0.5.
#include <cmath>

#include "experiments/registry.hpp"
#include "host/format.hpp"

namespace attn {

std::vector<Table> run_rnn_decay(const RunContext& ctx) {
  Table t;
  t.name = "rnn-decay";
  t.title = "the first word's effect after n later words is multiplied by w^n (w = " +
            human_number(ctx.opt.rnn_w) + ")";
  t.columns = {{"n"}, {"w"}, {"factor", "%.3g"}};
  for (std::int64_t n : ctx.opt.rnn_n)
    t.add_row({n, ctx.opt.rnn_w, std::pow(ctx.opt.rnn_w, static_cast<double>(n))});
  t.notes.push_back(
      "n = 3 answers the lesson's question; attention reads word 1 in one step at any distance");
  t.run = {{"backend", "host"}, {"w", ctx.opt.rnn_w}};
  return {t};
}

}  // namespace attn
