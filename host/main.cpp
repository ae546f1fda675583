// main.cpp: `demo`, the attnlab experiment runner. Parses the command line, picks the device,
// runs the tables, prints them on stdout (logs go to stderr) and, with --out, writes CSV,
// JSON and figures. Exit status: 0 success, 1 a run error, 2 bad usage, 130 interrupted.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "experiments/registry.hpp"
#include "host/backend.hpp"
#include "host/chunks.hpp"
#include "host/cli.hpp"
#include "host/cluster.hpp"
#include "host/compare.hpp"
#include "host/format.hpp"
#include "host/output.hpp"
#include "host/plots.hpp"
#include "host/progress.hpp"
#include "host/provenance.hpp"

namespace {

using namespace attn;

void setup_logging(const Options& o) {
  auto logger = spdlog::stderr_color_mt("demo");
  logger->set_pattern("demo: %^%v%$");
  logger->set_level(o.quiet     ? spdlog::level::warn
                    : o.verbose ? spdlog::level::debug
                                : spdlog::level::info);
  spdlog::set_default_logger(logger);
}

// Every file the run would write (--out, and the tables' output-file flags), refused up front
// if one exists (unless --force). Returns whether it created the directory (so that a failed
// run can remove it again).
bool check_outputs(const Options& o) {
  for (const std::string& name : o.tables)
    for (const Param& p : find_experiment(name)->params) {
      if (!p.output_file || !o.given.count(p.flag)) continue;
      const std::string& path = o.given.at(p.flag);
      refuse_existing(path, o.force);
      const auto dir = std::filesystem::path(path).parent_path();
      if (!dir.empty() && !std::filesystem::is_directory(dir))
        throw std::runtime_error(p.flag + " " + path + ": no directory " + dir.string());
    }
  if (o.out_dir.empty()) return false;
  std::error_code ec;
  const bool created = std::filesystem::create_directories(o.out_dir, ec);
  if (ec) throw std::runtime_error("--out " + o.out_dir + ": cannot create it: " + ec.message());
  for (const std::string& name : o.tables) {
    for (const char* ext : {".csv", ".json"})
      refuse_existing(o.out_dir + "/" + name + ext, o.force);
    if (o.plots)
      for (const auto& f : figure_names(find_experiment(name)->figures))
        refuse_existing(o.out_dir + "/" + f, o.force);
  }
  return created;
}

// Removes the --out directory again when this run created it and wrote nothing there.
void remove_if_created_and_empty(const Options& o, bool created) {
  std::error_code ec;
  if (created && std::filesystem::is_empty(o.out_dir, ec)) std::filesystem::remove(o.out_dir, ec);
}

void write_outputs(const Options& o, const std::vector<Table>& tables,
                   const nlohmann::json& provenance) {
  if (o.plots && !gnuplot_available())
    spdlog::warn("gnuplot not found: no figures (apt-get install gnuplot-nox)");
  for (const Table& t : tables) {
    const std::string stem = o.out_dir + "/" + t.name;
    write_file_atomic(stem + ".csv", render_csv(t), o.force);
    nlohmann::json p = provenance;
    for (const auto& [k, v] : t.run.items()) p[k] = v;
    write_file_atomic(stem + ".json", render({t}, Format::json, p), o.force);
    if (o.plots && gnuplot_available())
      for (const auto& f : write_figures(t, find_experiment(t.name)->figures, o.out_dir, o.force))
        spdlog::debug("wrote {}", f);
  }
  spdlog::info("wrote {} table(s) to {}", tables.size(), o.out_dir);
}

int run(const Options& o, bool& created_out_dir) {
  Provenance prov;
  prov.command_line = o.command_line;
  prov.start_utc = utc_now_iso8601();
  const auto t0 = std::chrono::steady_clock::now();
  const std::string ranks = cluster::size() > 1 ? cluster::describe_ranks() : "";
  if (cluster::is_root()) created_out_dir = check_outputs(o);
  const Backend backend = Backend::select(o.device, o.threads, cluster::local_rank());
  spdlog::debug("device: {} ({})", backend.name(), backend.device_description());
  std::vector<Table> tables;
  for (const std::string& name : o.tables) {
    auto made = run_experiment(*find_experiment(name), o, o.given, backend);
    tables.insert(tables.end(), made.begin(), made.end());
  }
  if (!reports_results(o)) return 0;  // a shard (its part is written) or an MPI rank but 0
  prov.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json provenance = prov.to_json(backend);
  if (!ranks.empty()) provenance["ranks"] = ranks;
  std::cout << render(tables, o.format, provenance) << std::flush;
  if (!o.out_dir.empty()) write_outputs(o, tables, provenance);
  return 0;
}

// `demo merge DIR...`: the parts' own command, parsed again with merge's output options.
Cli merge_command(const Cli& merge) {
  std::vector<std::string> words = load_parts(merge.merge_dirs);
  const Options& m = merge.options;
  if (!m.out_dir.empty()) words.insert(words.end(), {"--out", m.out_dir});
  const char* formats[] = {"table", "csv", "json", "markdown"};
  words.insert(words.end(), {"--format", formats[static_cast<int>(m.format)]});
  if (m.force) words.push_back("--force");
  if (m.quiet) words.push_back("--quiet");
  if (!m.plots) words.push_back("--no-plots");
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

int main(int argc, char** argv) {
  Cli cli = parse_command_line(argc, argv);
  if (cli.action == Cli::Action::done) return cli.exit_code;
  if (cli.action == Cli::Action::compare)
    return run_compare(cli.compare.a, cli.compare.b, cli.compare.tolerance);
  if (cli.action == Cli::Action::merge) {
    try {
      cli = merge_command(cli);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "demo: error: %s\n", e.what());
      return 2;
    }
    if (cli.action == Cli::Action::done) return cli.exit_code;
  }
  setup_logging(cli.options);
  install_stop_handler();  // before MPI starts, so that mpirun's SIGTERM finds it
  try {
    cluster::init(&argc, &argv);
    // Only rank 0 speaks (its notices hold for the job); the others say warnings and errors.
    if (!cluster::is_root()) spdlog::set_level(spdlog::level::warn);
    install_stop_handler();       // again: MPI may have set its own
    prepare_chunks(cli.options);  // --shard and --checkpoint checked before any work
  } catch (const std::exception& e) {
    if (cluster::is_root()) std::fprintf(stderr, "demo: error: %s\n", e.what());
    if (cluster::size() > 1) cluster::abort(2);
    return 2;
  }
  if (cluster::is_root())
    for (const auto& w : cli.warnings) spdlog::warn("warning: {}", w);
  bool created_out_dir = false;
  // Under MPI a rank's errors name the rank, and end the whole job (never a hang).
  const std::string who =
      cluster::size() > 1 ? "rank " + std::to_string(cluster::rank()) + ": " : "";
  int status = 0;
  try {
    status = run(cli.options, created_out_dir);
  } catch (const Interrupted&) {
    remove_if_created_and_empty(cli.options, created_out_dir);
    if (cluster::is_root()) std::fprintf(stderr, "\ndemo: interrupted; no results written\n");
    if (cluster::size() > 1) std::_Exit(130);  // every rank was signalled (mpirun forwards)
    return 130;
  } catch (const std::exception& e) {
    remove_if_created_and_empty(cli.options, created_out_dir);
    std::fprintf(stderr, "demo: error: %s%s\n", who.c_str(), e.what());
    if (cluster::size() > 1) {
      std::fflush(stderr);
      cluster::abort(1);
    }
    return 1;
  }
  cluster::finalize();
  return status;
}
