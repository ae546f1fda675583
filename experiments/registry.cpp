// registry.cpp: see registry.hpp. The order here is the order of --table all and --list.
#include "experiments/registry.hpp"

namespace attn {

const std::vector<Experiment>& experiments() {
  static const std::vector<Experiment> all = {
      {"rnn-decay", "an RNN's first word fades as w^n (section 1)", true, run_rnn_decay},
      {"weighted-average", "scores, weights and outputs with Q = K = V = X (section 2)", true,
       run_weighted_average},
      {"qkv", "swapped and one-way keys, V keeps only x (section 3)", true, run_qkv},
      {"knob", "gradient descent on the one knob c (section 4)", true, run_knob},
      {"dk-std", "std of q.k grows like sqrt(d_k); scaling restores 1 (section 5)", true,
       run_dk_std},
      {"training", "train W_Q, W_K, W_V: same loss, different attention (section 4)", true,
       run_training},
      {"self-attention", "one attention head end to end (section 6)", true, run_self_attention},
      {"softmax-saturation", "max weight, entropy, Jacobian norm vs d_k, scaled or not (beyond)",
       false, run_softmax_saturation},
      {"training-sweep", "the training comparison over many seeds (beyond)", false,
       run_training_sweep},
  };
  return all;
}

const Experiment* find_experiment(const std::string& name) {
  for (const auto& e : experiments())
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace attn
