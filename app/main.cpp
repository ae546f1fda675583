// main.cpp: `demo`, the attnlab experiment runner: the one place that wires the experiments
// (experiments/registry.hpp) into the driver (host/). Parses the command line, picks the device,
// runs the experiments, prints their tables on stdout (logs go to stderr) and, with --out, writes
// CSV, JSON and figures. Exit status: 0 success, 1 a run error (including a failed write to
// stdout), 2 bad usage, 130 interrupted by SIGINT (Ctrl-C), 143 by SIGTERM.
//
// A run is one unit: every destination is checked, and every folder written into is locked
// (a flock on DIR itself), before any work; files are written under temporary names and renamed
// into place together after stdout was written; any failure or signal before that leaves nothing.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <new>
#include <thread>
#include <tuple>

#include "experiments/registry.hpp"
#include "host/backend.hpp"
#include "host/chunks.hpp"
#include "host/cli.hpp"
#include "host/cluster.hpp"
#include "host/compare.hpp"
#include "host/format.hpp"
#include "host/input.hpp"
#include "host/output.hpp"
#include "host/parse.hpp"
#include "host/plots.hpp"
#include "host/progress.hpp"
#include "host/provenance.hpp"

namespace {

using namespace attn;
namespace fs = std::filesystem;

void setup_logging(const Options& o) {
  auto logger = one_line_stderr_logger("demo", "demo: %^%*%$");
  logger->set_level(o.quiet     ? spdlog::level::warn
                    : o.verbose ? spdlog::level::debug
                                : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

// The destinations of a run, checked and locked before any work.
struct OutputPlan {
  std::vector<std::unique_ptr<DirLock>> locks;
};

// Every file this run would write: refused up front when it exists (unless --force, and then
// only regular files), when two outputs name the same file, or when a folder cannot be
// written; each folder is locked against a second run. Fills plan. The --out folder is made
// first (created_out_dir: by this run, set before any later refusal), so that another output
// may name a file in it.
void check_outputs(const Options& o, OutputPlan& plan, CreatedFolders& created_out_dir) {
  std::vector<std::pair<std::string, std::string>> files;  // (path, which option)
  // (folder, file name, option) of each output file
  std::vector<std::tuple<std::string, std::string, std::string>> file_dirs;
  if (!o.out_dir.empty()) {
    plan.locks.push_back(lock_out_dir("--out", o.out_dir, created_out_dir));
    note_removed_temporaries(remove_stale_temporaries(o.out_dir));
  }
  // The experiments' output files (param::output_file flags the user gave).
  for (const std::string& name : o.experiments)
    for (const Param& param : find_experiment(name)->params) {
      if (!param.output_file || !o.given.count(param.flag)) continue;
      const std::string& path = o.given.at(param.flag);
      // One flag read by two chosen experiments: each would write the file, the second over the
      // first.
      if (std::find_if(files.begin(), files.end(), [&](const auto& f) {
            return f.first == path && f.second == param.flag;
          }) != files.end())
        throw std::invalid_argument(param.flag + " " + path +
                                    ": more than one chosen table writes it; run those tables "
                                    "one at a time");
      refuse_unusable_name(param.flag, path);
      const fs::path p(path);
      if (!p.has_filename() || p.filename() == "." || p.filename() == "..")
        throw std::runtime_error(param.flag + " " + path + ": names a folder, not a file");
      const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
      if (!fs::is_directory(dir))
        throw std::runtime_error(param.flag + " " + path + ": no folder " + dir);
      files.push_back({path, param.flag});
      file_dirs.push_back({dir, p.filename().string(), param.flag});
    }
  if (!o.out_dir.empty()) {
    for (const std::string& name : o.experiments) {
      for (const char* ext : {".csv", ".json"})
        files.push_back({o.out_dir + "/" + name + ext, "--out"});
      // Its figures whether or not this run draws them: one it does not draw is removed
      // (retire_undrawn_figures), which takes --force as replacing it does.
      for (const auto& f : figure_names(find_experiment(name)->figures))
        files.push_back({o.out_dir + "/" + f, "--out"});
    }
  }
  for (const auto& [dir, name, flag] : file_dirs) {
    std::error_code ec;
    bool locked = !o.out_dir.empty() && fs::equivalent(dir, o.out_dir, ec);
    for (const auto& lock : plan.locks) locked = locked || fs::equivalent(dir, lock->dir(), ec);
    if (!locked) plan.locks.push_back(std::make_unique<DirLock>(dir, flag + "'s folder " + dir));
    note_removed_temporaries(remove_stale_temporaries(dir, name));
  }
  // The chunk driver's files: a shard's parts and the checkpoint (prepare_chunks checks where
  // they go; an existing checkpoint is the run's input, so it is not refused as existing).
  const std::size_t results = files.size();
  if (o.shards > 0)
    for (const std::string& name : o.experiments)
      if (find_experiment(name)->chunked)
        files.push_back({o.out_dir + "/" + name + ".part.json", "--shard"});
  if (!o.checkpoint.empty()) files.push_back({o.checkpoint, "--checkpoint"});
  // Two outputs naming one file: the second would silently replace the first.
  std::vector<std::pair<std::string, std::string>> seen;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& [path, option] = files[i];
    const std::string canonical = fs::weakly_canonical(fs::absolute(path)).string();
    for (const auto& [other, other_option] : seen)
      if (other == canonical)
        throw std::runtime_error(option + " and " + other_option + " both write " + path +
                                 "; give them different names");
    seen.push_back({canonical, option});
    if (i < results) try {
        refuse_existing(path, o.force);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(option + " " + e.what());  // "--per-seed runs.csv exists; ..."
      }
  }
  if (!o.out_dir.empty() && o.plots && !gnuplot_available())
    spdlog::warn("warning: gnuplot not found: no figures (apt-get install gnuplot-nox)");
}

// Writes every --out file under its temporary name (OutputSet renames them later).
void write_outputs(const Options& o, const std::vector<Table>& tables,
                   const nlohmann::json& provenance) {
  for (const Table& t : tables) {
    const std::string stem = o.out_dir + "/" + t.name;
    write_file_atomic(stem + ".csv", render_csv(t), o.force);
    nlohmann::json p = provenance;
    for (const auto& [k, v] : t.run.items()) p[k] = v;
    write_file_atomic(stem + ".json", render({t}, Format::json, p), o.force);
    const std::vector<Figure>& figures = find_experiment(t.name)->figures;
    std::vector<std::string> drawn;
    if (o.plots && gnuplot_available()) drawn = write_figures(t, figures, o.out_dir, o.force);
    for (const auto& f : drawn) spdlog::debug("wrote {}", f);
    retire_undrawn_figures(figures, o.out_dir, drawn, o.force);
  }
}

int run(const Options& o, CreatedFolders& created_out_dir) {
  Provenance prov;
  prov.command_line = o.command_line;
  prov.start_utc = utc_now_iso8601();
  const auto t0 = std::chrono::steady_clock::now();
  const std::string ranks = cluster::size() > 1 ? cluster::describe_ranks() : "";
  OutputPlan plan;
  if (cluster::is_root()) check_outputs(o, plan, created_out_dir);  // rank 0 alone writes
  OutputSet files;  // after plan: its temporaries go before the locks are released
  const Backend backend = Backend::select(o.device, o.threads, o.gpu, cluster::local_rank());
  spdlog::debug("device: {} ({})", backend.name(), backend.device_description());
  std::vector<Table> tables;
  for (const std::string& name : o.experiments) {
    stop_point();
    // An experiment without chunks is not split over ranks: rank 0 alone computes it (and writes
    // its files, --per-seed included), the others have no share of it.
    if (!cluster::is_root() && !find_experiment(name)->chunked) continue;
    auto made = run_experiment(*find_experiment(name), o, o.given, backend, cluster::size());
    tables.insert(tables.end(), made.begin(), made.end());
  }
  // Held back by Backend::select until no refusal could follow; said only when a table was
  // computed on the backend (knob and rnn-decay run on the host whatever the device).
  if (std::any_of(o.experiments.begin(), o.experiments.end(), [](const std::string& name) {
        return find_experiment(name)->runs == Runs::backend;
      }))
    announce_backend();
  if (!reports_results(o)) {  // a shard (its part is written) or an MPI rank but 0
    files.commit_all();
    return 0;
  }
  prov.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json provenance = prov.to_json(backend);
  if (!ranks.empty()) provenance["ranks"] = ranks;
  // A merge's results are the parts' work; its own time is reading and folding them.
  if (o.merged_parts > 0) provenance["merged_parts"] = o.merged_parts;
  const std::string printed = render(tables, o.format, provenance);
  if (!o.out_dir.empty()) write_outputs(o, tables, provenance);
  stop_point();
  write_stdout(printed);
  files.commit_all();
  if (!o.out_dir.empty())
    spdlog::info("wrote {} to {}", human_count(tables.size(), "table", "tables"), o.out_dir);
  return 0;
}

// `demo merge DIR...`: the parts' own command, parsed again with merge's output options.
Cli merge_command(const Cli& merge) {
  std::vector<std::string> words = load_parts(merge.merge_dirs);
  const Options& m = merge.options;
  if (!m.out_dir.empty()) words.insert(words.end(), {"--out", m.out_dir});
  words.insert(words.end(), {"--format", format_name(m.format)});
  if (m.force) words.push_back("--force");
  if (m.quiet) words.push_back("--quiet");
  if (!m.plots) words.push_back("--no-plots");
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  // Parsed silently: words that do not make the parts' command are the part's fault, named so.
  Cli cli = parse_command_line(static_cast<int>(argv.size()), argv.data(), experiments(), false);
  check_merged_command(cli.action == Cli::Action::run ? &cli.options : nullptr);
  cli.options.merged_parts = merge.merge_dirs.size();
  return cli;
}

// A cell of a result file's row, as Table holds it (host/format.cpp's table_json, reversed):
// null is empty, an integer stays an integer, an array of numbers is a row of reals.
Cell cell_of(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) return v.get<std::vector<double>>();
  return Cell{};
}

// `demo replot RESULT.json --out DIR`: the figures of a stored result drawn again from the file
// alone (each table's rows, notes, extra data and run, as --format json writes them), without
// recomputing anything. Refused with one line before anything is drawn: a file that cannot be
// read, is not JSON or not a result, a table demo does not know, or no table with figures
// (status 2: a table without figures beside others is passed over, and named), data a figure
// cannot read (status 2); a destination
// that may not be written, as a run's (status 1). gnuplot's failure: 1.
int run_replot(const std::string& path, const Options& o) {
  std::vector<std::pair<Table, const Experiment*>> todo;
  std::vector<std::string> without;                // tables that have no figures
  std::vector<std::vector<FigureScript>> scripts;  // todo's figures
  try {
    nlohmann::json j;
    const std::string text = read_regular_file(path);
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
      throw std::runtime_error("not JSON");
    }
    if (!j.is_object() || !j.contains("tables") || !j["tables"].is_array() || j["tables"].empty() ||
        !j.contains("provenance") || !j["provenance"].is_object())
      throw std::runtime_error("not a result file (demo --format json or --out writes one)");
    for (const auto& tj : j["tables"]) {
      if (!tj.is_object() || !tj.contains("name") || !tj["name"].is_string() ||
          !tj.contains("columns") || !tj["columns"].is_array() || !tj.contains("rows") ||
          !tj["rows"].is_array())
        throw std::runtime_error("not a result file (a table without name, columns or rows)");
      const std::string name = tj["name"].get<std::string>();
      const Experiment* e = find_experiment(name);
      const std::string command = j["provenance"].value("command_line", std::string());
      if (!e && command.rfind("demo attention", 0) == 0)
        throw std::runtime_error(
            "a result of demo attention, whose figure its own run draws (--out DIR); replot "
            "draws the figures of demo --table results");
      if (!e) throw std::runtime_error("table " + quote_input(name) + " is not one of demo's");
      const bool seen = std::count(without.begin(), without.end(), name) > 0 ||
                        std::any_of(todo.begin(), todo.end(),
                                    [&](const auto& done) { return done.first.name == name; });
      if (seen)
        throw std::runtime_error("two tables named " + name + " (a result holds each once)");
      if (e->figures.empty()) {
        without.push_back(name);
        continue;
      }
      Table t;
      t.name = name;
      t.title = tj.value("title", "");
      for (const auto& c : tj["columns"]) t.columns.push_back({c.get<std::string>()});
      for (const auto& r : tj["rows"]) {
        std::vector<Cell> row;
        for (const auto& c : t.columns)
          row.push_back(r.contains(c.name) ? cell_of(r[c.name]) : Cell{});
        t.add_row(std::move(row));
      }
      if (tj.contains("notes")) t.notes = tj["notes"].get<std::vector<std::string>>();
      // A file written before tables carried their run holds it in the provenance.
      t.run = tj.contains("run") ? tj["run"] : j["provenance"];
      for (const auto& [k, v] : tj.items())
        if (k != "name" && k != "title" && k != "columns" && k != "rows" && k != "notes" &&
            k != "run")
          t.extra[k] = v;
      todo.emplace_back(std::move(t), e);
    }
    if (todo.empty())
      throw std::runtime_error(std::string(without.size() == 1 ? "table " : "tables ") +
                               joined(without, ", ") + (without.size() == 1 ? " has" : " have") +
                               " no figures (nothing to replot)");
    // The figures' scripts, made before any destination is touched: a table whose data a
    // figure cannot read (a value of another type, a list cut short) is refused here.
    for (const auto& [t, e] : todo) {
      try {
        scripts.push_back(figure_scripts(t, e->figures));
      } catch (const Interrupted&) {
        throw;
      } catch (const std::exception& x) {  // a missing field or column, a value of another type
        throw std::runtime_error("table " + t.name + ": its data is not what demo writes (" +
                                 json_error_text(x) + ")");
      }
    }
  } catch (const nlohmann::json::exception& e) {
    print_error(path + ": not a result demo wrote (" + json_error_text(e) + ")", "demo replot");
    return 2;
  } catch (const std::exception& e) {
    print_error(path + ": " + e.what(), "demo replot");
    return 2;
  }
  std::unique_ptr<DirLock> lock;  // held while the figures are drawn
  CreatedFolders created;         // the folders made by this replot (as a run's --out)
  try {                           // the destinations, as a run's: refused with status 1
    if (!gnuplot_available()) throw std::runtime_error("gnuplot is not on PATH");
    lock = lock_out_dir("--out", o.out_dir, created);
    for (const auto& [t, e] : todo)
      for (const auto& f : figure_names(e->figures)) refuse_existing(o.out_dir + "/" + f, o.force);
  } catch (const std::exception& e) {
    lock.reset();
    created.remove_if_empty();
    print_error(e.what(), "demo replot");
    return 1;
  }
  try {
    OutputSet figures;  // every figure renamed into place together, or none
    std::size_t written = 0;
    std::vector<std::vector<std::string>> drawn;
    for (const auto& figure : scripts) {
      drawn.push_back(write_figure_scripts(figure, o.out_dir, o.force));
      written += drawn.back().size();
    }
    if (written == 0) {
      lock.reset();
      created.remove_if_empty();
      print_error(path + ": its tables hold no data for their figures", "demo replot");
      return 1;
    }
    for (std::size_t i = 0; i < todo.size(); ++i)
      retire_undrawn_figures(todo[i].second->figures, o.out_dir, drawn[i], o.force);
    figures.commit_all();
    spdlog::info("replot: {} figure files in {}{}", written, o.out_dir,
                 without.empty() ? std::string()
                                 : "; " + joined(without, ", ") +
                                       (without.size() == 1 ? " has" : " have") + " no figures");
  } catch (const Interrupted&) {
    lock.reset();
    created.remove_if_empty();
    const int sig = stop_signal() != 0 ? stop_signal() : SIGINT;
    print_interrupted(sig, "demo replot");
    return 128 + sig;
  } catch (const std::exception& e) {
    lock.reset();
    created.remove_if_empty();
    print_error(path + ": " + e.what(), "demo replot");
    return 1;
  }
  return 0;
}

