// plots.hpp: figures for result tables, drawn by gnuplot (Debian's gnuplot-nox) as PNG and SVG.
// A table declares its figures (experiments/registry.hpp); this file knows no table.
#pragma once

#include <functional>
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
};

// The figure files (without directory) that write_figures makes for these figures.
std::vector<std::string> figure_names(const std::vector<Figure>& figures);

// Draws t's figures into dir (atomically, like every result file). Returns the paths written.
// Throws std::runtime_error when gnuplot is missing or fails, or when a file exists and
// !overwrite.
std::vector<std::string> write_figures(const Table& t, const std::vector<Figure>& figures,
                                       const std::string& dir, bool overwrite);

// Draws one figure: runs gnuplot on `body` (everything after "set terminal/output") for PATH,
// whose extension (.png or .svg) picks the terminal; size "W,H" in pixels. Written under a
// temporary name and renamed into place when gnuplot succeeded. Throws std::runtime_error when
// gnuplot fails or PATH exists and !overwrite.
void write_gnuplot_figure(const std::string& body, const std::string& path, const std::string& size,
                          bool overwrite);

// Draws one figure from a gnuplot script body (everything after "set terminal/output") into
// path (.png or .svg) of size "W,H" pixels, atomically. Throws like write_figures.
void write_gnuplot_figure(const std::string& body, const std::string& path, const std::string& size,
                          bool overwrite);

// Whether gnuplot can be run.
bool gnuplot_available();

// Helpers for figure scripts.
namespace plot {
double num(const Cell& c);                // a numeric cell as double (NaN otherwise)
std::string text(const Cell& c);          // a text cell ("" otherwise)
std::string quote(const std::string& s);  // a gnuplot string literal
}  // namespace plot

}  // namespace attn
