// plots.cpp: see plots.hpp. Each figure is a gnuplot script with its data inline (datablocks),
// run once per format; gnuplot writes to a temporary name that is committed under the real name
// only when the file is complete.
#include "host/plots.hpp"

#include "host/format.hpp"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "host/input.hpp"
#include "host/output.hpp"
#include "host/progress.hpp"

namespace attn {

namespace plot {
double num(const Cell& c) {
  if (const auto* d = std::get_if<double>(&c)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<std::uint64_t>(&c)) return static_cast<double>(*u);
  return NAN;
}
std::string text(const Cell& c) {
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  return "";
}
namespace {
// c inside a gnuplot double-quoted string, as itself: '"' and '\\' escaped, and as its octal
// escape, which gnuplot reads back as that character, every control character (a newline would
// end the string and start a command: a table's text, a file name) and '`' (gnuplot runs the
// text between two backquotes as a shell command, inside double quotes too).
void append_escaped(std::string& out, char c) {
  const auto u = static_cast<unsigned char>(c);
  if (c == '"' || c == '\\') {
    out += '\\';
    out += c;
  } else if (u < 0x20 || u == 0x7f || c == '`') {
    const char octal[5] = {'\\', static_cast<char>('0' + (u >> 6)),
                           static_cast<char>('0' + ((u >> 3) & 7)),
                           static_cast<char>('0' + (u & 7)), 0};
    out += octal;
  } else {
    out += c;
  }
}
}  // namespace
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) append_escaped(out, c);
  return out + "\"";
}
std::string nothing_to_draw(const std::string& note) {
  return "unset logscale y\nset yrange [0:1]\nset format y ''\nset label " + quote(note) +
         " at graph 0.5, graph 0.5 center\nplot NaN notitle\n";
}
std::string dk_range(double lo, double hi) {
  return "set xrange [" + round_trip(lo / 1.4) + ":" + round_trip(hi * 1.4) + "]\n";
}
std::string dk_range(const Table& t) {
  double lo = INFINITY, hi = 0;
  for (const auto& r : t.rows) {
    lo = std::min(lo, num(r[t.column("d_k")]));
    hi = std::max(hi, num(r[t.column("d_k")]));
  }
  return dk_range(lo, hi);
}
std::string cells(const std::string& source, const std::string& x, const std::string& y,
                  const std::string& z) {
  return source + " using " + x + ":" + y + ":(0.5):(0.5):" + z +
         " with boxxyerror fill solid 1.0 noborder lc palette notitle";
}
std::string columns(const Table& t, std::initializer_list<const char*> names) {
  std::string s = "$D << EOD\n";
  for (const auto& r : t.rows) {
    const char* sep = "";
    for (const char* name : names) {
      s += sep + round_trip(num(r[t.column(name)]));
      sep = " ";
    }
    s += "\n";
  }
  return s + "EOD\n";
}
std::string title_lines(const std::vector<std::string>& lines, std::size_t width) {
  std::string out = "\"";
  for (std::string line : lines) {
    while (!line.empty()) {
      std::size_t cut = line.size();
      if (line.size() > width) {
        const std::size_t comma = line.rfind(", ", width), semicolon = line.rfind("; ", width);
        const std::size_t at = comma == std::string::npos       ? semicolon
                               : semicolon == std::string::npos ? comma
                                                                : std::max(comma, semicolon);
        if (at != std::string::npos && at > 0) cut = at + 1;
      }
      if (out.size() > 1) out += "\\n";
      for (char c : line.substr(0, cut)) append_escaped(out, c);
      line = cut < line.size() ? line.substr(cut + 1) : "";
    }
  }
  return out + "\"";
}
std::string count(double n) {
  return n >= 0 && n < 1e15 && n == std::floor(n) ? std::to_string(static_cast<std::int64_t>(n))
                                                  : human_number(n);
}
std::string count(double n, const std::string& singular, const std::string& plural) {
  return count(n) + " " + (n == 1 ? singular : plural);
}
std::string run_text(const Table& t, const char* key) {
  if (!t.run.is_object() || !t.run.contains(key)) return "";
  const nlohmann::json& v = t.run[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_number()) return human_number(v.get<double>());
  return "";
}
}  // namespace plot

namespace {

// Runs gnuplot on script; false when it cannot be started or fails. SIGPIPE is ignored while
// the script is written, so a gnuplot that dies (Ctrl-C reaches it too) fails this call instead
// of killing demo before it can clean up.
bool run_gnuplot(const std::string& script) {
  if (stop_requested_by_signal()) return false;  // stopping: draw nothing more
  struct sigaction ignore {
  }, saved{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &saved);
  bool ok = false;
  if (std::FILE* p = popen("exec gnuplot 2>/dev/null", "w")) {
    spdlog::debug("gnuplot started");  // in demo's process group: Ctrl-C reaches it too
    const bool written = std::fwrite(script.data(), 1, script.size(), p) == script.size();
    ok = pclose(p) == 0 && written;
  }
  sigaction(SIGPIPE, &saved, nullptr);
  return ok;
}

}  // namespace

