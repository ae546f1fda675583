// format.cpp: see format.hpp.
#include "host/format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "host/parse.hpp"

namespace attn {

Format parse_format(const std::string& option, const std::string& text) {
  const std::string f = parse_choice(option, text, {"table", "csv", "json", "markdown"});
  return f == "csv"        ? Format::csv
         : f == "json"     ? Format::json
         : f == "markdown" ? Format::markdown
                           : Format::table;
}

const char* format_name(Format f) {
  static const char* const names[] = {"table", "csv", "json", "markdown"};
  return names[static_cast<int>(f)];
}

std::size_t Table::column(const std::string& name) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i].name == name) return i;
  throw std::out_of_range("table " + this->name + " has no column " + name);
}

std::string round_trip(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string human_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v == 0 ? 0.0 : v);
  return buf;
}

std::string human_count(std::uint64_t n, const std::string& singular, const std::string& plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

std::string display_real(double v, const std::string& display) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Integers print as integers ([4, 2, 0], not [4.000, 2.000, 0.000]).
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v == 0 ? 0.0 : v);
    return buf;
  }
  // "~%.3f": fixed, but tiny numbers (below 1e-3) in 2 significant digits instead of 0.000.
  std::string fmt = display.empty() ? "%.6g" : display;
  if (fmt[0] == '~') {
    fmt.erase(0, 1);
    if (std::fabs(v) < 1e-3) fmt = "%.2g";
  }
  // A fixed format of a number of 1e15 or more would be its digits in full (up to 309, more than
  // the buffer): 6 significant digits instead (1e+300).
  if (std::fabs(v) >= 1e15 && fmt.find('f') != std::string::npos) fmt = "%.6g";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt.c_str(), v);
  // A value that rounds to zero shows as "0.000", not "-0.000".
  if (buf[0] == '-' && std::string(buf + 1).find_first_of("123456789") == std::string::npos)
    return buf + 1;
  return buf;
}

namespace {

std::string cell_text(const Cell& c, const Column& col) {
  return std::visit(
      [&](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>)
          return "-";
        else if constexpr (std::is_same_v<V, std::int64_t> || std::is_same_v<V, std::uint64_t>)
          return std::to_string(v);
        else if constexpr (std::is_same_v<V, double>)
          return display_real(v, col.display);
        else if constexpr (std::is_same_v<V, std::string>)
          return v;
        else {
          std::string s = "[";
          for (std::size_t i = 0; i < v.size(); ++i)
            s += (i ? ", " : "") + display_real(v[i], col.display);
          return s + "]";
        }
      },
      c);
}

std::string cell_csv(const Cell& c) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>)
          return "";
        else if constexpr (std::is_same_v<V, std::int64_t> || std::is_same_v<V, std::uint64_t>)
          return std::to_string(v);
        else if constexpr (std::is_same_v<V, double>)
          return round_trip(v);
        else if constexpr (std::is_same_v<V, std::string>) {
          if (v.find_first_of(",\"\n") == std::string::npos) return v;
          std::string q = "\"";
          for (char ch : v) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
          return q + "\"";
        } else {
          std::string s = "\"[";
          for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + round_trip(v[i]);
          return s + "]\"";
        }
      },
      c);
}

nlohmann::json cell_json(const Cell& c) {
  return std::visit(
      [](const auto& v) -> nlohmann::json {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>)
          return nullptr;
        else if constexpr (std::is_same_v<V, double>) {
          if (std::isfinite(v)) return v;
          return round_trip(v);  // JSON has no NaN or infinity: "nan", "inf", "-inf"
        } else if constexpr (std::is_same_v<V, std::vector<double>>) {
          nlohmann::json a = nlohmann::json::array();
          for (double x : v)
            a.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(round_trip(x)));
          return a;
        } else {
          return v;
        }
      },
      c);
}

