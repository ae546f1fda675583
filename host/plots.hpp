// plots.hpp: figures for result tables, drawn by gnuplot (Debian's gnuplot-nox) as PNG and SVG.
#pragma once

#include <string>
#include <vector>

#include "host/table.hpp"

namespace attn {

// The figure files (without directory) that write_figures makes for the table of that name.
std::vector<std::string> figure_names(const std::string& table_name);

// Draws t's figures into dir (atomically, like every result file: committed with commit_file,
// so inside an OutputSet they appear with the run's other files). Returns the paths written;
// an empty list when t has no figure. Throws std::runtime_error when gnuplot is missing or
// fails, or writes an incomplete file (gnuplot exits 0 on a full disk), or when a destination
// may not be written (refuse_existing); Interrupted when a stop signal came meanwhile. No file
// of a figure's name is left behind by a failure.
std::vector<std::string> write_figures(const Table& t, const std::string& dir, bool overwrite);

// Whether gnuplot is on PATH (nothing is run to find out).
bool gnuplot_available();

// Whether a figure file gnuplot wrote (a PNG when png, else an SVG) is complete: not empty; a PNG
// starts with the PNG signature and ends with its IEND chunk (PNG spec 5.2, 11.2.5); an SVG starts
// with <?xml or <svg and ends with </svg>. Else false, with the reason in why.
bool figure_complete(const std::string& path, bool png, std::string& why);

}  // namespace attn
