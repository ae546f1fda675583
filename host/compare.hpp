// compare.hpp: `demo compare A.json B.json`: table by table, whether two result files agree
// (for example GPU against CPU, or today against results/cpu).
//
// The rule is numpy's allclose (numpy.isclose: |a - b| <= atol + rtol * |b|, b from the second
// file), with an absolute floor atol per column: by default rtol times the largest finite |b|
// in that column (so a rounding residue such as -1.4e-17 next to values near 1 agrees with 0),
// or one --atol for every column. Equal non-finite values (nan and nan, inf and inf) agree.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

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
  std::map<std::string, double> atol;  // the absolute floor of each numeric column
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

// Prints the report to stdout; returns 0 when every table agrees and matches in shape, 1 when
// they differ, 2 when a file is unreadable or not a result file, or stdout cannot be written
// (one line on stderr). Never throws.
int run_compare(const std::string& path_a, const std::string& path_b, const CompareRule& rule);

}  // namespace attn