bool gnuplot_available() {
  // Found on PATH, without running anything (a subprocess could be killed by Ctrl-C and make
  // gnuplot look missing).
  static const bool ok = [] {
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t at = 0;
    while (at <= dirs.size()) {
      const std::size_t end = std::min(dirs.find(':', at), dirs.size());
      const std::string dir = end > at ? dirs.substr(at, end - at) : ".";
      if (access((dir + "/gnuplot").c_str(), X_OK) == 0) return true;
      at = end + 1;
    }
    return false;
  }();
  return ok;
}

bool figure_complete(const std::string& path, bool png, std::string& why) {
  std::string data;
  try {
    data = read_regular_file(path);  // what gnuplot wrote: a regular file, never waited on
  } catch (const std::runtime_error& e) {
    return why = e.what(), false;
  }
  if (data.empty()) return why = "empty", false;
  if (png) {
    static const std::string signature("\x89PNG\r\n\x1a\n", 8);
    static const std::string iend("\0\0\0\0IEND\xae\x42\x60\x82", 12);  // PNG spec 11.2.5
    if (data.compare(0, 8, signature) != 0) return why = "no PNG signature", false;
    if (data.size() < 20 || data.compare(data.size() - 12, 12, iend) != 0)
      return why = "truncated PNG (no IEND chunk at its end)", false;
    return true;
  }
  std::size_t end = data.find_last_not_of(" \t\r\n");
  if (data.compare(0, 5, "<?xml") != 0 && data.compare(0, 4, "<svg") != 0)
    return why = "not SVG", false;
  if (end == std::string::npos || end < 5 || data.compare(end - 5, 6, "</svg>") != 0)
    return why = "truncated SVG (no closing </svg>)", false;
  return true;
}

std::vector<std::string> figure_names(const std::vector<Figure>& figures) {
  std::vector<std::string> names;
  for (const Figure& f : figures) names.insert(names.end(), {f.stem + ".png", f.stem + ".svg"});
  return names;
}

void write_gnuplot_figure(const std::string& body, const std::string& path, const std::string& size,
                          bool overwrite) {
  refuse_existing(path, overwrite);
  const std::string tmp = AtomicFile::temporary_name(path);
  const bool png = std::filesystem::path(path).extension() == ".png";
  // gnuplot's fifth line type is a light yellow that white paper hardly shows: a dark red
  // instead, apart from the others (purple, green, light blue, orange, blue).
  const std::string term = (png ? "set terminal pngcairo size " + size + " font 'sans,11'\n"
                                : "set terminal svg size " + size + " font 'sans,11'\n") +
                           "set linetype 5 lc rgb '#b2182b'\n";
  std::remove(tmp.c_str());
  const bool ran =
      run_gnuplot(term + "set output " + plot::quote(tmp) + "\n" + body + "unset output\n");
  std::string why;
  if (stop_requested_by_signal()) {
    std::remove(tmp.c_str());
    throw Interrupted();
  }
  if (!ran || !figure_complete(tmp, png, why)) {
    std::remove(tmp.c_str());
    throw std::runtime_error("gnuplot failed to draw " + path +
                             (ran ? " (" + why + "; is the disk full?)" : ""));
  }
  commit_file(tmp, path, overwrite);
}

std::vector<FigureScript> figure_scripts(const Table& t, const std::vector<Figure>& figures) {
  std::vector<FigureScript> scripts;
  for (const Figure& fig : figures) {
    FigureScript f{fig.stem, fig.script(t), ""};
    if (!f.body.empty()) f.size = fig.size ? fig.size(t) : fig.wide ? "1500,500" : "800,560";
    scripts.push_back(std::move(f));
  }
  return scripts;
}

std::vector<std::string> write_figure_scripts(const std::vector<FigureScript>& scripts,
                                              const std::string& dir, bool overwrite) {
  std::vector<std::string> written;
  for (const FigureScript& fig : scripts) {
    if (fig.body.empty()) continue;
    for (const char* ext : {".png", ".svg"}) {
      const std::string path = dir + "/" + fig.stem + ext;
      write_gnuplot_figure(fig.body, path, fig.size, overwrite);
      written.push_back(path);
    }
  }
  return written;
}

std::vector<std::string> write_figures(const Table& t, const std::vector<Figure>& figures,
                                       const std::string& dir, bool overwrite) {
  return write_figure_scripts(figure_scripts(t, figures), dir, overwrite);
}

void retire_undrawn_figures(const std::vector<Figure>& figures, const std::string& dir,
                            const std::vector<std::string>& drawn, bool overwrite) {
  for (const std::string& name : figure_names(figures)) {
    const std::string path = dir + "/" + name;
    if (std::find(drawn.begin(), drawn.end(), path) == drawn.end()) retire_file(path, overwrite);
  }
}

}  // namespace attn
