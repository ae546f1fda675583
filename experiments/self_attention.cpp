// self_attention.cpp: section 6, the checkpoint: self_attention(X, W_Q, W_K, W_V) on cat, dog,
// car for three sets of matrices, one batched call.
#include "experiments/registry.hpp"
#include "experiments/small_attention.hpp"

namespace attn {

namespace {

std::vector<Table> run(const RunContext& ctx) {
  const auto I = kIdentity2;
  const Mat22 swap = {0, 1, 1, 0}, keep_x = {1, 0, 0, 0};
  const std::vector<SmallCase> cases = {{"all identity", kCatDogCar, I, I, I},
                                        {"swapped keys", kCatDogCar, I, swap, I},
                                        {"V keeps only x", kCatDogCar, I, I, keep_x}};
  const auto r = run_small(ctx.backend, cases);
  Table t;
  t.name = "self-attention";
  t.title = "one attention head: softmax(X W_Q (X W_K)^T / sqrt(d_k)) X W_V";
  t.columns = matrix_columns();
  for (std::size_t c = 0; c < cases.size(); ++c)
    add_matrix_rows(t, cases[c].name, "output", r[c].out.data(), 3, 2, kWords);
  return {t};
}

}  // namespace

const Experiment& self_attention_experiment() {
  static const Experiment e{.name = "self-attention",
                            .summary = "one attention head end to end (section 6)",
                            .in_all = true,
                            .runs = Runs::backend,
                            .run = run};
  return e;
}

}  // namespace attn
