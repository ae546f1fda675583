// plots.cpp: see plots.hpp. Each figure is a gnuplot script with its data inline (datablocks),
// run once per format; gnuplot writes to a temporary name that is renamed into place only when
// it succeeded.
#include "host/plots.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "host/output.hpp"

namespace attn {

namespace plot {
double num(const Cell& c) {
  if (const auto* d = std::get_if<double>(&c)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  return NAN;
}
std::string text(const Cell& c) {
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  return "";
}
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}
}  // namespace plot

namespace {

// Runs gnuplot on script; false when it cannot be started or fails.
bool run_gnuplot(const std::string& script) {
  std::FILE* p = popen("gnuplot 2>/dev/null", "w");
  if (!p) return false;
  std::fwrite(script.data(), 1, script.size(), p);
  return pclose(p) == 0;
}

}  // namespace

bool gnuplot_available() {
  static const bool ok = std::system("gnuplot --version >/dev/null 2>&1") == 0;
  return ok;
}

std::vector<std::string> figure_names(const std::vector<Figure>& figures) {
  std::vector<std::string> names;
  for (const Figure& f : figures) names.insert(names.end(), {f.stem + ".png", f.stem + ".svg"});
  return names;
}

std::vector<std::string> write_figures(const Table& t, const std::vector<Figure>& figures,
                                       const std::string& dir, bool overwrite) {
  std::vector<std::string> written;
  for (const Figure& fig : figures) {
    const std::string body = fig.script(t);
    if (body.empty()) continue;
    for (const char* ext : {".png", ".svg"}) {
      const std::string path = dir + "/" + fig.stem + ext;
      write_gnuplot_figure(body, path, fig.wide ? "1500,500" : "800,560", overwrite);
      written.push_back(path);
    }
  }
  return written;
}

void write_gnuplot_figure(const std::string& body, const std::string& path, const std::string& size,
                          bool overwrite) {
  refuse_existing(path, overwrite);
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  const bool png = std::filesystem::path(path).extension() == ".png";
  const std::string term = png ? "set terminal pngcairo size " + size + " font 'sans,11'\n"
                               : "set terminal svg size " + size + " font 'sans,11'\n";
  if (!run_gnuplot(term + "set output " + plot::quote(tmp) + "\n" + body + "unset output\n")) {
    std::remove(tmp.c_str());
    throw std::runtime_error("gnuplot failed to draw " + path);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace attn
