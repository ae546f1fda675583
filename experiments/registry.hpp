// registry.hpp: the list of experiments `demo --table` knows (what an experiment is:
// host/experiment.hpp).
//
// An experiment is one file in experiments/ that defines one Experiment; its output is a Table of
// the same name. Adding an experiment is that file plus one line in registry.cpp
// (docs/ADDING_AN_EXPERIMENT.md walks through an example). The program's
// main gives this list to the command line (host/cli.hpp); nothing in host/ includes it.
#pragma once

#include <string>
#include <vector>

#include "host/experiment.hpp"

namespace attn {

// Every experiment, in the order of --table all and --list.
const std::vector<Experiment>& experiments();
// nullptr when no experiment has that name.
const Experiment* find_experiment(const std::string& name);

}  // namespace attn
