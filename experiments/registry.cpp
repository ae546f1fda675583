// registry.cpp: see registry.hpp. One line per table below; its order is the order of
// --table all and --list.
#include "experiments/registry.hpp"

#define ATTN_EXPERIMENTS(X) \
  X(rnn_decay)              \
  X(weighted_average)       \
  X(qkv)                    \
  X(knob)                   \
  X(dk_std)                 \
  X(training)               \
  X(self_attention)         \
  X(softmax_saturation)     \
  X(training_sweep)         \
  X(attention_sweep)

namespace attn {

// Each table's file defines `const Experiment& NAME_experiment()`.
#define ATTN_DECLARE(name) const Experiment& name##_experiment();
ATTN_EXPERIMENTS(ATTN_DECLARE)
#undef ATTN_DECLARE

const std::vector<Experiment>& experiments() {
#define ATTN_LIST(name) name##_experiment(),
  static const std::vector<Experiment> all = {ATTN_EXPERIMENTS(ATTN_LIST)};
#undef ATTN_LIST
  return all;
}

const Experiment* find_experiment(const std::string& name) {
  for (const auto& e : experiments())
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace attn
