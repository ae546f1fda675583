// plots.hpp: figures for result tables, drawn by gnuplot (Debian's gnuplot-nox) as PNG and SVG.
#pragma once

#include <string>
#include <vector>

#include "host/table.hpp"

namespace attn {

// The figure files (without directory) that write_figures makes for the table of that name.
std::vector<std::string> figure_names(const std::string& table_name);

// Draws t's figures into dir (atomically, like every result file). Returns the paths written;
// an empty list when t has no figure. Throws std::runtime_error when gnuplot is missing or
// fails, or when a file exists and !overwrite.
std::vector<std::string> write_figures(const Table& t, const std::string& dir, bool overwrite);

// Draws one figure: runs gnuplot on `body` (everything after "set terminal/output") for PATH,
// whose extension (.png or .svg) picks the terminal; size "W,H" in pixels. Written under a
// temporary name and renamed into place when gnuplot succeeded. Throws std::runtime_error when
// gnuplot fails or PATH exists and !overwrite.
void write_gnuplot_figure(const std::string& body, const std::string& path, const std::string& size,
                          bool overwrite);

// Whether gnuplot can be run.
bool gnuplot_available();

}  // namespace attn
