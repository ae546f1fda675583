// compare.hpp: `demo compare A.json B.json`: table by table, whether two result files agree
// (for example GPU against CPU, or a fresh run against results/cpu).
//
// The rule is numpy's allclose (numpy.isclose: |a - b| <= atol + rtol * |b|, b from the second
// file), with an absolute floor atol per cell: by default rtol times the smaller of the largest
// finite |b| in its column and the largest real |b| in its row (so a rounding residue such as
// -1.4e-17 next to values near 1 agrees with 0, while a statistics table's row of JSDs near 0.01
// is not excused by a diverged run's loss of 1e300 in another row of the column), or one --atol
// for every cell. Equal non-finite values (nan and nan, inf and inf) agree.
//
// Resolution (default floor only). A row of a table is one run or one quantity's statistics;
// its real numbers are computed in float64 together, so none is resolved below float64 epsilon
// (2^-52) times the largest real |b| of the row: the row's resolution. (Integers are counts,
// seeds and sizes, not computed quantities; they do not count.) A column whose every |b| is below
// its row's resolution holds rounding noise only, such as the training table's loss of 1e-24
// next to outputs near 1 when every run converged; there the plain floor is noise-sized too. Such a
// column takes, row by row, its row's resolution as atol (values below it agree when they differ by
// at most it), and the report marks it "(resolution)" with the largest. A column with a value at or
// above its row's resolution keeps the plain floor; --atol replaces both.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "host/json.hpp"

namespace attn {

struct CompareRule {
  double rtol = 1e-9;          // --tolerance
  std::optional<double> atol;  // --atol: one absolute floor for every column; unset: per column
};

struct TableDiff {
  std::string table;
  double max_rel = 0;     // largest |a - b| / max(|a|, |b|) over numeric cells (information)
  double max_abs = 0;     // largest |a - b| over numeric cells (information)
  double worst = 0;       // largest |a - b| / (atol + rtol |b|); the table agrees when <= 1
  std::string where;      // where `worst` is: "row 3, column std"
  double a = 0, b = 0;    // the two values there
  double atol_there = 0;  // the absolute floor of that column
  std::map<std::string, double> atol;   // the absolute floor of each numeric column (its largest)
  std::set<std::string> at_resolution;  // columns whose floor is their rows' resolution
  std::string mismatch;  // non-empty when the tables differ in shape, text or missing cells
};

// Compares every table present in either document ({"tables": [...]} as demo writes it).
// Throws std::invalid_argument when a document does not have that shape (also: two tables of
// one name in a document).
std::vector<TableDiff> compare_results(const nlohmann::json& a, const nlohmann::json& b,
                                       const CompareRule& rule = {});

// Reads a result file for comparing: a regular file (a FIFO, device or directory is refused
// without opening it for reading), JSON nested at most max_depth deep (checked before parsing,
// so a hostile file cannot exhaust the stack). Throws std::runtime_error with the reason.
nlohmann::json read_result_file(const std::string& path, int max_depth = 64);
// The parsing half of read_result_file, on a file's text: the same depth limit and memory plan.
// `label` names the text in the stop audit's lines (the file's path where it came from one).
nlohmann::json parse_result_text(const std::string& text, int max_depth = 64,
                                 const std::string& label = "result text");

// Prints the report to stdout; returns 0 when every table agrees and matches in shape, 1 when
// they differ, 2 when a file is unreadable or not a result file, or stdout cannot be written
// (one line on stderr), 130 or 143 when SIGINT or SIGTERM stopped it (reading, parsing and
// comparing ask for a stop, host/progress.hpp; nothing is printed on stdout). Never throws.
int run_compare(const std::string& path_a, const std::string& path_b, const CompareRule& rule);

}  // namespace attn
