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

// Whether gnuplot can be run.
bool gnuplot_available();

}  // namespace attn
