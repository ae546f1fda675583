// plots.cpp: see plots.hpp. Each figure is a gnuplot script with its data inline (datablocks),
// run once per format; gnuplot writes to a temporary name that is renamed into place only when
// it succeeded.
#include "host/plots.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>

#include "host/format.hpp"
#include "host/output.hpp"
#include "host/progress.hpp"

namespace attn {
namespace {

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
std::string q(const std::string& s) {  // a gnuplot string literal
  std::string out = "\"";
  for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

// The body of each figure (everything after "set terminal/output"), keyed by file stem.
std::map<std::string, std::string> scripts(const Table& t) {
  std::map<std::string, std::string> out;
  std::ostringstream s;
  if (t.name == "dk-std") {
    s << "$D << EOD\n";
    for (const auto& r : t.rows)
      s << num(r[t.column("d_k")]) << " " << round_trip(num(r[t.column("std")])) << " "
        << round_trip(num(r[t.column("std_ci95_low")])) << " "
        << round_trip(num(r[t.column("std_ci95_high")])) << " "
        << round_trip(num(r[t.column("std_scaled")])) << "\n";
    s << "EOD\n"
      << "set multiplot layout 1,2 title 'std of q.k, q and k with N(0, 1) entries'\n"
      << "set logscale xy 2\nset xlabel 'd_k'\nset ylabel 'std'\nset grid\n"
      << "set key top left\nset offsets graph 0.05, graph 0.05, 0, 0\n"
      << "set title 'grows like sqrt(d_k); dividing by sqrt(d_k) gives 1'\n"
      << "plot sqrt(x) with lines lw 2 lc rgb '#888888' title 'sqrt(d_k) (theory)', \\\n"
      << "     1 with lines dt 2 lc rgb '#888888' title '1 (theory, scaled)', \\\n"
      << "     $D using 1:2:3:4 with yerrorbars pt 7 lc rgb '#1f77b4' title 'std of q.k (95% CI)', "
         "\\\n"
      << "     $D using 1:5 with points pt 5 lc rgb '#d62728' title 'std of q.k / sqrt(d_k)'\n"
      << "unset logscale y\nset ylabel 'std / sqrt(d_k) - 1'\nset key top right\n"
      << "set title 'relative error, with its 95% interval'\n"
      << "plot 0 with lines dt 2 lc rgb '#888888' title 'theory', \\\n"
      << "     $D using 1:($2/sqrt($1)-1):($3/sqrt($1)-1):($4/sqrt($1)-1) with yerrorbars pt 7 "
         "lc rgb '#1f77b4' title 'measured'\n"
      << "unset multiplot\n";
    out["dk-std"] = s.str();
  } else if (t.name == "softmax-saturation") {
    s << "$D << EOD\n";
    for (const auto& r : t.rows) {
      s << num(r[0]);
      for (const char* c : {"max_weight_unscaled", "max_weight_scaled", "entropy_unscaled",
                            "entropy_scaled", "jacobian_norm_unscaled", "jacobian_norm_scaled"})
        s << " " << round_trip(num(r[t.column(c)]));
      s << "\n";
    }
    s << "EOD\n"
      << "set multiplot layout 1,3 title " << q(t.title) << "\n"
      << "set logscale x 2\nset xlabel 'd_k'\nset grid\nset key bottom left\n"
      << "set ylabel 'mean max weight'\nset yrange [0:1.05]\nset key bottom right\n"
      << "plot $D using 1:2 with linespoints pt 7 title 'unscaled', $D using 1:3 with linespoints "
         "pt 5 title 'scaled'\n"
      << "set ylabel 'mean entropy (nats)'\nset yrange [0:*]\nset key bottom left\n"
      << "plot $D using 1:4 with linespoints pt 7 title 'unscaled', $D using 1:5 with linespoints "
         "pt 5 title 'scaled'\n"
      << "set ylabel 'mean ||J||_F of softmax'\n"
      << "plot $D using 1:6 with linespoints pt 7 title 'unscaled', $D using 1:7 with linespoints "
         "pt 5 title 'scaled'\n"
      << "unset multiplot\n";
    out["softmax-saturation"] = s.str();
  } else if (t.name == "training-sweep" && t.extra.contains("histogram")) {
    const auto& h = t.extra["histogram"];
    const int bins = h["bins"].get<int>();
    std::vector<std::string> names;
    s << "$D << EOD\n";
    for (int b = 0; b < bins; ++b) {
      s << (b + 0.5) / bins;
      for (const auto& [name, counts] : h["counts"].items()) {
        double total = 0;
        for (const auto& c : counts) total += c.get<double>();
        s << " " << (total > 0 ? counts[b].get<double>() / total : 0.0);
      }
      s << "\n";
    }
    s << "EOD\n";
    for (const auto& [name, counts] : h["counts"].items()) names.push_back(name);
    s << "set multiplot layout 1," << names.size()
      << " title 'sweet''s weight on apple across seeds (20 bins on [0, 1])'\n"
      << "set xlabel 'weight on apple'\nset ylabel 'fraction of seeds'\nset xrange [0:1]\n"
      << "set yrange [0:*]\nset grid\nset style fill solid 0.6\nset boxwidth " << 1.0 / bins
      << "\n";
    for (std::size_t i = 0; i < names.size(); ++i)
      s << "set title " << q(names[i]) << "\nplot $D using 1:" << i + 2
        << " with boxes lc rgb '#1f77b4' notitle\n";
    s << "unset multiplot\n";
    out["training-sweep"] = s.str();
  } else if (t.name == "weighted-average" || t.name == "qkv") {
    // Heatmaps of every 3 x 3 weight matrix in the table, one panel each.
    std::vector<std::pair<std::string, std::vector<std::vector<double>>>> mats;
    for (const auto& r : t.rows) {
      const std::string quantity = text(r[1]);
      if (quantity.rfind("weights", 0) != 0) continue;
      const std::string label =
          text(r[0]) + (quantity == "weights" ? "" : ", " + quantity.substr(9));
      if (mats.empty() || mats.back().first != label) mats.push_back({label, {}});
      mats.back().second.push_back(std::get<std::vector<double>>(r[3]));
    }
    s << "set multiplot layout 1," << mats.size() << " title "
      << q(t.name + ": attention weights (row looks at column)") << "\n"
      << "set palette defined (0 '#ffffff', 1 '#6f9fd8')\nset cbrange [0:1]\nunset colorbox\n"
      << "set xtics ('cat' 0, 'dog' 1, 'car' 2)\nset ytics ('cat' 0, 'dog' 1, 'car' 2)\n"
      << "set yrange [2.5:-0.5]\nset xrange [-0.5:2.5]\nset size ratio 1\n";
    for (std::size_t m = 0; m < mats.size(); ++m) {
      s << "$M" << m << " << EOD\n";
      for (std::size_t i = 0; i < mats[m].second.size(); ++i)
        for (std::size_t j = 0; j < mats[m].second[i].size(); ++j)
          s << j << " " << i << " " << round_trip(mats[m].second[i][j]) << "\n";
      s << "EOD\nset title " << q(mats[m].first) << "\n"
        << "plot $M" << m << " using 1:2:3 with image notitle, $M" << m
        << " using 1:2:(sprintf('%.3f', $3)) with labels tc rgb '#000000' notitle\n";
    }
    s << "unset multiplot\n";
    out[t.name + "-weights"] = s.str();
  }
  return out;
}

// Runs gnuplot on script; false when it cannot be started or fails. SIGPIPE is ignored while
// the script is written, so a gnuplot that dies (Ctrl-C reaches it too) fails this call instead
// of killing demo before it can clean up.
bool run_gnuplot(const std::string& script) {
  struct sigaction ignore {
  }, saved{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &saved);
  bool ok = false;
  if (std::FILE* p = popen("exec gnuplot 2>/dev/null", "w")) {
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
  std::ifstream f(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.good() && !f.eof()) return why = "cannot read it", false;
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

std::vector<std::string> figure_names(const std::string& table_name) {
  static const std::map<std::string, std::string> stems = {
      {"dk-std", "dk-std"},
      {"softmax-saturation", "softmax-saturation"},
      {"training-sweep", "training-sweep"},
      {"weighted-average", "weighted-average-weights"},
      {"qkv", "qkv-weights"}};
  const auto it = stems.find(table_name);
  if (it == stems.end()) return {};
  return {it->second + ".png", it->second + ".svg"};
}

std::vector<std::string> write_figures(const Table& t, const std::string& dir, bool overwrite) {
  std::vector<std::string> written;
  for (const auto& [stem, body] : scripts(t)) {
    for (const char* ext : {".png", ".svg"}) {
      const std::string path = dir + "/" + stem + ext;
      refuse_existing(path, overwrite);
      const std::string tmp = AtomicFile::temporary_name(path);
      const bool wide = t.name == "softmax-saturation" || t.name == "weighted-average" ||
                        t.name == "qkv" || t.name == "dk-std" || t.name == "training-sweep";
      const std::string size = wide ? "1500,500" : "800,560";
      const std::string term = std::string(ext) == ".png"
                                   ? "set terminal pngcairo size " + size + " font 'sans,11'\n"
                                   : "set terminal svg size " + size + " font 'sans,11'\n";
      std::remove(tmp.c_str());
      const bool ran = run_gnuplot(term + "set output " + q(tmp) + "\n" + body + "unset output\n");
      std::string why;
      if (stop_requested_by_signal()) {
        std::remove(tmp.c_str());
        throw Interrupted();
      }
      if (!ran || !figure_complete(tmp, std::string(ext) == ".png", why)) {
        std::remove(tmp.c_str());
        throw std::runtime_error("gnuplot failed to draw " + path +
                                 (ran ? " (" + why + "; is the disk full?)" : ""));
      }
      commit_file(tmp, path, overwrite);
      written.push_back(path);
    }
  }
  return written;
}

}  // namespace attn
