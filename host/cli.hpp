// cli.hpp: the `demo` command line (CLI11): options, validation, help with examples.
#pragma once

#include <string>
#include <vector>

#include "host/attention_command.hpp"
#include "host/compare.hpp"
#include "host/experiment.hpp"
#include "host/options.hpp"

namespace attn {

struct CompareRequest {
  std::string a, b;
  CompareRule rule;  // --tolerance (rtol), --atol
};

struct Cli {
  enum class Action { run, compare, merge, replot, done };
  Action action = Action::run;
  int exit_code = 0;  // for Action::done (help, version, list: 0; errors: 2)
  Options options;
  CompareRequest compare;
  AttentionRequest attention;           // `demo attention` (host/attention_command.hpp)
  std::vector<std::string> merge_dirs;  // demo merge DIR...
  std::string replot_file;              // demo replot RESULT.json (its --out: options.out_dir)
  std::vector<std::string> warnings;    // e.g. options that none of the chosen experiments uses
};

// Parses and checks everything before any work starts, for the experiments in `all` (the program's
// registry, experiments/registry.hpp: main hands it over). Help, --version and --list print to
// stdout; errors print one line to stderr; with speak false neither prints (a process a
// launcher started beside rank 0, which speaks for the job). Neither throws.
Cli parse_command_line(int argc, char** argv, const std::vector<Experiment>& all,
                       bool speak = true);

}  // namespace attn
