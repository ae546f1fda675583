// plots.hpp: figures for result tables, drawn by gnuplot (Debian's gnuplot-nox) as PNG and SVG.
// A table declares its figures (experiments/registry.hpp); this file knows no table.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "host/table.hpp"

namespace attn {

struct Figure {
  std::string stem;  // file name without extension: STEM.png and STEM.svg
  bool wide;         // 1500 x 500 pixels (panels side by side), else 800 x 560
  // The gnuplot commands after "set terminal/output", data inline; "" when the table has
  // nothing to draw (then no file is written).
  std::function<std::string(const Table&)> script;
  // The canvas in pixels ("W,H") where the content decides it (a grid of many configurations);
  // unset: by `wide`.
  std::function<std::string(const Table&)> size = {};
};

// The figure files (without directory) that write_figures makes for these figures.
std::vector<std::string> figure_names(const std::vector<Figure>& figures);

// Draws t's figures into dir (atomically, like every result file: committed with commit_file,
// so inside an OutputSet they appear with the run's other files). Returns the paths written.
// Throws std::runtime_error when gnuplot is missing or fails, or writes an incomplete file
// (gnuplot exits 0 on a full disk), or when a destination may not be written
// (refuse_existing); Interrupted when a stop signal came meanwhile. No file of a figure's name
// is left behind by a failure.
std::vector<std::string> write_figures(const Table& t, const std::vector<Figure>& figures,
                                       const std::string& dir, bool overwrite);

// write_figures in two steps: the figures' gnuplot scripts and canvases made from t (throws
// what a figure's script throws on a table it cannot read: a result file edited by hand), then
// the files drawn from them, as write_figures draws them.
struct FigureScript {
  std::string stem, body, size;  // body "": nothing to draw
};
std::vector<FigureScript> figure_scripts(const Table& t, const std::vector<Figure>& figures);
std::vector<std::string> write_figure_scripts(const std::vector<FigureScript>& scripts,
                                              const std::string& dir, bool overwrite);

// The files of `figures` in dir that this run does not draw (not among `drawn`, write_figures'
// answer, empty when nothing was drawn) are retired (output.hpp's retire_file): an earlier
// run's figure never lies beside new data. Throws as retire_file.
void retire_undrawn_figures(const std::vector<Figure>& figures, const std::string& dir,
                            const std::vector<std::string>& drawn, bool overwrite);

// Draws one figure: runs gnuplot on `body` (everything after "set terminal/output") for PATH,
// whose extension (.png or .svg) picks the terminal; size "W,H" in pixels. Errors as
// write_figures.
void write_gnuplot_figure(const std::string& body, const std::string& path, const std::string& size,
                          bool overwrite);

// Whether gnuplot is on PATH (nothing is run to find out).
bool gnuplot_available();

// Helpers for figure scripts.
namespace plot {
double num(const Cell& c);        // a numeric cell as double (NaN otherwise)
std::string text(const Cell& c);  // a text cell ("" otherwise)
// A gnuplot string literal of s, read back by gnuplot as s: quotes, backslashes and control
// characters (a newline would end the literal and start a command) escaped.
std::string quote(const std::string& s);
// The datablock $D: a line per row of t with the named numeric columns, each in round-trip
// precision (format.hpp), for `plot $D using ...`.
std::string columns(const Table& t, std::initializer_list<const char*> names);
// A gnuplot string literal of several lines (gnuplot's "\n" between them), for titles and
// captions; an empty line is left out, a line longer than `width` characters is broken after
// its last ", " or "; " that fits. Meant for `noenhanced` titles (names such as default_rng
// keep their underscores).
std::string title_lines(const std::vector<std::string>& lines, std::size_t width = 90);
// A count as a person reads it: 1000000, not 1e+06 (human_number beyond 1e15 or a fraction).
std::string count(double n);
// count(n) and the noun in the right number: "1 seed", "2 seeds".
std::string count(double n, const std::string& singular, const std::string& plural);
// A value of t.run as a person reads it: a string as is, a number by human_number, a boolean
// "on" or "off"; "" when absent or of another kind.
std::string run_text(const Table& t, const char* key);
// A panel's plot command when it has nothing to draw (every value NaN: no finite seed): its
// frame and `note` in the middle, where a plot of no valid point would fail gnuplot, and the
// run's files with it. Leaves the y axis linear, [0:1], unlabelled.
std::string nothing_to_draw(const std::string& note);
// The x range of a log-2 d_k axis over the values [lo, hi], half a step (a factor 1.4) beyond
// each end, set explicitly: on a range gnuplot autoscales from one d_k, function lines (a
// theory curve, a reference level) are drawn at that one x only.
std::string dk_range(double lo, double hi);
// dk_range over the values of t's column "d_k".
std::string dk_range(const Table& t);
// A heatmap's plot clause: a unit cell centred on each (x, y), filled with the palette's colour
// of z, where `with image` would draw nothing for a heatmap of one row or one column. source: a
// datablock and its modifiers ("$M", "$M matrix"); x, y, z: its `using` columns ("1", "($2+3)").
std::string cells(const std::string& source, const std::string& x, const std::string& y,
                  const std::string& z);
}  // namespace plot

// Whether a figure file gnuplot wrote (a PNG when png, else an SVG) is complete: not empty; a PNG
// starts with the PNG signature and ends with its IEND chunk (PNG spec 5.2, 11.2.5); an SVG starts
// with <?xml or <svg and ends with </svg>. Else false, with the reason in why.
bool figure_complete(const std::string& path, bool png, std::string& why);

}  // namespace attn
