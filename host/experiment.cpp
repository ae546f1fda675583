// experiment.cpp: see experiment.hpp.
#include "host/experiment.hpp"

namespace attn {

std::vector<Table> run_experiment(const Experiment& e, const Options& opt,
                                  const std::map<std::string, std::string>& given,
                                  const Backend& backend, int ranks) {
  std::map<std::string, std::string> mine;  // the flags this table declares; others ignored
  for (const Param& p : e.params)
    if (given.count(p.flag)) mine[p.flag] = given.at(p.flag);
  const Settings settings = Settings::parse(e.params, mine);
  const std::uint64_t calls = backend.kernel_calls();
  std::vector<Table> tables = e.run(RunContext{opt, settings, backend, ranks});
  // The one place a table's backend is named: what actually ran its kernels.
  const char* ran_on = backend.kernel_calls() != calls ? backend.name() : "host";
  for (Table& t : tables) t.run["backend"] = ran_on;
  return tables;
}

}  // namespace attn
