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

std::vector<Table> run_experiment(const Experiment& e, const Options& opt,
                                  const std::map<std::string, std::string>& given,
                                  const Backend& backend) {
  std::map<std::string, std::string> mine;  // the flags this table declares; others ignored
  for (const Param& p : e.params)
    if (given.count(p.flag)) mine[p.flag] = given.at(p.flag);
  const Settings settings = Settings::parse(e.params, mine);
  const std::uint64_t calls = backend.kernel_calls();
  std::vector<Table> tables = e.run(RunContext{opt, settings, backend});
  // The one place a table's backend is named: what actually ran its kernels.
  const char* ran_on = backend.kernel_calls() != calls ? backend.name() : "host";
  for (Table& t : tables) t.run["backend"] = ran_on;
  return tables;
}

}  // namespace attn
