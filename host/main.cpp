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
#include "host/cli.hpp"
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

// Every file --out would write, refused up front if one exists (unless --force).
void check_outputs(const Options& o) {
  if (o.out_dir.empty()) return;
  std::filesystem::create_directories(o.out_dir);
  for (const std::string& name : o.tables) {
    for (const char* ext : {".csv", ".json"})
      refuse_existing(o.out_dir + "/" + name + ext, o.force);
    Table probe;
    probe.name = name;
    if (o.plots)
      for (const auto& f : figure_names(probe)) refuse_existing(o.out_dir + "/" + f, o.force);
  }
  if (!o.per_seed_file.empty()) refuse_existing(o.per_seed_file, o.force);
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
      for (const auto& f : write_figures(t, o.out_dir, o.force)) spdlog::debug("wrote {}", f);
  }
  spdlog::info("wrote {} table(s) to {}", tables.size(), o.out_dir);
}

int run(const Options& o) {
  Provenance prov;
  prov.command_line = o.command_line;
  prov.start_utc = utc_now_iso8601();
  const auto t0 = std::chrono::steady_clock::now();
  const Backend backend = Backend::select(o.device, o.threads);
  check_outputs(o);
  spdlog::debug("device: {} ({})", backend.name(), backend.device_description());
  std::vector<Table> tables;
  const RunContext ctx{o, backend};
  for (const std::string& name : o.tables) {
    auto made = find_experiment(name)->run(ctx);
    tables.insert(tables.end(), made.begin(), made.end());
  }
  prov.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const nlohmann::json provenance = prov.to_json(backend);
  std::cout << render(tables, o.format, provenance) << std::flush;
  if (!o.out_dir.empty()) write_outputs(o, tables, provenance);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Cli cli = parse_command_line(argc, argv);
  if (cli.action == Cli::Action::done) return cli.exit_code;
  if (cli.action == Cli::Action::compare)
    return run_compare(cli.compare.a, cli.compare.b, cli.compare.tolerance);
  setup_logging(cli.options);
  install_stop_handler();
  try {
    return run(cli.options);
  } catch (const Interrupted&) {
    std::fprintf(stderr, "\ndemo: interrupted; no results written\n");
    return 130;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "demo: error: %s\n", e.what());
    return 1;
  }
}
