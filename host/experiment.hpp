// experiment.hpp: what an experiment is. An experiment (one file in experiments/) defines one
// Experiment: its name, what it reads (its Params, with defaults and help, declared once), what
// it draws (its Figures), where it runs, and the function that computes its output, a Table
// (host/table.hpp) of the same name. The driver (host/) knows experiments only through this type;
// the list of them is experiments/registry.hpp's, which the program's main hands to the command
// line.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "host/backend.hpp"
#include "host/options.hpp"
#include "host/plots.hpp"
#include "host/settings.hpp"
#include "host/table.hpp"

namespace attn {

struct RunContext {
  const Options& opt;        // the run's global options (format, quiet, --out, --force, ...)
  const Settings& settings;  // this experiment's own values (its Params), parsed and checked
  const Backend& backend;    // where kernels run; every kernel call goes through it
  int ranks = 1;             // processes in the run's MPI job (1 without one); the driver's word
  template <class T>
  const T& get(const std::string& flag) const {
    return settings.get<T>(flag);
  }
};

// Where an experiment's numbers are computed: on the host alone (plain arithmetic), or by
// kernels on the run's backend (CPU twin or GPU). Its table's provenance names the one that ran.
enum class Runs { host, backend };

// An experiment is declared with designated initializers, in this order, leaving out the fields
// that keep their defaults (docs/ADDING_AN_EXPERIMENT.md):
//   static const Experiment e{.name = "NAME", .summary = "...", .in_all = true,
//                             .runs = Runs::backend, .params = {...}, .figures = {...},
//                             .examples = {...}, .run = run, .chunked = true};
struct Experiment {
  std::string name;        // its table's name: what --table takes; the file stem under --out
  std::string summary;     // one line for --list
  bool in_all = false;     // part of --table all (the lesson's own experiments)
  Runs runs = Runs::host;  // where its numbers are computed
  // What it reads: its flags, with defaults and help (host/settings.hpp).
  std::vector<Param> params = {};
  std::vector<Figure> figures = {};        // what it draws (host/plots.hpp)
  std::vector<std::string> examples = {};  // --help lines: "demo --table NAME ...   what it does"
  std::vector<Table> (*run)(const RunContext&) = nullptr;  // computes its tables
  // A bulk experiment: its work goes through the chunk driver (host/chunks.hpp), so it can be split
  // over MPI ranks and --shard parts, and resumed from --checkpoint.
  bool chunked = false;
};

// Runs one experiment with the flags in `given` (flag -> text, as on the command line; flags the
// experiment does not declare are ignored) over its defaults, and records in each table's
// provenance the backend that computed it. ranks: the processes of the run's MPI job
// (RunContext). This is what demo does per experiment; tests call it too. Throws what
// Settings::parse and the experiment throw.
std::vector<Table> run_experiment(const Experiment& e, const Options& opt,
                                  const std::map<std::string, std::string>& given,
                                  const Backend& backend, int ranks = 1);

}  // namespace attn
