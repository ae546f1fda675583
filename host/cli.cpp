// cli.cpp: see cli.hpp.
#include "host/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <stdexcept>

#include "host/experiment.hpp"
#include "host/output.hpp"
#include "host/parse.hpp"
#include "version.hpp"

namespace attn {
namespace {

// The footer of --help: the general examples, then each table's own.
std::string examples_text(const std::vector<Experiment>& all) {
  std::string s =
      "Examples:\n"
      "  demo                                   every table of the lesson (--table all)\n";
  for (const auto& e : all)
    for (const auto& line : e.examples) s += "  " + line + "\n";
  s +=
      "  demo --table all --out results/cpu     CSV, JSON and figures per table\n"
      "  demo compare a.json b.json --tolerance 1e-12\n"
      "  mpirun -np 8 demo --table ...           split a bulk table's chunks over MPI ranks\n"
      "  demo --table ... --shard 0/3 --out p0   part 0 of 3; then: demo merge p0 p1 p2 --out DIR\n"
      "  demo --table ... --checkpoint run.ckpt  resumable: the same command continues\n";
  return s;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_=/.,:+@%") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string list_text(const std::vector<Experiment>& all) {
  std::string s = "Tables (--table NAME, or a comma list; 'all' is the lesson's tables):\n";
  for (const auto& e : all) {
    std::string name = e.name;
    name.resize(20, ' ');
    s += "  " + name + e.summary + (e.runs == Runs::host ? "  [host]" : "") +
         (e.in_all ? "" : "  [not in all]") + "\n";
  }
  return s + "[host]: plain arithmetic on the host; the others run kernels on --device\n";
}

// Every flag the tables declare, once, with the tables that read it (in registry order).
struct TableFlag {
  const Param* first;                 // the first declaration (kind and help)
  std::vector<const Experiment*> by;  // every table that declares it
};
std::vector<std::pair<std::string, TableFlag>> table_flags(const std::vector<Experiment>& all) {
  std::vector<std::pair<std::string, TableFlag>> flags;
  for (const auto& e : all)
    for (const Param& p : e.params) {
      auto it =
          std::find_if(flags.begin(), flags.end(), [&](auto& f) { return f.first == p.flag; });
      if (it == flags.end()) {
        flags.push_back({p.flag, TableFlag{&p, {}}});
        it = flags.end() - 1;
      }
      it->second.by.push_back(&e);
    }
  return flags;
}

// "a", "a and b" or "a, b and c" (with last_sep " and ").
std::string table_names(const std::vector<const Experiment*>& by, const char* last_sep) {
  std::string s;
  for (std::size_t i = 0; i < by.size(); ++i)
    s += (i == 0 ? "" : i + 1 == by.size() ? last_sep : ", ") + by[i]->name;
  return s;
}

// The help line: the first declaration's text and each table's default.
std::string flag_help(const std::string& flag, const TableFlag& f) {
  std::string help = f.first->help, defaults;
  bool same = true;
  for (const Experiment* e : f.by)
    for (const Param& p : e->params)
      if (p.flag == flag) {
        same = same && p.default_text == f.first->default_text;
        if (!p.default_text.empty())
          defaults += (defaults.empty() ? "" : "; ") + e->name + ": " + p.default_text;
      }
  if (same && !f.first->default_text.empty()) return help + " [" + f.first->default_text + "]";
  return defaults.empty() ? help : help + " [" + defaults + "]";
}

// `demo --table NAME --help`: that table's own options (from its declaration) and examples; the
// options every table shares are in `demo --help`.
std::string table_help(const Experiment& e) {
  std::string s = "demo --table " + e.name + ": " + e.summary + "\n";
  if (!e.params.empty()) s += "\nOptions of " + e.name + ":\n";
  for (const Param& p : e.params) {
    std::string left = "  " + p.flag + " " + p.kind;
    if (left.size() < 28) left.resize(28, ' ');
    s += left + " " + p.help +
         (p.default_text.empty() ? std::string() : " [" + p.default_text + "]") + "\n";
  }
  if (!e.examples.empty()) s += "\nExamples:\n";
  for (const auto& line : e.examples) s += "  " + line + "\n";
  return s + "\nThe options every table shares (--device, --format, --out, ...): demo --help\n";
}

}  // namespace

Cli parse_command_line(int argc, char** argv, const std::vector<Experiment>& all) {
  const auto find_experiment = [&all](const std::string& name) -> const Experiment* {
    for (const auto& e : all)
      if (e.name == name) return &e;
    return nullptr;
  };
  Cli cli;
  Options& o = cli.options;
  // --help with --table naming tables: their own options, not the whole list.
  {
    bool help = false;
    std::vector<std::string> named;
    for (int i = 1; i < argc; ++i) {
      const std::string w = argv[i];
      help = help || w == "--help" || w == "-h";
      std::string value;
      if (w == "--table" && i + 1 < argc) value = argv[i + 1];
      if (w.rfind("--table=", 0) == 0) value = w.substr(8);
      for (const std::string& n : split_list(value))
        if (find_experiment(n)) named.push_back(n);
    }
    if (help && !named.empty()) {
      std::string text;
      for (const std::string& n : named)
        text += (text.empty() ? "" : "\n") + table_help(*find_experiment(n));
      std::cout << text;
      cli.action = Cli::Action::done;
      return cli;
    }
  }
  CLI::App app{"attnlab demo: the attention lesson's experiments, on a GPU or the CPU", "demo"};
  app.footer(examples_text(all));
  app.set_version_flag("--version", std::string("attnlab ") + kVersion + " (" + kGitCommit +
                                        (kBuiltWithCuda ? ", CUDA and CPU" : ", CPU only") + ")");

  std::string table = "all", device = "auto", format = "table", threads;
  bool list = false, no_plots = false;
  app.add_option("--table", table, "Table(s) to make: a name, a comma list, or all")
      ->capture_default_str()
      ->type_name("NAMES");
  app.add_flag("--list", list, "List the tables and exit");
  app.add_option("--device", device, "auto | cpu | cuda")
      ->capture_default_str()
      ->type_name("DEVICE");
  app.add_option("--format", format, "table | csv | json | markdown")
      ->capture_default_str()
      ->type_name("FORMAT");
  app.add_option("--threads", threads, "CPU threads (default: all cores)")->type_name("N");
  std::string gpu;
  app.add_option("--gpu", gpu, "GPU to use, by CUDA ordinal (default: the first usable one)")
      ->type_name("N");
  app.add_flag("--quiet,-q", o.quiet, "No progress and no notices on stderr");
  app.add_flag("--verbose,-v", o.verbose, "More log lines on stderr");
  app.add_option("--out", o.out_dir, "Also write NAME.csv, NAME.json and figures into DIR")
      ->type_name("DIR");
  app.add_flag("--force", o.force, "Replace existing regular result files (--out, output files)");
  app.add_flag("--no-plots", no_plots, "With --out: no figures");
  std::string shard, checkpoint_every;
  app.add_option("--shard", shard,
                 "Compute part I of N (0 <= I < N) of the bulk tables' chunks and write "
                 "OUT/NAME.part.json; combine the parts with demo merge")
      ->type_name("I/N");
  app.add_option("--checkpoint", o.checkpoint,
                 "Save finished chunks to FILE (every 30 s and at Ctrl-C); the same command with "
                 "the same FILE continues from it")
      ->type_name("FILE");
  app.add_option("--checkpoint-every", checkpoint_every, "Seconds between checkpoints [30]")
      ->type_name("S");

  // The tables' own flags, from their declarations, grouped by the tables that read them.
  const auto flags = table_flags(all);
  std::map<std::string, std::string> texts;  // flag -> the text given
  std::map<std::string, CLI::Option_group*> groups;
  for (const auto& [flag, f] : flags) {
    const std::string group = table_names(f.by, ", ");
    if (!groups.count(group)) groups[group] = app.add_option_group(group);
    groups[group]->add_option(flag, texts[flag], flag_help(flag, f))->type_name(f.first->kind);
  }

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
      ->capture_default_str()
      ->type_name("X");
  cmp->add_option("--atol", atol,
                  "Absolute floor for every column (default: per column, rtol x the column's "
                  "largest |b|; for a column of rounding noise, its rows' resolution)")
      ->type_name("X");

  add_attention_command(app, cli.attention);

  auto* merge = app.add_subcommand(
      "merge", "Combine the parts of a --shard run (the --out directories of parts 0..N-1)");
  merge->add_option("dirs", cli.merge_dirs, "The parts' directories")->required();
  // merge's own options only (the parts hold the rest of the command); they set demo's own.
  merge->add_option("--out", o.out_dir, "Also write NAME.csv, NAME.json and figures into DIR")
      ->type_name("DIR");
  merge->add_option("--format", format, "table | csv | json | markdown")
      ->capture_default_str()
      ->type_name("FORMAT");
  merge->add_flag("--force", o.force, "Replace existing regular result files");
  merge->add_flag("--quiet,-q", o.quiet, "No progress and no notices on stderr");
  merge->add_flag("--no-plots", no_plots, "With --out: no figures");
  merge->allow_extras();  // refused below, naming the option, as one line

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
    print_error(std::string(e.what()) + " (see demo --help)");
    cli.exit_code = 2;
    cli.action = Cli::Action::done;
    return cli;
  }
  if (list) {
    std::cout << list_text(all);
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
    if (*merge) {
      // Any other option (--threads, --samples, ...) would be silently ignored: refused. Those
      // given after `merge` are its extras; those before it, demo's options.
      std::string other;
      for (const std::string& w : merge->remaining())
        if (other.empty() && w.size() > 1 && w[0] == '-') other = w.substr(0, w.find('='));
      std::vector<CLI::Option*> before = app.get_options();
      for (const auto& [name, group] : groups)
        for (CLI::Option* opt : group->get_options()) before.push_back(opt);
      for (const CLI::Option* opt : before)
        if (other.empty() && opt->count() > 0 && !merge->get_option_no_throw(opt->get_name()))
          other = opt->get_name();
      if (!other.empty())
        throw std::invalid_argument(
            "merge: " + other +
            " is not an option of merge (it takes --out, --format, --force, --quiet and "
            "--no-plots; the parts hold the rest of the command)");
      if ((merge->count("--out") || app.count("--out")) && o.out_dir.empty())
        throw std::invalid_argument("--out: an empty folder name (use --out . for this folder)");
      cli.action = Cli::Action::merge;
      o.format = parse_format("--format", format);
      o.plots = !no_plots;
      return cli;
    }
    if (app.count("--shard")) {
      const auto slash = shard.find('/');
      if (slash == std::string::npos)
        throw std::invalid_argument("--shard " + shard + ": expected I/N, e.g. 0/3");
      o.shards =
          static_cast<std::uint64_t>(parse_int("--shard", shard.substr(slash + 1), 1, 1000000));
      o.shard = static_cast<std::uint64_t>(
          parse_int("--shard", shard.substr(0, slash), 0, static_cast<std::int64_t>(o.shards) - 1));
    }
    if (app.count("--checkpoint") && o.checkpoint.empty())
      throw std::invalid_argument("--checkpoint: empty file name");
    if (app.count("--checkpoint-every"))
      o.checkpoint_seconds = parse_real("--checkpoint-every", checkpoint_every, 0, 1e9, true);
    for (const std::string& name : parse_name_list("--table", table, [&all] {
           std::vector<std::string> names = {"all"};
           for (const auto& e : all) names.push_back(e.name);
           return names;
         }())) {
      std::vector<std::string> add;
      if (name == "all") {
        for (const auto& e : all)
          if (e.in_all) add.push_back(e.name);
      } else {
        add.push_back(name);
      }
      for (const auto& a : add)  // each table once, in the order first named
        if (std::find(o.tables.begin(), o.tables.end(), a) == o.tables.end()) o.tables.push_back(a);
    }
    if (app.count("--out") && o.out_dir.empty())
      throw std::invalid_argument("--out: an empty folder name (use --out . for this folder)");
    o.device = parse_choice("--device", device, {"auto", "cpu", "cuda"});
    o.format = parse_format("--format", format);
    if (app.count("--threads")) o.threads = parse_threads("--threads", threads);
    o.plots = !no_plots;
    for (const auto& [flag, f] : flags)
      if (app.count(flag)) o.given[flag] = texts[flag];
    // Every chosen table's values, checked now, before any work.
    for (const std::string& name : o.tables) {
      const Experiment& e = *find_experiment(name);
      std::map<std::string, std::string> mine;
      for (const Param& p : e.params)
        if (o.given.count(p.flag)) mine[p.flag] = o.given.at(p.flag);
      (void)Settings::parse(e.params, mine);
    }
    if (app.count("--gpu")) o.gpu = static_cast<int>(parse_int("--gpu", gpu, 0, 1023));
    if (o.shards > 0)
      for (const std::string& name : o.tables)
        if (!find_experiment(name)->chunked) {
          std::string bulk;
          for (const auto& e : all)
            if (e.chunked) bulk += (bulk.empty() ? "" : ", ") + e.name;
          throw std::invalid_argument("--shard: " + name +
                                      " has no chunks to split (the bulk tables do: " + bulk + ")");
        }
  } catch (const std::exception& e) {
    print_error(e.what());
    cli.exit_code = 2;
    cli.action = Cli::Action::done;
    return cli;
  }

