// compare.cpp: see compare.hpp.
#include "host/compare.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <new>
#include <set>
#include <stdexcept>

#include "host/format.hpp"
#include "host/input.hpp"
#include "host/memory.hpp"
#include "host/output.hpp"
#include "host/progress.hpp"

namespace attn {
namespace {

constexpr double kResolution = 0x1p-52;  // float64 epsilon (compare.hpp, "resolution")

// A number from a JSON cell: numbers, and the strings "nan", "inf", "-inf" that demo writes for
// non-finite values. Returns false for anything else.
bool as_number(const nlohmann::json& v, double& out) {
  if (v.is_number()) {
    out = v.get<double>();
    return true;
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "nan")
      out = NAN;
    else if (s == "inf")
      out = INFINITY;
    else if (s == "-inf")
      out = -INFINITY;
    else
      return false;
    return true;
  }
  return false;
}

bool same_nonfinite(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));  // a == b also holds for equal infinities
}

double rel_diff(double a, double b) {
  if (same_nonfinite(a, b)) return 0;
  if (!std::isfinite(a) || !std::isfinite(b)) return INFINITY;
  return std::fabs(a - b) / std::fmax(std::fabs(a), std::fabs(b));
}

// |a - b| / (atol + rtol |b|): at most 1 where numpy.isclose(a, b, rtol, atol) holds.
double allclose_ratio(double a, double b, double rtol, double atol) {
  if (same_nonfinite(a, b)) return 0;
  if (!std::isfinite(a) || !std::isfinite(b)) return INFINITY;
  const double diff = std::fabs(a - b), allowed = atol + rtol * std::fabs(b);
  if (diff <= allowed) return allowed > 0 ? diff / allowed : 0;
  return allowed > 0 ? diff / allowed : INFINITY;
}

// The largest finite |x| among the numbers of a cell (a number or an array of them).
void largest_abs(const nlohmann::json& v, double& m) {
  if (v.is_array()) {
    for (const auto& x : v) largest_abs(x, m);
    return;
  }
  double x;
  if (as_number(v, x) && std::isfinite(x)) m = std::fmax(m, std::fabs(x));
}

// The largest finite |x| among the real (non-integer) numbers of a cell. Integers in demo's
// tables are counts, seeds and sizes: exact labels, not computed quantities with a rounding level.
void largest_abs_real(const nlohmann::json& v, double& m) {
  if (v.is_array()) {
    for (const auto& x : v) largest_abs_real(x, m);
    return;
  }
  if (v.is_number_float() && std::isfinite(v.get<double>()))
    m = std::fmax(m, std::fabs(v.get<double>()));
}

// Whether every finite number of a cell is below `floor` in magnitude (non-numbers count as below:
// they are compared as text).
bool all_below(const nlohmann::json& v, double floor) {
  if (v.is_array()) {
    for (const auto& x : v)
      if (!all_below(x, floor)) return false;
    return true;
  }
  double x;
  return !as_number(v, x) || !std::isfinite(x) || std::fabs(x) < floor;
}

// Whether a cell holds a real (non-integer) number.
bool has_real(const nlohmann::json& v) {
  if (v.is_array()) {
    for (const auto& x : v)
      if (has_real(x)) return true;
    return false;
  }
  return v.is_number_float();
}

struct Place {
  const CompareRule& rule;
  double atol;
};

void compare_cells(const nlohmann::json& a, const nlohmann::json& b, const std::string& where,
                   const Place& p, TableDiff& d) {
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) {
      if (d.mismatch.empty()) d.mismatch = where + ": arrays of different lengths";
      return;
    }
    for (std::size_t i = 0; i < a.size(); ++i)
      compare_cells(a[i], b[i], where + "[" + std::to_string(i) + "]", p, d);
    return;
  }
  double x, y;
  if (as_number(a, x) && as_number(b, y)) {
    const double r = allclose_ratio(x, y, p.rule.rtol, p.atol);
    d.max_rel = std::fmax(d.max_rel, rel_diff(x, y));
    if (!same_nonfinite(x, y)) d.max_abs = std::fmax(d.max_abs, std::fabs(x - y));
    if (r > d.worst || (d.where.empty() && r > 0)) {
      d.worst = r;
      d.where = where;
      d.a = x;
      d.b = y;
      d.atol_there = p.atol;
    }
    return;
  }
  if (a != b && d.mismatch.empty())
    d.mismatch = where + ": " + quote_input(a.dump()) + " vs " + quote_input(b.dump());
}

