// cli.cpp: see cli.hpp.
#include "host/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "experiments/registry.hpp"
#include "experiments/training_common.hpp"
#include "version.hpp"

namespace attn {
namespace {

constexpr const char* kExamples = R"(Examples:
  demo                                   every table of the lesson (--table all)
  demo --table dk-std                    the sqrt(d_k) table, the lesson's numpy stream
  demo --table dk-std --dk 2,64,512 --samples 1e9 --rng philox   (seconds on a GPU,
                                         about 10 minutes on 2 CPU cores)
  demo --table training --grad analytic --format csv
  demo --table training-sweep --seeds 0:1000000 --grad analytic --per-seed runs.csv
  demo --table softmax-saturation --keys 8
  demo --table all --out results/cpu     CSV, JSON and figures per table
  demo compare results/cpu/dk-std.json today/dk-std.json --tolerance 1e-12
)";

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_=/.,:+@%") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string list_text() {
  std::string s = "Tables (--table NAME, or a comma list; 'all' is the lesson's tables):\n";
  for (const auto& e : experiments()) {
    std::string name = e.name;
    name.resize(20, ' ');
    s += "  " + name + e.summary + (e.in_all ? "" : "  [not in all]") + "\n";
  }
  return s;
}

}  // namespace

Cli parse_command_line(int argc, char** argv) {
  Cli cli;
  Options& o = cli.options;
  CLI::App app{"attnlab demo: the self-attention lesson's experiments, on a GPU or the CPU",
               "demo"};
  app.footer(kExamples);
  app.set_version_flag("--version", std::string("attnlab ") + kVersion + " (" + kGitCommit +
                                        (kBuiltWithCuda ? ", CUDA and CPU" : ", CPU only") + ")");

  std::string table = "all", device = "auto", format = "table", seed = "0", threads;
  bool list = false, no_plots = false;
  app.add_option("--table", table, "Table(s) to make: a name, a comma list, or all")
      ->capture_default_str();
  app.add_flag("--list", list, "List the tables and exit");
  app.add_option("--device", device, "auto | cpu | cuda")->capture_default_str();
  app.add_option("--format", format, "table | csv | json | markdown")->capture_default_str();
  app.add_option("--seed", seed, "Seed for the random tables (dk-std, softmax-saturation)")
      ->capture_default_str();
  app.add_option("--threads", threads, "CPU threads (default: all cores)");
  app.add_flag("--quiet,-q", o.quiet, "No progress and no notices on stderr");
  app.add_flag("--verbose,-v", o.verbose, "More log lines on stderr");
  app.add_option("--out", o.out_dir, "Also write NAME.csv, NAME.json and figures into DIR");
  app.add_flag("--force", o.force, "Replace existing regular files under --out and --per-seed");
  app.add_flag("--no-plots", no_plots, "With --out: no figures");

  std::string rnn_w = "0.5", rnn_n = "1,2,3,5,10,50";
  auto* g_rnn = app.add_option_group("rnn-decay");
  g_rnn->add_option("--w", rnn_w, "RNN weight w")->capture_default_str();
  g_rnn->add_option("--n", rnn_n, "Numbers of later words")->capture_default_str();

  std::string knob_lr = "1.0", knob_steps = "0,1,10,100,1000";
  auto* g_knob = app.add_option_group("knob");
  g_knob->add_option("--knob-lr", knob_lr, "Learning rate for c")->capture_default_str();
  g_knob->add_option("--knob-steps", knob_steps, "Steps to report")->capture_default_str();

  std::string dk, samples, rng = "auto", keys = "3";
  auto* g_dk = app.add_option_group("dk-std and softmax-saturation");
  g_dk->add_option("--dk", dk, "d_k values (dk-std: 2,64,512; saturation: 1,2,4,...,1024)");
  g_dk->add_option("--samples", samples,
                   "Samples per d_k, e.g. 10000 or 1e9 (dk-std: 10000; saturation rows: 10000)");
  g_dk->add_option("--rng", rng,
                   "dk-std generator: numpy (the lesson's stream), philox (counter-based), or "
                   "auto (numpy up to 1e8 normals)")
      ->capture_default_str();
  g_dk->add_option("--keys", keys, "softmax-saturation: keys per row")->capture_default_str();

  std::string configs, seeds, steps = "3000", lr = "0.5", grad = "numeric", h = "1e-5",
                              schedule = "sequential", dtype = "f64", converged = "1e-4";
  auto* g_tr = app.add_option_group("training and training-sweep");
  g_tr->add_option("--configs", configs,
                   "qk-identity, all-identity, all-random, qk-random (training: all four; "
                   "sweep: all-random,qk-random)");
  g_tr->add_option("--seeds", seeds, "Seeds: a list 0,1 or a range A:B (sweep: 0:100000)");
  g_tr->add_option("--steps", steps, "Gradient steps")->capture_default_str();
  g_tr->add_option("--lr", lr, "Learning rate")->capture_default_str();
  g_tr->add_option("--grad", grad, "numeric (the lesson's central differences) | analytic")
      ->capture_default_str();
  g_tr->add_option("--h", h, "Step of the numeric gradient")->capture_default_str();
  g_tr->add_option("--schedule", schedule,
                   "sequential (the lesson's: W_Q, then W_K, then W_V) | simultaneous")
      ->capture_default_str();
  g_tr->add_option("--dtype", dtype, "f64 | f32")->capture_default_str();
  g_tr->add_option("--converged-below", converged, "Sweep: a run converged if its loss ends below")
      ->capture_default_str();
  g_tr->add_option("--per-seed", o.per_seed_file, "Sweep: write one CSV row per run to FILE");

  auto* cmp = app.add_subcommand("compare", "Compare two result JSON files table by table");
  cmp->add_option("first", cli.compare.a, "First JSON file (demo --format json or --out)")
      ->required()
      ->check(CLI::ExistingFile);
  cmp->add_option("second", cli.compare.b, "Second JSON file")
      ->required()
      ->check(CLI::ExistingFile);
  std::string tolerance = "1e-9", atol;
  cmp->add_option("--tolerance", tolerance,
                  "rtol: numbers agree when |a - b| <= atol + rtol*|b| (numpy's allclose)")
      ->capture_default_str();
  cmp->add_option("--atol", atol,
                  "Absolute floor for every column (default: per column, rtol x the column's "
                  "largest |b|)");

  // What --help shows in place of CLI11's generic TEXT.
  const std::pair<const char*, const char*> kinds[] = {{"--table", "NAMES"},
                                                       {"--device", "DEVICE"},
                                                       {"--format", "FORMAT"},
                                                       {"--seed", "N"},
                                                       {"--threads", "N"},
                                                       {"--out", "DIR"},
                                                       {"--w", "X"},
                                                       {"--n", "LIST"},
                                                       {"--knob-lr", "X"},
                                                       {"--knob-steps", "LIST"},
                                                       {"--dk", "LIST"},
                                                       {"--samples", "N"},
                                                       {"--rng", "RNG"},
                                                       {"--keys", "N"},
                                                       {"--configs", "LIST"},
                                                       {"--seeds", "SEEDS"},
                                                       {"--steps", "N"},
                                                       {"--lr", "X"},
                                                       {"--grad", "GRAD"},
                                                       {"--h", "X"},
                                                       {"--schedule", "SCHEDULE"},
                                                       {"--dtype", "DTYPE"},
                                                       {"--converged-below", "X"},
                                                       {"--per-seed", "FILE"}};
  for (const auto& [name, kind] : kinds) app.get_option(name)->type_name(kind);
  cmp->get_option("--tolerance")->type_name("X");
  cmp->get_option("--atol")->type_name("X");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    cli.exit_code = app.exit(e);
    cli.action = Cli::Action::done;
    return cli;
  } catch (const CLI::CallForAllHelp& e) {
    cli.exit_code = app.exit(e);
    cli.action = Cli::Action::done;
    return cli;
  } catch (const CLI::CallForVersion& e) {
    cli.exit_code = app.exit(e);
    cli.action = Cli::Action::done;
    return cli;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "demo: error: %s (see demo --help)\n", e.what());
    cli.exit_code = 2;
    cli.action = Cli::Action::done;
    return cli;
  }
  if (list) {
    std::cout << list_text();
    cli.action = Cli::Action::done;
    return cli;
  }

  try {
    if (*cmp) {
      cli.action = Cli::Action::compare;
      cli.compare.rule.rtol = parse_real("--tolerance", tolerance, 0, 1e300, false);
      if (cmp->count("--atol")) cli.compare.rule.atol = parse_real("--atol", atol, 0, 1e300, false);
      return cli;
    }
    for (const std::string& name : parse_name_list("--table", table, [] {
           std::vector<std::string> names = {"all"};
           for (const auto& e : experiments()) names.push_back(e.name);
           return names;
         }())) {
      std::vector<std::string> add;
      if (name == "all") {
        for (const auto& e : experiments())
          if (e.in_all) add.push_back(e.name);
      } else {
        add.push_back(name);
      }
      for (const auto& a : add)  // each table once, in the order first named
        if (std::find(o.tables.begin(), o.tables.end(), a) == o.tables.end()) o.tables.push_back(a);
    }
    if (app.count("--out") && o.out_dir.empty())
      throw std::invalid_argument("--out: an empty folder name (use --out . for this folder)");
    if (app.count("--per-seed") && o.per_seed_file.empty())
      throw std::invalid_argument("--per-seed: an empty file name");
    o.device = parse_choice("--device", device, {"auto", "cpu", "cuda"});
    const std::string f = parse_choice("--format", format, {"table", "csv", "json", "markdown"});
    o.format = f == "csv"        ? Format::csv
               : f == "json"     ? Format::json
               : f == "markdown" ? Format::markdown
                                 : Format::table;
    o.seed = parse_u64("--seed", seed);
    if (app.count("--threads"))
      o.threads = static_cast<int>(parse_int("--threads", threads, 1, 4096));
    o.plots = !no_plots;

    o.rnn_w = parse_real("--w", rnn_w, -1e6, 1e6, false);
    o.rnn_n = parse_int_list("--n", rnn_n, 0, 100000);
    o.knob_lr = parse_real("--knob-lr", knob_lr, 0, 1e6, true);
    o.knob_steps = parse_int_list("--knob-steps", knob_steps, 0, 100000000);

    if (!dk.empty() || app.count("--dk")) o.dk = parse_int_list("--dk", dk, 1, 1 << 20);
    if (!samples.empty() || app.count("--samples")) o.samples = parse_count("--samples", samples);
    const std::string r = parse_choice("--rng", rng, {"auto", "numpy", "philox"});
    o.rng = r == "numpy" ? RngChoice::numpy : r == "philox" ? RngChoice::philox : RngChoice::auto_;
    o.keys = static_cast<int>(parse_int("--keys", keys, 1, 65536));

    if (!configs.empty() || app.count("--configs"))
      o.configs = parse_name_list("--configs", configs, kConfigNames);
    if (!seeds.empty() || app.count("--seeds")) o.seeds = parse_seed_set("--seeds", seeds);
    o.train.steps = static_cast<int>(parse_int("--steps", steps, 1, 1000000000));
    o.train.lr = parse_real("--lr", lr, 0, 1e6, true);
    o.train.grad = parse_choice("--grad", grad, {"numeric", "analytic"}) == "numeric"
                       ? tiny::Grad::numeric
                       : tiny::Grad::analytic;
    o.train.h = parse_real("--h", h, 0, 1, true);
    o.train.schedule =
        parse_choice("--schedule", schedule, {"sequential", "simultaneous"}) == "sequential"
            ? tiny::Schedule::sequential
            : tiny::Schedule::simultaneous;
    o.dtype = parse_choice("--dtype", dtype, {"f64", "f32"}) == "f64" ? DType::f64 : DType::f32;
    o.converged_below = parse_real("--converged-below", converged, 0, 1e300, true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "demo: error: %s\n", e.what());
    cli.exit_code = 2;
    cli.action = Cli::Action::done;
    return cli;
  }

  // Options given that none of the chosen tables reads: said once on stderr, not an error.
  const std::pair<const char*, std::vector<std::string>> used_by[] = {
      {"--w", {"rnn-decay"}},
      {"--n", {"rnn-decay"}},
      {"--knob-lr", {"knob"}},
      {"--knob-steps", {"knob"}},
      {"--seed", {"dk-std", "softmax-saturation"}},
      {"--dk", {"dk-std", "softmax-saturation"}},
      {"--samples", {"dk-std", "softmax-saturation"}},
      {"--rng", {"dk-std"}},
      {"--keys", {"softmax-saturation"}},
      {"--configs", {"training", "training-sweep"}},
      {"--seeds", {"training", "training-sweep"}},
      {"--steps", {"training", "training-sweep"}},
      {"--lr", {"training", "training-sweep"}},
      {"--grad", {"training", "training-sweep"}},
      {"--h", {"training", "training-sweep"}},
      {"--schedule", {"training", "training-sweep"}},
      {"--dtype", {"training", "training-sweep"}},
      {"--converged-below", {"training-sweep"}},
      {"--per-seed", {"training-sweep"}}};
  for (const auto& [option, tables] : used_by) {
    if (!app.count(option)) continue;
    bool used = false;
    for (const auto& t : tables)
      used = used || std::find(o.tables.begin(), o.tables.end(), t) != o.tables.end();
    if (!used) {
      std::string names;
      for (const auto& t : tables) names += (names.empty() ? "" : " or ") + t;
      cli.warnings.push_back(std::string(option) + " has no effect here (it is for " + names + ")");
    }
  }
  if (no_plots && o.out_dir.empty())
    cli.warnings.push_back("--no-plots has no effect without --out");

  for (int i = 0; i < argc; ++i)
    o.command_line += (i ? " " : "") + (i == 0 ? std::string("demo") : shell_quote(argv[i]));
  return cli;
}

}  // namespace attn
