// knob.cpp: section 4's lab. apple = [1, 0], sweet = [0, 1]; W_K = W_V = I and
// W_Q = [[0, 0], [c, 0]], so sweet's weight on apple is p = sigma(c / sqrt(2)) and the loss is
// 2 (1 - p)^2. Gradient descent on c alone from c = 0, with the training model's own analytic
// gradient (tiny_model.hpp), which here equals -4 (1 - p) p (1 - p) / sqrt(2).
#include <algorithm>

#include "experiments/registry.hpp"
#include "experiments/small_attention.hpp"
#include "host/progress.hpp"
#include "tiny_model.hpp"

namespace attn {

namespace {

std::vector<Table> run(const RunContext& ctx) {
  const double lr = ctx.get<double>("--knob-lr");
  tiny::Params<double> p{};
  for (int m = 1; m < 3; ++m) p.w[m][0][0] = p.w[m][1][1] = 1.0;  // W_K = W_V = I, W_Q = 0
  Table t;
  t.name = "knob";
  t.title = "gradient descent on c, from c = 0 with lr = " + human_number(lr);
  t.columns = {{"step"},
               {"c", "%.3f"},
               {"weight_on_apple", "%.3f"},
               {"loss", "~%.5f"},
               {"dloss_dc", "~%.5f"}};
  std::vector<std::int64_t> report = ctx.get<std::vector<std::int64_t>>("--knob-steps");
  std::sort(report.begin(), report.end());
  const std::int64_t last = report.back();
  const double weight_at_zero = tiny::forward(p).a[0];
  std::size_t next = 0;
  double previous_c = 0, previous_step_size = 1e300;
  bool growing_slower = true;
  for (std::int64_t step = 0; step <= last; ++step) {
    if ((step & 0xFFFF) == 0) stop_point();  // every 65536 steps of a few FLOPs each
    double g[2][2];
    tiny::analytic_grad(p, 0, g);
    const auto f = tiny::forward(p);
    while (next < report.size() && report[next] == step) {
      t.add_row({step, p.w[0][1][0], f.a[0], tiny::loss_of(f), g[1][0]});
      ++next;
    }
    if (step == last) break;  // the steps the table spans, no more
    p.w[0][1][0] -= lr * g[1][0];
    const double step_size = p.w[0][1][0] - previous_c;
    growing_slower = growing_slower && step_size > 0 && step_size <= previous_step_size;
    previous_step_size = step_size;
    previous_c = p.w[0][1][0];
  }
  t.notes = {"at c = 0 sweet's weight on apple is " + fixed(weight_at_zero, 3),
             last == 0
                 ? std::string("no step taken (--knob-steps reports step 0 only)")
                 : std::string("c grows at every step, each step smaller than the last: ") +
                       (growing_slower ? "yes" : "no") + " (softmax reaches 1 only at infinity)"};
  t.run = {{"lr", lr}};
  return {t};
}

}  // namespace

const Experiment& knob_experiment() {
  static const Experiment e{
      .name = "knob",
      .summary = "gradient descent on the one knob c (section 4)",
      .in_all = true,
      .params = {param::real("--knob-lr", "1.0", "Learning rate for c", 0, 1e6, true),
                 param::int_list("--knob-steps", "0,1,10,100,1000", "Steps to report", 0,
                                 100000000)},
      .run = run};
  return e;
}

}  // namespace attn
