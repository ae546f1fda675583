// compare.cpp: see compare.hpp.
#include "host/compare.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>

namespace attn {
namespace {

// A number from a JSON cell: numbers, and the strings "nan", "inf", "-inf" that demo writes for
// non-finite values. Returns false for anything else.
bool as_number(const nlohmann::json& v, double& out) {
  if (v.is_number()) {
    out = v.get<double>();
    return true;
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
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

double rel_diff(double a, double b) {
  if (a == b) return 0;  // also equal infinities
  if (std::isnan(a) && std::isnan(b)) return 0;
  if (!std::isfinite(a) || !std::isfinite(b)) return INFINITY;
  return std::fabs(a - b) / std::fmax(std::fabs(a), std::fabs(b));
}

struct Tolerance {
  double rtol, atol;
};

void compare_cells(const nlohmann::json& a, const nlohmann::json& b, const std::string& where,
                   const Tolerance& tol, TableDiff& d) {
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) {
      d.mismatch = where + ": arrays of different lengths";
      return;
    }
    for (std::size_t i = 0; i < a.size(); ++i)
      compare_cells(a[i], b[i], where + "[" + std::to_string(i) + "]", tol, d);
    return;
  }
  double x, y;
  if (as_number(a, x) && as_number(b, y)) {
    const double r = rel_diff(x, y);
    const double abs_diff = r == 0 ? 0 : std::fabs(x - y);  // NaN or inf when non-finite
    const bool agree =
        r == 0 || (std::isfinite(r) &&
                   abs_diff <= tol.atol + tol.rtol * std::fmax(std::fabs(x), std::fabs(y)));
    if (!agree) ++d.outside;
    if (std::isnan(abs_diff) || abs_diff > d.max_abs)
      d.max_abs = std::isnan(abs_diff) ? INFINITY : abs_diff;
    if (r > d.max_rel || (std::isinf(r) && d.where.empty())) {
      d.max_rel = r;
      d.where = where;
      d.a = x;
      d.b = y;
    }
    return;
  }
  if (a != b && d.mismatch.empty()) d.mismatch = where + ": " + a.dump() + " vs " + b.dump();
}

// The tables of a result document, checked for the shape demo writes; throws
// std::invalid_argument naming what is missing.
std::map<std::string, nlohmann::json> tables_by_name(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc.contains("tables") || !doc.at("tables").is_array())
    throw std::invalid_argument("not a demo result file (no \"tables\" array)");
  std::map<std::string, nlohmann::json> m;
  for (const auto& t : doc.at("tables")) {
    if (!t.is_object() || !t.contains("name") || !t.at("name").is_string() ||
        !t.contains("columns") || !t.at("columns").is_array() || !t.contains("rows") ||
        !t.at("rows").is_array())
      throw std::invalid_argument("a table lacks name, columns or rows");
    for (const auto& c : t.at("columns"))
      if (!c.is_string())
        throw std::invalid_argument("table " + t.at("name").get<std::string>() +
                                    ": a column name is not text");
    for (const auto& r : t.at("rows"))
      if (!r.is_object())
        throw std::invalid_argument("table " + t.at("name").get<std::string>() +
                                    ": a row is not an object");
    m[t.at("name").get<std::string>()] = t;
  }
  return m;
}

}  // namespace

std::vector<TableDiff> compare_results(const nlohmann::json& a, const nlohmann::json& b,
                                       double rtol, double atol) {
  const Tolerance tol{rtol, atol};
  const auto ta = tables_by_name(a), tb = tables_by_name(b);
  std::vector<TableDiff> out;
  for (const auto& [name, x] : ta) {
    TableDiff d;
    d.table = name;
    const auto it = tb.find(name);
    if (it == tb.end()) {
      d.mismatch = "only in the first file";
      out.push_back(d);
      continue;
    }
    const auto& y = it->second;
    const auto& ra = x.at("rows");
    const auto& rb = y.at("rows");
    if (x.at("columns") != y.at("columns"))
      d.mismatch = "different columns";
    else if (ra.size() != rb.size())
      d.mismatch = "different numbers of rows";
    else
      for (std::size_t r = 0; r < ra.size(); ++r)
        for (const auto& col : x.at("columns")) {
          const std::string c = col.get<std::string>();
          compare_cells(ra[r].value(c, nlohmann::json()), rb[r].value(c, nlohmann::json()),
                        "row " + std::to_string(r) + ", column " + c, tol, d);
        }
    out.push_back(d);
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

int run_compare(const std::string& path_a, const std::string& path_b, double tolerance,
                double atol) {
  std::vector<TableDiff> diffs;
  nlohmann::json docs[2];
  const std::string paths[2] = {path_a, path_b};
  for (int i = 0; i < 2; ++i) {
    std::ifstream in(paths[i]);
    docs[i] = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (docs[i].is_discarded()) {
      std::fprintf(stderr, "demo: error: compare: %s is not JSON (expected demo's --format json)\n",
                   paths[i].c_str());
      return 2;
    }
  }
  try {
    diffs = compare_results(docs[0], docs[1], tolerance, atol);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "demo: error: compare: %s vs %s: %s\n", path_a.c_str(), path_b.c_str(),
                 e.what());
    return 2;
  }
  if (diffs.empty()) {
    std::fprintf(stderr, "demo: error: compare: no tables in either file\n");
    return 2;
  }
  bool ok = true;
  std::printf("%-20s %-12s %-12s %-8s %s\n", "table", "max_rel_diff", "max_abs_diff", "verdict",
              "where the relative difference is largest (first, second)");
  for (const auto& d : diffs) {
    const bool pass = d.mismatch.empty() && d.outside == 0;
    ok = ok && pass;
    if (!d.mismatch.empty())
      std::printf("%-20s %-12s %-12s %-8s %s\n", d.table.c_str(), "-", "-", "DIFFERS",
                  d.mismatch.c_str());
    else
      std::printf("%-20s %-12.3e %-12.3e %-8s %s (%.17g, %.17g)%s\n", d.table.c_str(), d.max_rel,
                  d.max_abs, pass ? "ok" : "FAIL", d.where.empty() ? "-" : d.where.c_str(), d.a,
                  d.b, pass ? "" : (", " + std::to_string(d.outside) + " cells outside").c_str());
  }
  std::printf("tolerance %.3g, atol %.3g: %s\n", tolerance, atol,
              ok ? "all tables agree" : "differences found");
  return ok ? 0 : 1;
}

}  // namespace attn
