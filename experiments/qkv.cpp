// qkv.cpp: section 3, Q = X W_Q, K = X W_K, V = X W_V with hand-written matrices:
// swapped keys (still symmetric), one-way keys (not symmetric), V keeps only x (same weights,
// outputs lose y); and the shape of Q K^T for 5 words with d_k = 4.
#include <cmath>

#include "experiments/registry.hpp"
#include "experiments/small_attention.hpp"

namespace attn {
namespace {

bool symmetric3(const std::array<double, 9>& s) {
  return s[1] == s[3] && s[2] == s[6] && s[5] == s[7];
}

std::vector<Table> run(const RunContext& ctx) {
  const auto I = kIdentity2;
  const Mat22 swap = {0, 1, 1, 0}, one_way = {0, 0, 1, 0}, keep_x = {1, 0, 0, 0};
  const std::vector<SmallCase> cases = {{"identity", kCatDogCar, I, I, I},
                                        {"swapped keys", kCatDogCar, I, swap, I},
                                        {"one-way keys", kCatDogCar, I, one_way, I},
                                        {"V keeps only x", kCatDogCar, I, I, keep_x}};
  const auto scaled = run_small(ctx.backend, cases);
  const auto raw = run_small(ctx.backend, cases, 1.0);

  Table t;
  t.name = "qkv";
  t.title = "Q, K, V from W_Q, W_K, W_V: who looks at whom, and what is copied";
  t.columns = matrix_columns();
  for (std::size_t c = 1; c < cases.size(); ++c) {
    const std::string& name = cases[c].name;
    add_matrix_rows(t, name, "K = X W_K", scaled[c].k.data(), 3, 2, kWords);
    add_matrix_rows(t, name, "scores Q K^T", raw[c].scores.data(), 3, 3, kWords);
    t.add_row(
        {name, "scores symmetric", "-", std::string(symmetric3(raw[c].scores) ? "yes" : "no")});
    add_matrix_rows(t, name, "weights", scaled[c].weights.data(), 3, 3, kWords);
    add_matrix_rows(t, name, "output", scaled[c].out.data(), 3, 2, kWords);
  }

  // Q and K of (5, 4) through the same batched score kernel: the scores are (5, 5).
  const int n = 5, d = 4;
  std::vector<double> x(n * d), w(d * d, 0.0), q(n * d), k(n * d), v(n * d), s(n * n), p(n * n),
      o(n * d);
  for (int i = 0; i < n * d; ++i) x[i] = std::sin(1.0 + i);  // any words will do
  for (int i = 0; i < d; ++i) w[i * d + i] = 1;
  AttentionProblem<double> prob{AttentionShape{1, n, d, d, d, true, false, 0},
                                x.data(),
                                w.data(),
                                w.data(),
                                w.data(),
                                q.data(),
                                k.data(),
                                v.data(),
                                s.data(),
                                p.data(),
                                o.data()};
  ctx.backend.attention_forward(prob);
  t.add_row({"5 words, d_k = 4", "shape of Q K^T", "-",
             std::vector<double>{double(n), double(s.size() / n)}});

  t.run["setup"] = "X: " + words_text(kCatDogCar) +
                   "; W_Q = W_K = W_V = I but the one named; weights = softmax(Q K^T / sqrt(2))";
  t.run["cases"] = {{"swapped keys", "W_K = " + matrix_text(swap)},
                    {"one-way keys", "W_K = " + matrix_text(one_way)},
                    {"V keeps only x", "W_V = " + matrix_text(keep_x)}};

  const bool same = scaled[3].weights == scaled[0].weights;
  t.notes = {
      "swapped keys: cat's weights " + fixed(scaled[1].weights[0], 3) + ", " +
          fixed(scaled[1].weights[1], 3) + ", " + fixed(scaled[1].weights[2], 3) +
          ": cat looks mostly at car",
      "one-way keys: score of car looking at cat = " + fixed(raw[2].scores[6], 0) +
          ", cat looking at car = " + fixed(raw[2].scores[2], 0),
      std::string("V keeps only x: weights identical to W_V = I: ") + (same ? "yes" : "no"),
  };
  return {t};
}

}  // namespace

const Experiment& qkv_experiment() {
  static const Experiment e{.name = "qkv",
                            .summary = "swapped and one-way keys, V keeps only x (section 3)",
                            .in_all = true,
                            .runs = Runs::backend,
                            .figures = {{"qkv-weights", true, weight_heatmaps_script}},
                            .run = run};
  return e;
}

}  // namespace attn
