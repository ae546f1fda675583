// cli.cpp: see cli.hpp.
#include "host/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "host/experiment.hpp"
#include "host/input.hpp"
#include "host/output.hpp"
#include "host/parse.hpp"
#include "version.hpp"

namespace attn {
namespace {

// The footer of --help: the general examples, then each experiment's own.
std::string examples_text(const std::vector<Experiment>& all) {
  std::string s =
      "Examples:\n"
      "  demo                                   every table of the lesson (--table all)\n";
  for (const auto& e : all)
    for (const auto& line : e.examples) s += "  " + line + "\n";
  s +=
      "  demo --table all --out results/cpu     CSV, JSON and figures per table\n"
      "  demo compare a.json b.json --tolerance 1e-12\n"
      "  demo replot results/x/NAME.json --out DIR   the figures of a stored result, redrawn\n"
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

// Every flag the experiments declare, once, with the experiments that read it (in registry
// order).
struct ExperimentFlag {
  const Param* first;                 // the first declaration (kind and help)
  std::vector<const Experiment*> by;  // every experiment that declares it
};
std::vector<std::pair<std::string, ExperimentFlag>> experiment_flags(
    const std::vector<Experiment>& all) {
  std::vector<std::pair<std::string, ExperimentFlag>> flags;
  for (const auto& e : all)
    for (const Param& p : e.params) {
      auto it =
          std::find_if(flags.begin(), flags.end(), [&](auto& f) { return f.first == p.flag; });
      if (it == flags.end()) {
        flags.push_back({p.flag, ExperimentFlag{&p, {}}});
        it = flags.end() - 1;
      }
      it->second.by.push_back(&e);
    }
  return flags;
}

// "a", "a and b" or "a, b and c" (with last_sep " and ").
std::string experiment_names(const std::vector<const Experiment*>& by, const char* last_sep) {
  std::string s;
  for (std::size_t i = 0; i < by.size(); ++i)
    s += (i == 0 ? "" : i + 1 == by.size() ? last_sep : ", ") + by[i]->name;
  return s;
}

// The help line: the first declaration's text and each experiment's default.
std::string flag_help(const std::string& flag, const ExperimentFlag& f) {
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

// `demo --table NAME --help`: that experiment's own options (from its declaration) and examples;
// the options every experiment shares are in `demo --help`.
std::string experiment_help(const Experiment& e) {
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

// The experiments that --table's text names (by their tables' names), "all" expanded to the
// lesson's experiments, each once in the order first named; those named again (directly or
// through "all") are added to *twice when it is given.
std::vector<std::string> chosen_experiments(const std::vector<Experiment>& all,
                                            const std::string& text,
                                            std::vector<std::string>* twice = nullptr) {
  std::vector<std::string> names = {"all"};
  for (const auto& e : all) names.push_back(e.name);
  std::vector<std::string> chosen;
  for (const std::string& name : parse_name_list("--table", text, names)) {
    std::vector<std::string> add;
    if (name == "all") {
      for (const auto& e : all)
        if (e.in_all) add.push_back(e.name);
    } else {
      add.push_back(name);
    }
    for (const auto& a : add)
      if (std::find(chosen.begin(), chosen.end(), a) == chosen.end())
        chosen.push_back(a);
      else if (twice && std::find(twice->begin(), twice->end(), a) == twice->end())
        twice->push_back(a);
  }
  return chosen;
}

// The help --help prints when --table names experiments: their own options, not the whole list.
// Empty when --help is not asked for or no experiment is named.
std::string named_experiments_help(int argc, char** argv, const std::vector<Experiment>& all) {
  bool help = false;
  std::string text;
  for (int i = 1; i < argc; ++i) {
    const std::string w = argv[i];
    help = help || w == "--help" || w == "-h";
    std::string value;
    if (w == "--table" && i + 1 < argc) value = argv[i + 1];
    if (w.rfind("--table=", 0) == 0) value = w.substr(8);
    for (const std::string& n : split_list(value))
      for (const auto& e : all)
        if (e.name == n) text += (text.empty() ? "" : "\n") + experiment_help(e);
  }
  return help ? text : "";
}

// Options whose check is declared with them: read(name, text), run as one of the option's CLI11
// validators (each), checks the option's text and stores its value, or throws
// std::invalid_argument naming the option, as parse.hpp's functions do. The first such message
// is kept unchanged as the refusal, printed once CLI11 has read the whole line: CLI11's own
// errors, --help and --version come first, as for any option.
struct CheckedOptions {
  std::string refusal;
  template <class Read>
  CLI::Option* add(CLI::App* app, const std::string& name, const std::string& help, Read read) {
    return app->add_option(name, help)->each([this, name, read](const std::string& text) {
      try {
        read(name, text);
      } catch (const std::invalid_argument& e) {
        if (refusal.empty()) refusal = e.what();
      }
    });
  }
  // An option whose value is field = read(name, text).
  template <class T, class Read>
  CLI::Option* add(CLI::App* app, const std::string& name, const std::string& help, T& field,
                   Read read) {
    return add(app, name, help, [&field, read](const std::string& option, const std::string& text) {
      field = read(option, text);
    });
  }
};

// Why an option given to `sub` cannot be read, or "": an option `sub` does not take (its
// extras, or one of demo's options before it, experiment flags included), or one `sub` takes given
// both before and after it. One `sub` takes, given before it alone, is read as if after it. The
// line is said as "demo SUB: error: ..." (as the subcommand's own errors are).
std::string subcommand_refusal(const CLI::App& sub, const CLI::App& app,
                               const std::map<std::string, CLI::Option_group*>& groups) {
  const std::string name = sub.get_name();
  for (const std::string& w : sub.remaining())
    if (w.size() > 1 && w[0] == '-')
      return w.substr(0, w.find('=')) + " is not an option of " + name + " (see demo " + name +
             " --help)";
  if (!sub.remaining().empty())
    return "unexpected argument " + quote_input(sub.remaining().front()) + " (see demo " + name +
           " --help)";
  std::vector<const CLI::Option*> before;
  for (const CLI::Option* opt : app.get_options()) before.push_back(opt);
  for (const auto& [group_name, group] : groups)
    for (const CLI::Option* opt : group->get_options()) before.push_back(opt);
  for (const CLI::Option* opt : before) {
    if (opt->count() == 0) continue;
    const std::string option = opt->get_name();
    const CLI::Option* own = sub.get_option_no_throw(option);
    if (!own) return option + " is not an option of " + name + " (see demo " + name + " --help)";
    if (own->count() > 0)
      return option + " is given both before and after " + name + "; give it once";
  }
  return "";
}

// demo attention's options given before `attention` (demo's own parser read them): the
// request's fields take them as if they followed it.
void read_before_attention(const CLI::App& app, AttentionRequest& r) {
  const auto given = [&app](const char* name) {
    const CLI::Option* opt = app.get_option_no_throw(name);
    return opt != nullptr && opt->count() > 0 ? opt : nullptr;
  };
  for (auto [name, field] : {std::pair<const char*, std::string*>{"--device", &r.device},
                             {"--format", &r.format},
                             {"--threads", &r.threads},
                             {"--out", &r.out_dir}})
    if (const CLI::Option* opt = given(name); opt && !opt->results().empty())
      *field = opt->results().back();
  for (auto [name, field] : {std::pair<const char*, bool*>{"--force", &r.force},
                             {"--no-plots", &r.no_plots},
                             {"--quiet", &r.quiet},
                             {"--verbose", &r.verbose}})
    if (given(name)) *field = true;
}

// Why an experiment flag that no chosen experiment reads has a value no experiment that declares
// it accepts, or "" (a value is checked wherever it is given; rules between flags are the
// experiments' own).
std::string unread_flag_refusal(const std::vector<Experiment>& all, const Options& o) {
  for (const auto& [flag, text] : o.given) {
    std::string first_error;
    bool read_by_chosen = false, accepted = false;
    for (const auto& e : all)
      for (const Param& p : e.params) {
        if (p.flag != flag) continue;
        read_by_chosen = read_by_chosen || std::find(o.experiments.begin(), o.experiments.end(),
                                                     e.name) != o.experiments.end();
        try {
          (void)p.parse(flag, text);
          accepted = true;
        } catch (const std::exception& error) {
          if (first_error.empty()) first_error = error.what();
        }
      }
    if (!read_by_chosen && !accepted && !first_error.empty()) return first_error;
  }
  return "";
}

// Why the chosen experiments cannot run as asked, or "": each experiment's own values (its
// settings check them), then --shard, which splits only the bulk experiments' chunks.
std::string chosen_experiments_refusal(const std::vector<Experiment>& all, const Options& o) {
  try {
    for (const std::string& name : o.experiments)
      for (const auto& e : all) {
        if (e.name != name) continue;
        std::map<std::string, std::string> mine;
        for (const Param& p : e.params)
          if (o.given.count(p.flag)) mine[p.flag] = o.given.at(p.flag);
        (void)Settings::parse(e.params, mine);
      }
  } catch (const std::exception& e) {
    return e.what();
  }
  if (o.shards == 0) return "";
  std::string bulk;
  for (const auto& e : all)
    if (e.chunked) bulk += (bulk.empty() ? "" : ", ") + e.name;
  for (const std::string& name : o.experiments)
    for (const auto& e : all)
      if (e.name == name && !e.chunked)
        return "--shard: " + name + " has no chunks to split (the bulk tables do: " + bulk + ")";
  return "";
}

// The notices for options that do nothing in this run (not errors).
std::vector<std::string> no_effect_notices(
    const std::vector<Experiment>& all,
    const std::vector<std::pair<std::string, ExperimentFlag>>& flags, const Options& o,
    bool no_plots, bool checkpoint, bool checkpoint_every, bool gpu_given) {
  const auto chosen = [&o](const std::string& name) {
    return std::find(o.experiments.begin(), o.experiments.end(), name) != o.experiments.end();
  };
  std::vector<std::string> notes;
  // Flags given that none of the chosen experiments reads.
  for (const auto& [flag, f] : flags) {
    if (!o.given.count(flag)) continue;
    bool used = false;
    for (const Experiment* e : f.by) used = used || chosen(e->name);
    if (!used)
      notes.push_back(flag + " has no effect here (it is for " + experiment_names(f.by, " or ") +
                      ")");
  }
  if (no_plots && o.out_dir.empty()) notes.push_back("--no-plots has no effect without --out");
  if (o.force && o.out_dir.empty()) {
    bool file = false;  // an output-file flag given (--per-seed): --force replaces that file
    for (const auto& [flag, f] : flags)
      file = file || (o.given.count(flag) && f.first->output_file);
    if (!file)
      notes.push_back("--force has no effect without --out or an output file (--per-seed)");
  }
  // A shard's output files go into its part: merge writes them, where its own folder puts them.
  if (o.shards > 0)
    for (const auto& [flag, f] : flags)
      if (o.given.count(flag) && f.first->output_file)
        notes.push_back(flag + " " + o.given.at(flag) +
                        ": a shard writes no such file (its part holds the rows); demo merge "
                        "writes it, relative to the folder merge runs in");
  // --checkpoint saves the chunk driver's state: experiments without chunks have none to save.
  if (checkpoint || checkpoint_every) {
    std::string bulk;
    bool any = false;
    for (const auto& e : all) {
      if (!e.chunked) continue;
      bulk += (bulk.empty() ? "" : ", ") + e.name;
      any = any || chosen(e.name);
    }
    if (!any)
      notes.push_back(std::string(checkpoint ? "--checkpoint" : "--checkpoint-every") +
                      " has no effect here (no table chosen has chunks to save; the bulk "
                      "tables do: " +
                      bulk + ")");
    else if (!checkpoint)
      notes.push_back("--checkpoint-every has no effect without --checkpoint");
  }
  if (gpu_given && o.device == "cpu") notes.push_back("--gpu has no effect with --device cpu");
  return notes;
}

// Old spellings of options, still read as the new one, with a warning naming the new one.
constexpr std::pair<const char*, const char*> kDeprecatedSpellings[] = {
    {"--dk", "--d-k"},  // two experiments' d_k list, before every experiment spelled d_k alike
};

// argv with each deprecated spelling (alone or as --old=value) replaced by its new one, and a
// warning for each one given.
std::vector<std::string> current_spellings(int argc, char** argv,
                                           std::vector<std::string>& warnings) {
  std::vector<std::string> words(argv, argv + argc);
  for (std::size_t i = 1; i < words.size(); ++i)
    for (const auto& [old_name, new_name] : kDeprecatedSpellings) {
      const std::string o = old_name;
      if (words[i] == o || words[i].rfind(o + "=", 0) == 0) {
        words[i] = new_name + words[i].substr(o.size());
        warnings.push_back(o + " is deprecated: it is read as " + new_name + ", its name now");
      }
    }
  return words;
}

using Text = const std::string&;

// --out's folder name, refused empty.
std::string read_out_dir(Text name, Text text) {
  if (text.empty())
    throw std::invalid_argument(name + ": an empty folder name (use --out . for this folder)");
  return text;
}

// demo's own options, shared by every experiment: the device, the output, the split of the
// chunks and the checkpoints (--table and --list are parse_command_line's).
void add_run_options(CLI::App& app, CheckedOptions& checked, Options& o, bool& no_plots) {
  checked
      .add(&app, "--device", "auto | cpu | cuda", o.device,
           [](Text name, Text text) {
             return parse_choice(name, text, {"auto", "cpu", "cuda"});
           })
      ->default_str("auto")
      ->type_name("DEVICE");
  checked.add(&app, "--format", "table | csv | json | markdown", o.format, parse_format)
      ->default_str("table")
      ->type_name("FORMAT");
  checked.add(&app, "--threads", "CPU threads (default: all cores)", o.threads, parse_threads)
      ->type_name("N");
  checked
      .add(&app, "--gpu", "GPU to use, by CUDA ordinal (default: the first usable one)", o.gpu,
           [](Text name, Text text) { return static_cast<int>(parse_int(name, text, 0, 1023)); })
      ->type_name("N");
  app.add_flag("--quiet,-q", o.quiet, "No progress and no notices on stderr")
      ->excludes(app.add_flag("--verbose,-v", o.verbose, "More log lines on stderr"));
  checked
      .add(&app, "--out", "Also write NAME.csv, NAME.json and figures into DIR", o.out_dir,
           read_out_dir)
      ->type_name("DIR");
  app.add_flag("--force", o.force, "Replace existing regular result files (--out, output files)");
  app.add_flag("--no-plots", no_plots, "With --out: no figures");
  checked
      .add(&app, "--shard",
           "Compute part I of N (0 <= I < N) of the bulk tables' chunks and write "
           "OUT/NAME.part.json; combine the parts with demo merge",
           [&o](Text name, Text text) {
             const ShardPart part = parse_shard(name, text);
             o.shard = part.index;
             o.shards = part.count;
           })
      ->type_name("I/N");
  checked
      .add(&app, "--checkpoint",
           "Save finished chunks to FILE (every 30 s and at Ctrl-C); the same command with the "
           "same FILE continues from it",
           o.checkpoint,
           [](Text name, Text text) {
             if (text.empty()) throw std::invalid_argument(name + ": empty file name");
             return text;
           })
      ->type_name("FILE");
  checked
      .add(&app, "--checkpoint-every", "Seconds between checkpoints [30]", o.checkpoint_seconds,
           [](Text name, Text text) { return parse_real(name, text, 0, 1e9, true); })
      ->type_name("S");
}

// The experiments' own flags (flags: from their declarations), grouped in the help by the
// experiments that read them; each value is kept in o.given for the chosen experiments to check
// (one flag's range may differ by experiment). Returns the groups, by those experiments' names.
std::map<std::string, CLI::Option_group*> add_experiment_flags(
    CLI::App& app, CheckedOptions& checked, Options& o,
    const std::vector<std::pair<std::string, ExperimentFlag>>& flags) {
  std::map<std::string, CLI::Option_group*> groups;
  for (const auto& [flag, f] : flags) {
    const std::string group = experiment_names(f.by, ", ");
    if (!groups.count(group)) groups[group] = app.add_option_group(group);
    CLI::Option* option = checked
                              .add(groups[group], flag, flag_help(flag, f),
                                   [&o](Text name, Text text) { o.given[name] = text; })
                              ->type_name(f.first->kind);
    if (!f.first->implicit_value.empty())  // the value given alone; the help shows the kind
      option->expected(0, 1)->default_str(f.first->implicit_value)->option_text(f.first->kind);
  }
  return groups;
}

// Why compare's files cannot be compared, or "": a folder or a missing file, said as such
// (checked after the options, so that a stray option between the files is named as one).
std::string compare_files_refusal(const CompareRequest& c) {
  for (const auto& [name, path] : {std::pair<const char*, const std::string&>{"FIRST", c.a},
                                   std::pair<const char*, const std::string&>{"SECOND", c.b}}) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      return std::string(name) + ": " + path + " is a folder, not a result file (its NAME.json is)";
    if (!std::filesystem::exists(path, ec)) return std::string(name) + ": no such file " + path;
  }
  return "";
}

// `demo compare FIRST SECOND`: its files and tolerances into c.
CLI::App* add_compare_command(CLI::App& app, CheckedOptions& checked, CompareRequest& c) {
  auto* cmp = app.add_subcommand("compare", "Compare two result JSON files table by table");
  cmp->add_option("FIRST", c.a, "The first result JSON file (demo --format json or --out)")
      ->required()
      ->type_name("FILE");
  cmp->add_option("SECOND", c.b, "The second result JSON file, b in the rule")
      ->required()
      ->type_name("FILE");
  cmp->allow_extras();  // refused after parsing (subcommand_refusal), as one line
  const auto read_tolerance = [](Text name, Text text) {
    return parse_real(name, text, 0, 1e300, false);
  };
  checked
      .add(cmp, "--tolerance",
           "rtol: numbers agree when |a - b| <= atol + rtol*|b| (numpy's allclose)", c.rule.rtol,
           read_tolerance)
      ->default_str("1e-9")
      ->type_name("X");
  checked
      .add(cmp, "--atol",
           "Absolute floor for every number (default: rtol x the smaller of its column's and "
           "its row's largest |b|; for a column of rounding noise, its rows' resolution)",
           c.rule.atol, read_tolerance)
      ->type_name("X");
  cmp->footer(
      "Examples:\n"
      "  demo compare gpu.json cpu.json                 GPU against CPU, rtol 1e-9\n"
      "  demo compare a.json results/cpu/NAME.json --tolerance 1e-12 --atol 0\n"
      "The rule and the report: docs/OUTPUTS.md");
  return cmp;
}

// `demo merge DIR...`: the parts' folders into dirs, and merge's own options only (the parts
// hold the rest of the command), which set demo's own.
CLI::App* add_merge_command(CLI::App& app, CheckedOptions& checked, Options& o,
                            std::vector<std::string>& dirs, bool& no_plots) {
  auto* merge = app.add_subcommand(
      "merge", "Combine the parts of a --shard run (the --out directories of parts 0..N-1)");
  merge->add_option("PARTS", dirs, "The parts' --out folders, 0 to N-1")->required();
  checked
      .add(merge, "--out", "Also write NAME.csv, NAME.json and figures into DIR", o.out_dir,
           read_out_dir)
      ->type_name("DIR");
  checked.add(merge, "--format", "table | csv | json | markdown", o.format, parse_format)
      ->default_str("table")
      ->type_name("FORMAT");
  merge->add_flag("--force", o.force, "Replace existing regular result files");
  merge->add_flag("--quiet,-q", o.quiet, "No progress and no notices on stderr");
  merge->add_flag("--no-plots", no_plots, "With --out: no figures");
  merge->allow_extras();  // refused after parsing (subcommand_refusal), as one line
  merge->footer(
      "Examples:\n"
      "  demo --table NAME ... --shard 0/2 --out p0   (and --shard 1/2 --out p1)\n"
      "  demo merge p0 p1 --out whole                    the one run's tables, byte for byte\n"
      "Shards, MPI and checkpoints: docs/SCALING.md");
  return merge;
}

// `demo replot RESULT.json --out DIR`: the result's file into file.
CLI::App* add_replot_command(CLI::App& app, CheckedOptions& checked, Options& o,
                             std::string& file) {
  auto* replot = app.add_subcommand(
      "replot",
      "Draw the figures of a stored result again (RESULT.json, from --format json or "
      "--out), without recomputing it");
  replot->add_option("RESULT", file, "The result's JSON file")->required();
  checked.add(replot, "--out", "Write the figures into DIR (required)", o.out_dir, read_out_dir)
      ->type_name("DIR");
  replot->add_flag("--force", o.force, "Replace existing figure files");
  replot->add_flag("--quiet,-q", o.quiet, "No notices on stderr");
  replot->allow_extras();  // refused after parsing (subcommand_refusal), as one line
  replot->footer(
      "Examples:\n"
      "  demo replot results/cpu/NAME.json --out figures\n"
      "  demo replot run/NAME.json --out run --force   redrawn in place");
  return replot;
}

// The command line in current spellings: what a checkpoint, a part and the provenance hold.
void record_command_line(int argc, char** argv, Options& o) {
  for (int i = 0; i < argc; ++i) {
    o.argv.push_back(i == 0 ? std::string("demo") : std::string(argv[i]));
    o.command_line += (i ? " " : "") + (i == 0 ? std::string("demo") : shell_quote(argv[i]));
  }
}

// A parse error's line: CLI11's text, but an option given more than once ("--samples: At Most 1
// required but received 2") said as the user did it.
std::string parse_error_text(const CLI::ParseError& e) {
  static const std::regex twice(R"(^(\S+): At Most 1 required but received (\d+)$)");
  static const std::regex empty(R"(^(\S+): 1 required \S+ missing$)");  // --samples=
  static const std::regex extras(R"(^The following arguments? (?:was|were) not expected: (.*)$)");
  std::smatch m;
  const std::string what = e.what();
  if (std::regex_match(what, m, twice))
    return m[1].str() + " is given " + m[2].str() + " times; give it once";
  if (std::regex_match(what, m, empty)) return m[1].str() + ": an empty value";
  if (std::regex_match(what, m, extras)) {
    // CLI11 lists the words it did not take last first.
    std::vector<std::string> words = split_list(m[1].str(), ' ');
    std::reverse(words.begin(), words.end());
    if (words.size() == 1 && words[0].size() > 1 && words[0][0] == '-')
      return words[0] + " is not an option";
    return std::string(words.size() == 1 ? "unexpected argument " : "unexpected arguments ") +
           joined(words, " ");
  }
  return what;
}

}  // namespace

Cli parse_command_line(int argc, char** given_argv, const std::vector<Experiment>& all,
                       bool speak) {
  Cli cli;
  std::vector<std::string> deprecated;
  std::vector<std::string> words = current_spellings(argc, given_argv, deprecated);
  std::vector<char*> word_ptrs;
  for (std::string& w : words) word_ptrs.push_back(w.data());
  char** argv = word_ptrs.data();
  // Where help and errors go: stdout and stderr, or nowhere (speak false).
  std::ostringstream unheard;
  std::ostream& out = speak ? std::cout : unheard;
  std::ostream& err = speak ? std::cerr : unheard;
  Options& o = cli.options;
  const auto done = [&cli](int exit_code) {
    cli.exit_code = exit_code;
    cli.action = Cli::Action::done;
    return cli;
  };
  // program: "demo", or "demo SUB" for a subcommand's line.
  const auto refuse = [&done, speak](const std::string& message,
                                     const std::string& program = "demo") {
    if (speak) print_error(message, program);
    return done(2);
  };
  if (const std::string help = named_experiments_help(argc, argv, all); !help.empty()) {
    out << help;
    return done(0);
  }
  CLI::App app{"attnlab demo: the attention lesson's experiments, on a GPU or the CPU", "demo"};
  app.footer(examples_text(all));
  app.set_version_flag("--version", std::string("attnlab ") + kVersion + " (" + kGitCommit +
                                        (kBuiltWithCuda ? ", CUDA and CPU" : ", CPU only") + ")");

  CheckedOptions checked;
  bool list = false, no_plots = false;
  o.experiments = chosen_experiments(all, "all");  // without --table
  std::vector<std::string> named_twice;            // by --table
  checked
      .add(&app, "--table", "Table(s) to make: a name, a comma list, or all", o.experiments,
           [&all, &named_twice](Text, Text text) {
             return chosen_experiments(all, text, &named_twice);
           })
      ->default_str("all")
      ->type_name("NAMES");
  app.add_flag("--list", list, "List the tables and exit");
  add_run_options(app, checked, o, no_plots);
  const auto flags = experiment_flags(all);
  const std::map<std::string, CLI::Option_group*> groups =
      add_experiment_flags(app, checked, o, flags);
  CLI::App* cmp = add_compare_command(app, checked, cli.compare);
  add_attention_command(app, cli.attention);

  CLI::App* merge = add_merge_command(app, checked, o, cli.merge_dirs, no_plots);
  CLI::App* replot = add_replot_command(app, checked, o, cli.replot_file);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return done(app.exit(e, out, err));
  } catch (const CLI::CallForAllHelp& e) {
    return done(app.exit(e, out, err));
  } catch (const CLI::CallForVersion& e) {
    return done(app.exit(e, out, err));
  } catch (const CLI::ParseError& e) {
    // A subcommand's error names it and points to its own help.
    const std::vector<CLI::App*> subs = app.get_subcommands();
    if (subs.empty()) return refuse(parse_error_text(e) + " (see demo --help)");
    const std::string sub = subs.front()->get_name();
    return refuse(parse_error_text(e) + " (see demo " + sub + " --help)", "demo " + sub);
  }
  if (list) {
    out << list_text(all);
    return done(0);
  }
  for (const CLI::App* sub : app.get_subcommands()) {
    const std::string refusal = subcommand_refusal(*sub, app, groups);
    if (refusal.empty()) continue;
    if (sub == merge)
      return refuse(refusal +
                        " (merge takes --out, --format, --force, --quiet and --no-plots; "
                        "the parts hold the rest of the command)",
                    "demo merge");
    return refuse(refusal, "demo " + sub->get_name());
  }
  // A value refused: under the subcommand's name when it is one's (compare --tolerance -1).
  if (!checked.refusal.empty()) {
    const auto subs = app.get_subcommands();
    return refuse(checked.refusal, subs.empty() ? "demo" : "demo " + subs.front()->get_name());
  }
  if (*cmp)
    if (const std::string refusal = compare_files_refusal(cli.compare); !refusal.empty())
      return refuse(refusal + " (see demo compare --help)", "demo compare");
  if (const std::string refusal = unread_flag_refusal(all, o); !refusal.empty())
    return refuse(refusal);
  if (*replot && o.out_dir.empty()) return refuse("--out DIR is required", "demo replot");
  if (cli.attention.chosen) read_before_attention(app, cli.attention);
  o.plots = !no_plots;
  if (*cmp) cli.action = Cli::Action::compare;
  if (*merge) cli.action = Cli::Action::merge;
  if (*replot) cli.action = Cli::Action::replot;
  if (*cmp || *merge || *replot) return cli;

  if (const std::string refusal = chosen_experiments_refusal(all, o); !refusal.empty())
    return refuse(refusal);
  cli.warnings = no_effect_notices(all, flags, o, no_plots, app.count("--checkpoint") > 0,
                                   app.count("--checkpoint-every") > 0, app.count("--gpu") > 0);
  cli.warnings.insert(cli.warnings.begin(), deprecated.begin(), deprecated.end());
  if (!named_twice.empty())
    cli.warnings.push_back("--table: " + joined(named_twice, ", ") +
                           (named_twice.size() == 1 ? " is" : " are") +
                           " named more than once (directly or through all); each runs once");
  record_command_line(argc, argv, o);
  return cli;
}

}  // namespace attn
