// registry.hpp: the experiments `demo --table` knows, one file each in experiments/.
#pragma once

#include <string>
#include <vector>

#include "host/backend.hpp"
#include "host/options.hpp"
#include "host/table.hpp"

namespace attn {

struct RunContext {
  const Options& opt;
  const Backend& backend;
};

struct Experiment {
  std::string name;     // what --table takes
  std::string summary;  // one line for --list
  bool in_all;          // part of --table all (the lesson's own tables)
  std::vector<Table> (*run)(const RunContext&);
};

const std::vector<Experiment>& experiments();
// nullptr when no experiment has that name.
const Experiment* find_experiment(const std::string& name);

// The experiments' entry points (one per file).
std::vector<Table> run_rnn_decay(const RunContext&);
std::vector<Table> run_weighted_average(const RunContext&);
std::vector<Table> run_qkv(const RunContext&);
std::vector<Table> run_knob(const RunContext&);
std::vector<Table> run_dk_std(const RunContext&);
// dk-std's generator choice: numpy, philox, or auto (numpy while the run needs <= 1e8 normals).
bool dkstd_uses_numpy(RngChoice rng, double normals);
std::vector<Table> run_training(const RunContext&);
std::vector<Table> run_self_attention(const RunContext&);
std::vector<Table> run_softmax_saturation(const RunContext&);
std::vector<Table> run_training_sweep(const RunContext&);

}  // namespace attn