// The tables of a result document, checked for the shape demo writes; throws
// std::invalid_argument naming what is missing.
std::map<std::string, const nlohmann::json*> tables_by_name(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("tables") || !doc.at("tables").is_array())
    throw std::invalid_argument("not a demo result file (no \"tables\" array)");
  std::map<std::string, const nlohmann::json*> m;
  for (const auto& t : doc.at("tables")) {
    if (!t.is_object() || !t.contains("name") || !t.at("name").is_string() ||
        !t.contains("columns") || !t.at("columns").is_array() || !t.contains("rows") ||
        !t.at("rows").is_array())
      throw std::invalid_argument("a table lacks name, columns or rows");
    const std::string name = t.at("name").get<std::string>();
    const std::string shown = quote_input(name);  // names come from the file: cut in messages
    std::set<std::string> columns;
    for (const auto& c : t.at("columns")) {
      if (!c.is_string())
        throw std::invalid_argument("table " + shown + ": a column name is not text");
      if (!columns.insert(c.get<std::string>()).second)
        throw std::invalid_argument("table " + shown + ": two columns named " +
                                    quote_input(c.get<std::string>()));
    }
    for (const auto& r : t.at("rows"))
      if (!r.is_object())
        throw std::invalid_argument("table " + shown + ": a row is not an object");
    if (!m.emplace(name, &t).second)
      throw std::invalid_argument("two tables named " + shown + " (which one to compare?)");
  }
  return m;
}

TableDiff compare_table(const std::string& name, const nlohmann::json& x, const nlohmann::json& y,
                        const CompareRule& rule) {
  TableDiff d;
  d.table = name;
  const auto& ra = x.at("rows");
  const auto& rb = y.at("rows");
  if (x.at("columns") != y.at("columns")) {
    d.mismatch = "different columns";
    return d;
  }
  if (ra.size() != rb.size()) {
    d.mismatch = "different numbers of rows";
    return d;
  }
  // A listed column missing from a row is a difference, never a match of two absent values.
  for (int file = 0; file < 2; ++file) {
    const auto& rows = file == 0 ? ra : rb;
    for (std::size_t r = 0; r < rows.size(); ++r)
      for (const auto& col : x.at("columns"))
        if (!rows[r].contains(col.get<std::string>())) {
          d.mismatch = "row " + std::to_string(r) + " of the " + (file == 0 ? "first" : "second") +
                       " file lacks column " + quote_input(col.get<std::string>());
          return d;
        }
  }
  // Each row's scale, its largest real |b|, and its resolution: float64 epsilon times that
  // (compare.hpp).
  std::vector<double> row_scale(rb.size(), 0.0), resolution(rb.size(), 0.0);
  for (std::size_t r = 0; r < rb.size(); ++r) {
    for (const auto& col : x.at("columns"))
      largest_abs_real(rb[r].at(col.get<std::string>()), row_scale[r]);
    resolution[r] = kResolution * row_scale[r];
  }
  StopMeter stops("comparing " + quote_input(name), "cells", double(1 << 20));
  for (const auto& col : x.at("columns")) {
    const std::string c = col.get<std::string>();
    double scale = 0;
    bool numeric = false, real = false, below = true, resolvable_row = false;
    for (std::size_t r = 0; r < rb.size(); ++r) {
      stops.add(1);
      const auto& cell = rb[r].at(c);
      double v;
      numeric = numeric || as_number(cell, v) || cell.is_array();
      real = real || has_real(cell);
      largest_abs(cell, scale);
      below = below && all_below(cell, resolution[r]);
      resolvable_row = resolvable_row || resolution[r] > 0;
    }
    const bool at_resolution = !rule.atol && real && below && resolvable_row;
    double largest_floor = 0;
    for (std::size_t r = 0; r < ra.size(); ++r) {
      stops.add(1);
      // Row by row: another row's values, however large (a diverged run's loss beside a JSD of
      // 0.01 in a statistics table's column), do not excuse this row's difference.
      const double here = at_resolution ? resolution[r]
                          : rule.atol   ? *rule.atol
                                        : rule.rtol * std::fmin(scale, row_scale[r]);
      largest_floor = std::fmax(largest_floor, here);
      compare_cells(ra[r].at(c), rb[r].at(c),
                    "row " + std::to_string(r) + ", column " + quote_input(c), Place{rule, here},
                    d);
    }
    if (numeric) d.atol[c] = largest_floor;
    if (at_resolution) d.at_resolution.insert(c);
  }
  return d;
}

}  // namespace

std::vector<TableDiff> compare_results(const nlohmann::json& a, const nlohmann::json& b,
                                       const CompareRule& rule) {
  const auto ta = tables_by_name(a), tb = tables_by_name(b);
  std::vector<TableDiff> out;
  for (const auto& [name, x] : ta) {
    const auto it = tb.find(name);
    if (it == tb.end()) {
      TableDiff d;
      d.table = name;
      d.mismatch = "only in the first file";
      out.push_back(d);
      continue;
    }
    out.push_back(compare_table(name, *x, *it->second, rule));
  }
  for (const auto& [name, y] : tb)
    if (!ta.count(name)) {
      TableDiff d;
      d.table = name;
      d.mismatch = "only in the second file";
      out.push_back(d);
    }
  return out;
}

nlohmann::json read_result_file(const std::string& path, int max_depth) {
  std::string text;
  try {
    text = read_regular_file(path);  // a FIFO or directory refused without waiting
  } catch (const std::runtime_error& e) {
    const std::string why = e.what();
    if (why.find("not a regular file") != std::string::npos)
      throw std::runtime_error(why + " (a demo result file is a regular JSON file)");
    throw;
  }
  return parse_result_text(text, max_depth, path);
}

