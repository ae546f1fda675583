// options.hpp: the run's global options, already parsed and checked (host/cli.cpp). What an
// experiment reads is declared by the experiment itself (host/settings.hpp,
// experiments/registry.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "host/format.hpp"

namespace attn {

struct Options {
  // The experiments --table picks (by their tables' names), in order, "all" already expanded.
  std::vector<std::string> experiments;
  // Experiment flags the user gave (flag -> text), handed to each chosen experiment that
  // declares them.
  std::map<std::string, std::string> given;
  std::string device = "auto";  // auto | cpu | cuda
  int gpu = -1;                 // --gpu N: CUDA device ordinal (-1: the first usable one)
  Format format = Format::table;
  int threads = 0;  // 0: all cores (the default); --threads takes 1 or more
  bool quiet = false, verbose = false;
  std::string out_dir;  // --out: write NAME.csv, NAME.json and figures there
  bool force = false;   // --force: replace existing files under --out (and output-file flags)
  bool plots = true;    // --no-plots turns figures off
  std::string command_line;
  std::vector<std::string> argv;  // the words of the command line, argv[0] as "demo"
  // Beyond one process (host/chunks.hpp): --shard I/N (shards == 0: off), --checkpoint FILE
  // saved every checkpoint_seconds and at Ctrl-C.
  std::uint64_t shard = 0, shards = 0;
  std::string checkpoint;
  double checkpoint_seconds = 30;
  // demo merge: the parts its results come from (0: a run of its own), for the provenance.
  std::size_t merged_parts = 0;
};

}  // namespace attn
