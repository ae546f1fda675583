// table_helpers.hpp: running a table in-process, as demo does, for the tests that link the
// tables (helpers.hpp holds what every test may use).
#pragma once

#include <map>
#include <stdexcept>
#include <string>

#include "experiments/registry.hpp"
#include "helpers.hpp"

namespace attn::test {

// The CPU backend with all its threads, selected once per test process.
inline const Backend& cpu_backend() {
  static const Backend b = Backend::select("cpu", 0);
  return b;
}

// The first table of the registered table `name`, run quietly on the CPU with these flags (flag
// -> text, as on the command line) over its defaults. Throws what the table throws.
inline Table run_table(const std::string& name,
                       const std::map<std::string, std::string>& flags = {}) {
  const Experiment* e = find_experiment(name);
  if (e == nullptr) throw std::invalid_argument("no table named " + name);
  Options o;
  o.quiet = true;
  return run_experiment(*e, o, flags, cpu_backend()).at(0);
}

}  // namespace attn::test
