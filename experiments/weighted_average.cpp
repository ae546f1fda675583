// weighted_average.cpp: section 2, attention with Q = K = V = X for cat, dog, car:
// scores = X X^T, weights = softmax(scores / sqrt(2)), output = weights X; then the same
// without scaling, with car moved to [5, 5], and with three equal words.
#include "experiments/registry.hpp"
#include "experiments/small_attention.hpp"
#include "host/format.hpp"

namespace attn {

namespace {

std::vector<Table> run(const RunContext& ctx) {
  const Mat32 car55 = {2, 0, 1, 1, 5, 5};
  const Mat32 equal = {1, 1, 1, 1, 1, 1};
  const auto I = kIdentity2;
  const auto scaled = run_small(ctx.backend, {{"lesson", kCatDogCar, I, I, I},
                                              {"car=[5,5]", car55, I, I, I},
                                              {"all equal", equal, I, I, I}});
  const auto raw = run_small(ctx.backend, {{"lesson", kCatDogCar, I, I, I}}, 1.0);

  Table t;
  t.name = "weighted-average";
  t.title = "Q = K = V = X: scores, softmax weights, weighted average (cat, dog, car)";
  t.columns = matrix_columns();
  add_matrix_rows(t, "lesson", "scores X X^T", raw[0].scores.data(), 3, 3, kWords);
  add_matrix_rows(t, "lesson", "weights, no scaling", raw[0].weights.data(), 3, 3, kWords);
  add_matrix_rows(t, "lesson", "scores / sqrt(2)", scaled[0].scores.data(), 3, 3, kWords);
  add_matrix_rows(t, "lesson", "weights", scaled[0].weights.data(), 3, 3, kWords);
  add_matrix_rows(t, "lesson", "output", scaled[0].out.data(), 3, 2, kWords);
  add_matrix_rows(t, "car=[5,5]", "weights", scaled[1].weights.data(), 3, 3, kWords);
  add_matrix_rows(t, "all equal", "weights", scaled[2].weights.data(), 3, 3, kWords);
  t.run["setup"] =
      "Q = K = V = X (W_Q = W_K = W_V = I, d_k = 2); weights = softmax(Q K^T / sqrt(2)), "
      "\"no scaling\": softmax(Q K^T)";
  t.run["cases"] = {{"lesson", "X: " + words_text(kCatDogCar)},
                    {"car=[5,5]", "X: " + words_text(car55)},
                    {"all equal", "X: " + words_text(equal)}};
  const auto& w = scaled[0].weights;
  t.notes = {
      "score of cat looking at dog (before scaling): " + fixed(raw[0].scores[1], 0),
      "cat on itself without scaling: " + fixed(raw[0].weights[0], 2),
      "first number (x) of cat's output: " + fixed(scaled[0].out[0], 2),
      "weights[0][2] = " + fixed(w[2], 3) + ": cat (row 0) looks at car (column 2)",
      "car = [5, 5]: car's row " + display_real(scaled[1].weights[6], "~%.3f") + ", " +
          display_real(scaled[1].weights[7], "~%.3f") + ", " +
          display_real(scaled[1].weights[8], "~%.3f") + ": car looks almost only at itself",
  };
  return {t};
}

}  // namespace

const Experiment& weighted_average_experiment() {
  static const Experiment e{.name = "weighted-average",
                            .summary = "scores, weights and outputs with Q = K = V = X (section 2)",
                            .in_all = true,
                            .runs = Runs::backend,
                            .figures = {{"weighted-average-weights", true, weight_heatmaps_script}},
                            .run = run};
  return e;
}

}  // namespace attn