// A closed stdout would let the next open() take descriptor 1 and receive the results; a
// closed stdin or stderr is pointed at /dev/null for the same reason.
bool standard_descriptors_ok() {
  for (int fd : {0, 2})
    if (fcntl(fd, F_GETFD) == -1) {
      const int null = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
      if (null >= 0 && null != fd) close(null);
    }
  return fcntl(1, F_GETFD) != -1;
}

// Under MPI, a refusal every rank meets: rank 0 says it and ends the job with `code`; the other
// ranks wait for that (at most kRankWait, so never a hang), so that none ends the job before
// rank 0 has spoken. Nothing in a job of one.
void end_job_after_rank_0(int code) {
  if (cluster::size() == 1) return;
  constexpr auto kRankWait = std::chrono::seconds(60);
  if (!cluster::is_root()) std::this_thread::sleep_for(kRankWait);
  std::fflush(stderr);
  cluster::abort(code);
}

int main_checked(int argc, char** argv) {
  // Before anything is read: every command (compare, merge's parts, attention's inputs, a
  // checkpoint) stops at SIGINT or SIGTERM with 130 or 143, at the stop points of its readers.
  install_stop_handler();
  // Under a launcher that started several processes, rank 0 alone answers what is not the
  // job's work: --help, --version, --list and refusals print once (before MPI starts, from the
  // launcher's word).
  const bool speaks = !cluster::launched_as_several() || cluster::launched_rank() == 0;
  const bool stdout_open = standard_descriptors_ok();
  Cli cli = parse_command_line(argc, argv, experiments(), speaks);  // opens no file
  // replot alone writes nothing to stdout (its note goes to stderr).
  if (!stdout_open && cli.action != Cli::Action::done && cli.action != Cli::Action::replot) {
    if (!speaks) return 0;
    print_error("stdout is closed; results go to stdout");
    return cli.action == Cli::Action::compare ? 2 : 1;
  }
  // A silent process ends at once and without an error of its own: rank 0's status is the
  // job's, and an early non-zero exit here would make the launcher end rank 0 before it spoke.
  if (cli.action == Cli::Action::done && !speaks) return 0;
  if (cli.action == Cli::Action::done) {
    try {
      flush_stdout();  // --help, --version, --list
    } catch (const std::exception& e) {
      print_error(e.what());
      return cli.exit_code != 0 ? cli.exit_code : 1;
    }
    return cli.exit_code;
  }
  // compare and attention run as one process: under a launcher that started several, rank 0
  // alone runs them (it prints and writes), the others end at once.
  const bool one_process = cli.action == Cli::Action::compare ||
                           cli.action == Cli::Action::replot || cli.attention.chosen;
  if (one_process && cluster::launched_as_several() && cluster::launched_rank() != 0) return 0;
  if (cli.action == Cli::Action::compare)
    return run_compare(cli.compare.a, cli.compare.b, cli.compare.rule);
  if (cli.action == Cli::Action::replot) {
    setup_logging(cli.options);
    return run_replot(cli.replot_file, cli.options);
  }
  if (cli.action == Cli::Action::merge) {
    try {
      cli = merge_command(cli);
    } catch (const Interrupted&) {
      const int sig = stop_signal() != 0 ? stop_signal() : SIGINT;
      if (!speaks) return 0;
      print_interrupted(sig, "demo merge");
      return 128 + sig;
    } catch (const std::exception& e) {
      if (!speaks) return 0;
      print_error(e.what(), "demo merge");
      return 2;
    }
  }
  // A merge runs its parts' command: its errors and interruptions are merge's.
  const std::string program = cli.options.merged_parts > 0 ? "demo merge" : "demo";
  setup_logging(cli.options);
  if (cli.attention.chosen) {
    for (const auto& w : cli.warnings) spdlog::warn("warning: {}", w);
    return run_attention_command(cli.attention, cli.options.command_line);
  }
  int refused = 2;  // MPI's start and a refused input: usage; a refused destination: 1
  try {
    cluster::init(&argc, &argv);
    // Only rank 0 speaks (its notices hold for the job); the others say warnings and errors.
    if (!cluster::is_root()) spdlog::set_level(spdlog::level::warn);
    install_stop_handler();  // again: MPI may have set its own
    refused = 1;
    prepare_chunks(cli.options);  // --shard and --checkpoint checked before any work
  } catch (const Interrupted&) {  // while the checkpoint was read
    const int sig = stop_signal() != 0 ? stop_signal() : SIGINT;
    if (speaks && cluster::is_root()) print_interrupted(sig, program);
    if (cluster::size() > 1) cluster::abort(128 + sig);
    return 128 + sig;
  } catch (const std::exception& e) {
    if (dynamic_cast<const std::invalid_argument*>(&e)) refused = 2;
    // MPI may not have started (a build without it, its module missing): the launcher's word.
    if (!speaks) return 0;
    if (cluster::is_root()) print_error(e.what(), program);
    end_job_after_rank_0(refused);
    return refused;
  }
  if (cluster::is_root())
    for (const auto& w : cli.warnings) spdlog::warn("warning: {}", w);
  CreatedFolders created_out_dir;
  // Under MPI a rank's errors name the rank, and end the whole job (never a hang).
  const std::string who =
      cluster::size() > 1 ? "rank " + std::to_string(cluster::rank()) + ": " : "";
  int status = 0;
  try {
    status = run(cli.options, created_out_dir);
  } catch (const Interrupted&) {
    created_out_dir.remove_if_empty();
    const int sig = stop_signal() != 0 ? stop_signal() : SIGINT;
    if (cluster::is_root()) print_interrupted(sig, program);
    // Every rank was signalled (mpirun forwards the signal). Rank 0 has saved the checkpoint
    // (run_chunks saves before it rethrows) and ends the job; the other ranks wait for that (the
    // launcher ends them when rank 0 exits), at most kRankStopWait, so that none ends the job
    // first and cuts rank 0's save short. Bounded: never a hang.
    if (cluster::size() > 1) {
      constexpr auto kRankStopWait = std::chrono::seconds(60);
      if (!cluster::is_root()) std::this_thread::sleep_for(kRankStopWait);
      std::_Exit(128 + sig);
    }
    return 128 + sig;
  } catch (const std::invalid_argument& e) {  // a request refused by its experiment: a usage error
    created_out_dir.remove_if_empty();
    if (cluster::is_root()) print_error(e.what(), program);
    end_job_after_rank_0(2);
    return 2;
  } catch (const std::exception& e) {
    created_out_dir.remove_if_empty();
    // A run whose results could not be written (a full disk) or that failed on the way keeps its
    // work in the checkpoint (rank 0's): said, so that it is not run again from the start.
    std::error_code ec;
    const bool kept = cluster::is_root() && !cli.options.checkpoint.empty() &&
                      fs::is_regular_file(cli.options.checkpoint, ec);
    print_error(who + e.what() +
                    (kept ? "; the work done is in the checkpoint " + cli.options.checkpoint +
                                ": the same command continues from it"
                          : ""),
                program);
    if (cluster::size() > 1) {
      std::fflush(stderr);
      cluster::abort(1);
    }
    return 1;
  }
  cluster::finalize();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return main_checked(argc, argv);
  } catch (const std::bad_alloc&) {
    print_error("out of memory");  // allocates nothing
    return 1;
  } catch (...) {
    print_error("an unexpected failure");
    return 1;
  }
}
