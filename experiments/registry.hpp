// registry.hpp: the list of tables `demo --table` knows (what a table is: host/experiment.hpp).
//
// A table is one file in experiments/ that defines one Experiment. Adding a table is that file
// plus one line in registry.cpp (docs/ADDING_A_TABLE.md walks through an example). The program's
// main gives this list to the command line (host/cli.hpp); nothing in host/ includes it.
#pragma once

#include <string>
#include <vector>

#include "host/experiment.hpp"

namespace attn {

// Every table, in the order of --table all and --list.
const std::vector<Experiment>& experiments();
// nullptr when no experiment has that name.
const Experiment* find_experiment(const std::string& name);

}  // namespace attn
