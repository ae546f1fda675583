// compare.hpp: `demo compare A.json B.json`: table by table, the largest difference between two
// result files (for example GPU against CPU, or today against results/cpu).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace attn {

struct TableDiff {
  std::string table;
  double max_rel = 0;    // largest |a - b| / max(|a|, |b|) over numeric cells
  double max_abs = 0;    // largest |a - b| over numeric cells (infinite for a non-finite mismatch)
  long outside = 0;      // numeric cells outside |a - b| <= atol + rtol * max(|a|, |b|)
  std::string where;     // "row 3, column std"
  double a = 0, b = 0;   // the two values there
  std::string mismatch;  // non-empty when the tables differ in shape or in text cells
};

// Compares every table present in either document ({"tables": [...]} as demo writes it), and
// counts the numeric cells outside |a - b| <= atol + rtol * max(|a|, |b|): numpy's allclose
// (|a - b| <= atol + rtol |b|) made symmetric, so that atol = 0 is the purely relative test.
// Equal infinities and two NaNs agree; any other non-finite pair is outside. Throws
// std::invalid_argument when a document does not have that shape.
std::vector<TableDiff> compare_results(const nlohmann::json& a, const nlohmann::json& b,
                                       double rtol = 0, double atol = 0);

// Prints the report to stdout; returns 0 when every table matches in shape and has no cell
// outside the tolerance (relative `tolerance`, absolute floor `atol`), else 1. Unreadable
// files: a one-line error and 2.
int run_compare(const std::string& path_a, const std::string& path_b, double tolerance,
                double atol = 0);

}  // namespace attn
