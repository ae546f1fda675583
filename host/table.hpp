// table.hpp: what every experiment returns: named tables of typed cells, plus notes and extra
// structured data. host/format.cpp renders them as an aligned text table, CSV, JSON or Markdown.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "host/json.hpp"

namespace attn {

// A cell: empty, a signed integer, an unsigned 64-bit integer (seeds: every value 0 .. 2^64 - 1
// prints as itself in every format), a real, text, or a row of reals (one row of a matrix).
using Cell = std::variant<std::monostate, std::int64_t, std::uint64_t, double, std::string,
                          std::vector<double>>;

struct Column {
  std::string name;
  // How the text and Markdown formats show reals: a printf conversion such as "%.2f" or "%.3g",
  // "" for 6 significant digits, or "~%.3f" for fixed with tiny values (< 1e-3) shown as
  // "5.2e-13". Integral values always show as integers. CSV and JSON carry full precision.
  std::string display = "";
};

struct Table {
  std::string name;   // the experiment's name (what --table takes); the file stem under --out
  std::string title;  // one line for people
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> notes;  // shown under the text/Markdown table, "notes" in JSON
  nlohmann::json extra = nlohmann::json::object();  // more data for JSON (e.g. histograms)
  // How this table was made beyond the run's provenance: generator, seeds, samples, backend
  // used. Written into each result file's provenance object.
  nlohmann::json run = nlohmann::json::object();

  void add_row(std::vector<Cell> row) { rows.push_back(std::move(row)); }
  // Index of the column called name; throws std::out_of_range when there is none.
  std::size_t column(const std::string& name) const;
};

}  // namespace attn
