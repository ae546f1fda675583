// options.hpp: everything the command line sets, already parsed and checked (host/cli.cpp).
// Per-table settings that the user did not give keep each table's own default, which is why
// several are std::optional.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host/format.hpp"
#include "host/parse.hpp"
#include "tiny_model.hpp"

namespace attn {

enum class RngChoice { auto_, numpy, philox };
enum class DType { f64, f32 };

struct Options {
  // Run
  std::vector<std::string> tables;  // experiment names, in order, "all" already expanded
  std::string device = "auto";      // auto | cpu | cuda
  int gpu = -1;                     // --gpu N: CUDA device ordinal (-1: first usable)
  Format format = Format::table;
  std::uint64_t seed = 0;
  int threads = 0;  // 0: all cores (the default); --threads takes 1 or more
  bool quiet = false, verbose = false;
  std::string out_dir;  // --out: write NAME.csv, NAME.json and figures there
  bool force = false;   // --force: replace existing files under --out
  bool plots = true;    // --no-plots turns figures off
  std::string command_line;

  // rnn-decay
  double rnn_w = 0.5;
  std::vector<std::int64_t> rnn_n = {1, 2, 3, 5, 10, 50};

  // knob
  double knob_lr = 1.0;
  std::vector<std::int64_t> knob_steps = {0, 1, 10, 100, 1000};

  // dk-std and softmax-saturation
  std::optional<std::vector<std::int64_t>> dk;  // dk-std: 2,64,512; saturation: 1..1024
  std::optional<std::uint64_t> samples;         // dk-std: 10000; saturation: 100000 rows
  RngChoice rng = RngChoice::auto_;
  int keys = 3;

  // training and training-sweep
  std::optional<std::vector<std::string>> configs;
  std::optional<SeedSet> seeds;  // training: 0,1; sweep: 0:100000
  tiny::TrainOptions train;
  DType dtype = DType::f64;
  double converged_below = 1e-4;
  std::string per_seed_file;
};

}  // namespace attn