nlohmann::json parse_result_text(const std::string& text, int max_depth, const std::string& label) {
  // The depth, before the parser and the recursive destructor see it; the number of values, for
  // the memory the parsed document will take.
  const JsonNesting nesting = json_nesting(text, max_depth);
  if (nesting.too_deep)
    throw std::runtime_error("JSON nested deeper than " + std::to_string(max_depth) +
                             " levels: not a demo result file");
  const double values = nesting.values;
  // Planned before parsing: running out of memory inside nlohmann-json can end in a destructor,
  // where it cannot be caught. Per value: 16 bytes, twice while a vector grows, a map node and
  // its key for object members; 96 bytes is an upper estimate.
  const double need = 96 * values + static_cast<double>(text.size());
  const double available = memory_available();
  if (need > available)
    throw std::runtime_error("out of memory: reading it takes about " +
                             std::to_string(static_cast<long long>(need / 1e6)) + " MB, " +
                             std::to_string(static_cast<long long>(std::fmax(available, 0) / 1e6)) +
                             " MB are available");
  try {
    return parse_json(text, label);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error("not JSON (expected demo's --format json)");
  }
}

int run_compare(const std::string& path_a, const std::string& path_b, const CompareRule& rule) {
  // Every failure below is one line on stderr; the out-of-memory handler allocates nothing.
  try {
    const std::string paths[2] = {path_a, path_b};
    nlohmann::json docs[2];
    for (int i = 0; i < 2; ++i) {
      try {
        docs[i] = read_result_file(paths[i]);
      } catch (const std::runtime_error& e) {
        print_error(paths[i] + ": " + e.what(), "demo compare");
        return 2;
      }
    }
    std::vector<TableDiff> diffs;
    try {
      diffs = compare_results(docs[0], docs[1], rule);
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& e) {
      print_error(path_a + " vs " + path_b + ": " + e.what(), "demo compare");
      return 2;
    }
    if (diffs.empty()) {
      print_error("no tables in either file", "demo compare");
      return 2;
    }
    bool ok = true, any_resolution = false;
    std::string report;
    char line[512];
    std::snprintf(line, sizeof line, "%-20s %-10s %-8s %s\n", "table", "worst", "verdict",
                  "where (first, second; atol there)");
    report += line;
    for (const auto& d : diffs) {
      const bool pass = d.mismatch.empty() && d.worst <= 1;
      ok = ok && pass;
      if (!d.mismatch.empty()) {
        std::snprintf(line, sizeof line, "%-20s %-10s %-8s ", quote_input(d.table).c_str(), "-",
                      "DIFFERS");
        report += line + d.mismatch + "\n";
        continue;
      }
      std::snprintf(line, sizeof line, "%-20s %-10.3g %-8s ", quote_input(d.table).c_str(), d.worst,
                    pass ? "ok" : "FAIL");
      report += line;
      if (d.where.empty())
        report += "- (identical)\n";
      else
        report += d.where + " (" + round_trip(d.a) + ", " + round_trip(d.b) + "; atol " +
                  human_number(d.atol_there) + ")\n";
      if (!d.atol.empty()) {
        std::string floors;
        for (const auto& [c, v] : d.atol)
          floors += (floors.empty() ? "" : ", ") + quote_input(c) + " " + human_number(v) +
                    (d.at_resolution.count(c) ? " (resolution)" : "");
        report += "  largest atol per column: " + floors + "\n";
      }
      any_resolution = any_resolution || !d.at_resolution.empty();
    }
    report +=
        "rule: |a - b| <= atol + rtol*|b| per number (numpy's allclose; b: second file), rtol " +
        human_number(rule.rtol) + " (--tolerance), atol " +
        (rule.atol ? human_number(*rule.atol) + " for every column (--atol)"
                   : std::string("rtol x the smaller of the column's and the row's largest |b| "
                                 "(--atol sets one)")) +
        "; worst = largest |a - b| / (atol + rtol*|b|), agree when <= 1\n";
    if (any_resolution)
      report +=
          "resolution: a column whose every |b| is below 2^-52 (float64 epsilon) x the largest "
          "real |b| of its row is rounding noise at the table's precision; its atol, row by row, "
          "is that product (the largest is shown)\n";
    report += ok ? "all tables agree\n" : "differences found\n";
    write_stdout(report);
    return ok ? 0 : 1;
  } catch (const std::bad_alloc&) {
    print_error("out of memory (the files are too large to compare)", "demo compare");
    return 2;
  } catch (const Interrupted&) {  // Ctrl-C or SIGTERM: nothing was printed
    const int sig = stop_signal() != 0 ? stop_signal() : SIGINT;
    print_interrupted(sig, "demo compare");
    return 128 + sig;
  } catch (const std::exception& e) {
    print_error(e.what(), "demo compare");
    return 2;
  }
}

}  // namespace attn