  // Flags given that none of the chosen tables reads: said once on stderr, not an error.
  for (const auto& [flag, f] : flags) {
    if (!o.given.count(flag)) continue;
    bool used = false;
    for (const Experiment* e : f.by)
      used = used || std::find(o.tables.begin(), o.tables.end(), e->name) != o.tables.end();
    if (!used)
      cli.warnings.push_back(flag + " has no effect here (it is for " + table_names(f.by, " or ") +
                             ")");
  }
  if (no_plots && o.out_dir.empty())
    cli.warnings.push_back("--no-plots has no effect without --out");
  // --checkpoint saves the chunk driver's state: tables without chunks have none to save.
  if (app.count("--checkpoint") || app.count("--checkpoint-every")) {
    std::string bulk;
    bool any = false;
    for (const auto& e : all) {
      if (!e.chunked) continue;
      bulk += (bulk.empty() ? "" : ", ") + e.name;
      any = any || std::find(o.tables.begin(), o.tables.end(), e.name) != o.tables.end();
    }
    const char* flag = app.count("--checkpoint") ? "--checkpoint" : "--checkpoint-every";
    if (!any)
      cli.warnings.push_back(std::string(flag) +
                             " has no effect here (no table chosen has chunks to save; the bulk "
                             "tables do: " +
                             bulk + ")");
    else if (!app.count("--checkpoint"))
      cli.warnings.push_back("--checkpoint-every has no effect without --checkpoint");
  }

  for (int i = 0; i < argc; ++i) {
    o.argv.push_back(i == 0 ? std::string("demo") : std::string(argv[i]));
    o.command_line += (i ? " " : "") + (i == 0 ? std::string("demo") : shell_quote(argv[i]));
  }
  return cli;
}

}  // namespace attn