std::vector<std::vector<std::string>> text_cells(const Table& t) {
  std::vector<std::vector<std::string>> out;
  for (const auto& row : t.rows) {
    std::vector<std::string> r;
    for (std::size_t i = 0; i < row.size(); ++i) r.push_back(cell_text(row[i], t.columns[i]));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::string render_text(const Table& t) {
  const auto cells = text_cells(t);
  std::vector<std::size_t> width(t.columns.size());
  for (std::size_t i = 0; i < t.columns.size(); ++i) width[i] = t.columns[i].name.size();
  for (const auto& r : cells)
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::ostringstream os;
  os << "== " << t.name << ": " << t.title << "\n";
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (std::size_t i = 0; i < r.size(); ++i) {
      std::string c = r[i];
      c.resize(width[i], ' ');
      s += (i ? "  " : "") + c;
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    os << s << "\n";
  };
  std::vector<std::string> header;
  for (const auto& c : t.columns) header.push_back(c.name);
  line(header);
  for (const auto& r : cells) line(r);
  for (const auto& n : t.notes) os << "  " << n << "\n";
  return os.str();
}

std::string render_markdown(const Table& t) {
  const auto cells = text_cells(t);
  std::ostringstream os;
  os << "### " << t.name << ": " << t.title << "\n\n|";
  for (const auto& c : t.columns) os << " " << c.name << " |";
  os << "\n|";
  for (std::size_t i = 0; i < t.columns.size(); ++i) os << "---|";
  os << "\n";
  for (const auto& r : cells) {
    os << "|";
    for (const auto& c : r) os << " " << c << " |";
    os << "\n";
  }
  if (!t.notes.empty()) {
    os << "\n";
    for (const auto& n : t.notes) os << "- " << n << "\n";
  }
  return os.str();
}

std::string render_csv(const Table& t) {
  std::ostringstream os;
  for (std::size_t i = 0; i < t.columns.size(); ++i) os << (i ? "," : "") << t.columns[i].name;
  os << "\n";
  for (const auto& r : t.rows) {
    for (std::size_t i = 0; i < r.size(); ++i) os << (i ? "," : "") << cell_csv(r[i]);
    os << "\n";
  }
  return os.str();
}

nlohmann::json table_json(const Table& t) {
  nlohmann::json j;
  j["name"] = t.name;
  j["title"] = t.title;
  nlohmann::json cols = nlohmann::json::array();
  for (const auto& c : t.columns) cols.push_back(c.name);
  j["columns"] = cols;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : t.rows) {
    nlohmann::json o = nlohmann::json::object();
    for (std::size_t i = 0; i < r.size(); ++i) o[t.columns[i].name] = cell_json(r[i]);
    rows.push_back(std::move(o));
  }
  j["rows"] = rows;
  j["notes"] = t.notes;
  j["run"] = t.run;
  for (const auto& [k, v] : t.extra.items()) j[k] = v;
  return j;
}

std::string render(const std::vector<Table>& tables, Format f, const nlohmann::json& provenance) {
  std::string out;
  switch (f) {
    case Format::json: {
      nlohmann::json j;
      j["provenance"] = provenance;
      j["tables"] = nlohmann::json::array();
      for (const auto& t : tables) j["tables"].push_back(table_json(t));
      // Invalid UTF-8 in a text (a path in the command line) becomes U+FFFD, never an exception.
      return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    }
    case Format::csv:
      for (std::size_t i = 0; i < tables.size(); ++i) {
        if (tables.size() > 1)
          out += (i ? "\n" : "") + std::string("# table: ") + tables[i].name + "\n";
        out += render_csv(tables[i]);
      }
      return out;
    case Format::markdown:
      for (std::size_t i = 0; i < tables.size(); ++i)
        out += (i ? "\n" : "") + render_markdown(tables[i]);
      return out;
    case Format::table:
      for (std::size_t i = 0; i < tables.size(); ++i)
        out += (i ? "\n" : "") + render_text(tables[i]);
      return out;
  }
  throw std::logic_error("unknown format");
}

void add_matrix_rows(Table& t, const std::string& case_name, const std::string& quantity,
                     const double* m, int rows, int cols, const std::vector<std::string>& names) {
  for (int r = 0; r < rows; ++r)
    t.add_row(
        {case_name, quantity, names[r], std::vector<double>(m + r * cols, m + (r + 1) * cols)});
}

std::vector<Column> matrix_columns() {
  return {{"case"}, {"quantity"}, {"row"}, {"values", "~%.3f"}};
}

std::string fixed(double v, int decimals) {
  if (std::fabs(v) >= 1e15) return human_number(v);  // its digits in full would be up to 309
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace attn
