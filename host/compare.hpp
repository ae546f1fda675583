// compare.hpp: `demo compare A.json B.json`: table by table, the largest difference between two
// result files (for example GPU against CPU, or today against results/cpu).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace attn {

struct TableDiff {
  std::string table;
  double max_rel = 0;    // largest |a - b| / max(|a|, |b|) over numeric cells
  std::string where;     // "row 3, column std"
  double a = 0, b = 0;   // the two values there
  std::string mismatch;  // non-empty when the tables differ in shape or in text cells
};

// Compares every table present in either document ({"tables": [...]} as demo writes it).
// Throws std::invalid_argument when a document does not have that shape.
std::vector<TableDiff> compare_results(const nlohmann::json& a, const nlohmann::json& b);

// Prints the report to stdout; returns 0 when every table is within tolerance and matches in
// shape, else 1. Unreadable files: a one-line error and 2.
int run_compare(const std::string& path_a, const std::string& path_b, double tolerance);

}  // namespace attn
