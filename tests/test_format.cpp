// test_format.cpp: host/format.hpp: shortest round-trip reals, display formats, and the four
// renderings (text, Markdown, CSV, JSON) of one or several tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "host/format.hpp"

namespace attn {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using test::lines_of;

// An independent RFC 4180 reader: records of fields; quoted fields may hold commas, doubled
// quotes and line breaks.
std::vector<std::vector<std::string>> parse_csv(const std::string& s) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> rec;
  std::string field;
  bool quoted = false, in_quotes = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < s.size() && s[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"' && field.empty() && !quoted) {
      in_quotes = quoted = true;
    } else if (c == ',') {
      rec.push_back(field);
      field.clear();
      quoted = false;
    } else if (c == '\n') {
      rec.push_back(field);
      records.push_back(rec);
      rec.clear();
      field.clear();
      quoted = false;
    } else {
      EXPECT_FALSE(quoted) << "text after a closing quote in: " << s;
      field += c;
    }
  }
  EXPECT_FALSE(in_quotes) << "unterminated quote in: " << s;
  if (!field.empty() || !rec.empty()) {
    rec.push_back(field);
    records.push_back(rec);
  }
  return records;
}

double read_double(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  EXPECT_EQ(*end, '\0') << "not wholly a number: '" << s << "'";
  return v;
}

using test::same_bits;

// Significant decimal digits of a plain or exponent-form number: "0.00125" -> 3, "100" -> 1.
int significant_digits(const std::string& s) {
  std::string digits;
  for (char c : s) {
    if (c == 'e' || c == 'E') break;
    if (c >= '0' && c <= '9') digits += c;
  }
  const auto first = digits.find_first_not_of('0');
  if (first == std::string::npos) return 1;
  const auto last = digits.find_last_not_of('0');
  return static_cast<int>(last - first + 1);
}

// A table that has every kind of cell.
Table sample_table() {
  Table t;
  t.name = "sample";
  t.title = "every kind of cell";
  t.columns = {{"n"}, {"x", "%.2f"}, {"label"}, {"vec", "%.1f"}, {"empty"}};
  t.add_row({std::int64_t{1}, 0.1, std::string("plain"), std::vector<double>{1, 2.5, -3},
             std::monostate{}});
  t.add_row({std::int64_t{-20}, 1.0 / 3.0, std::string("x,y"), std::vector<double>{},
             std::string("he said \"hi\"")});
  t.add_row({std::int64_t{300}, 0.1 + 0.2, std::string("two\nlines"), std::vector<double>{0.5},
             std::int64_t{7}});
  t.notes = {"first note", "second note"};
  t.run = {{"generator", "test"}, {"seed", 3}};
  return t;
}

// ---- round_trip ------------------------------------------------------------------------------

TEST(RoundTrip, SimpleValuesGiveTheirShortestDecimal) {
  EXPECT_EQ(round_trip(0.1), "0.1");
  EXPECT_EQ(round_trip(1e-27), "1e-27");
  EXPECT_EQ(round_trip(1.0), "1");
  EXPECT_EQ(round_trip(2.5), "2.5");
  EXPECT_EQ(round_trip(-0.75), "-0.75");
  EXPECT_EQ(round_trip(100.0), "100");
  EXPECT_EQ(round_trip(0.0), "0");
  // 0.1 + 0.2 is not 0.3: its shortest round-trip form needs 17 digits.
  EXPECT_EQ(round_trip(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(round_trip(5e-324), "5e-324");
}

TEST(RoundTrip, NonFiniteValuesAreWords) {
  EXPECT_EQ(round_trip(kNan), "nan");
  EXPECT_EQ(round_trip(kInf), "inf");
  EXPECT_EQ(round_trip(-kInf), "-inf");
}

TEST(RoundTrip, RandomDoublesReadBackExactlyAndNoShorterFormDoes) {
  std::mt19937_64 gen(20240611);
  std::uniform_real_distribution<double> unit(-1, 1);
  int checked = 0;
  for (int i = 0; i < 20000; ++i) {
    double v;
    if (i % 2 == 0) {
      // Any bit pattern: every exponent, subnormals included.
      const std::uint64_t bits = gen();
      std::memcpy(&v, &bits, sizeof v);
      if (!std::isfinite(v)) continue;
    } else {
      v = unit(gen) * std::pow(10.0, static_cast<int>(gen() % 40) - 20);
    }
    const std::string s = round_trip(v);
    const double back = read_double(s);
    ASSERT_TRUE(same_bits(back, v) || (v == 0 && back == 0))
        << "round_trip(" << v << ") = '" << s << "' reads back as " << back;
    // Shortest: no exponent form that reads back is shorter, and (when there is a fraction or
    // an exponent) one significant digit fewer, correctly rounded, reads back differently.
    // (Large integers may print all their digits, "94464612565119824", when that is no longer
    // than the exponent form.)
    std::string sci;
    for (int p = 0; p <= 16 && sci.empty(); ++p) {
      char b[64];
      std::snprintf(b, sizeof b, "%.*e", p, v);
      if (read_double(b) == v) sci = b;
    }
    if (!sci.empty()) {
      EXPECT_LE(s.size(), sci.size()) << s << " vs " << sci;
    }
    const int digits = significant_digits(s);
    if (s.find_first_of(".e") != std::string::npos) {
      ASSERT_LE(digits, 17) << s;
      if (digits >= 2) {
        char shorter[64];
        std::snprintf(shorter, sizeof shorter, "%.*e", digits - 2, v);
        EXPECT_NE(read_double(shorter), v) << "'" << shorter << "' is shorter than '" << s << "'";
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 19000);
}

// ---- display_real ----------------------------------------------------------------------------

TEST(DisplayReal, PrintfConversions) {
  EXPECT_EQ(display_real(3.14159, "%.2f"), "3.14");
  EXPECT_EQ(display_real(-2.71828, "%.3f"), "-2.718");
  EXPECT_EQ(display_real(0.0123, "%+.1e"), "+1.2e-02");
  EXPECT_EQ(display_real(123456.7, "%.3g"), "1.23e+05");
  // No display given: 6 significant digits.
  EXPECT_EQ(display_real(3.14159265358979, ""), "3.14159");
}

TEST(DisplayReal, IntegralValuesPrintAsIntegers) {
  EXPECT_EQ(display_real(4.0, "%.3f"), "4");
  EXPECT_EQ(display_real(-7.0, "%.2f"), "-7");
  EXPECT_EQ(display_real(0.0, "%.4f"), "0");
  EXPECT_EQ(display_real(-0.0, "%.4f"), "0");  // no "-0"
  EXPECT_EQ(display_real(1000000.0, "%.3g"), "1000000");
  EXPECT_EQ(display_real(2.0, "~%.3f"), "2");
  EXPECT_EQ(display_real(1.0, "%+.1e"), "1");
}

TEST(DisplayReal, TildeFixedSwitchesToTwoSignificantDigitsBelowOneThousandth) {
  EXPECT_EQ(display_real(5.2e-13, "~%.3f"), "5.2e-13");
  EXPECT_EQ(display_real(-5.2e-13, "~%.3f"), "-5.2e-13");
  EXPECT_EQ(display_real(0.00042, "~%.3f"), "0.00042");
  EXPECT_EQ(display_real(1.234e-7, "~%.3f"), "1.2e-07");
  // At and above 1e-3: the fixed conversion.
  EXPECT_EQ(display_real(0.001, "~%.3f"), "0.001");
  EXPECT_EQ(display_real(0.5, "~%.3f"), "0.500");
  EXPECT_EQ(display_real(0.0123, "~%.3f"), "0.012");
  EXPECT_EQ(display_real(12.3456, "~%.3f"), "12.346");
  // Without the tilde a tiny value is just the fixed conversion.
  EXPECT_EQ(display_real(5.2e-13, "%.3f"), "0.000");
}

// A fixed format of a number of 1e15 or more (its digits in full, up to 309 of them) gives 6
// significant digits: 1e300 is "1e+300", not 63 of its digits; integral ones too.
TEST(DisplayReal, HugeNumbersInAFixedFormatGiveSignificantDigits) {
  EXPECT_EQ(display_real(1e300, "~%.3f"), "1e+300");
  EXPECT_EQ(display_real(-1e70, "~%.3f"), "-1e+70");
  EXPECT_EQ(display_real(1.5e40, "%.2f"), "1.5e+40");
  EXPECT_EQ(display_real(1e15, "~%.3f"), "1e+15");
  EXPECT_EQ(display_real(1.234567e20, "%.3e"), "1.235e+20");  // not a fixed format: as given
  EXPECT_EQ(display_real(123456789012345.0, "~%.3f"), "123456789012345");  // below 1e15
  EXPECT_EQ(fixed(1e300, 4), "1e+300");
  EXPECT_EQ(fixed(0.70710678, 4), "0.7071");
}

TEST(DisplayReal, NonFinite) {
  EXPECT_EQ(display_real(kNan, "%.2f"), "nan");
  EXPECT_EQ(display_real(kInf, "~%.3f"), "inf");
  EXPECT_EQ(display_real(-kInf, ""), "-inf");
}

// ---- CSV -------------------------------------------------------------------------------------

TEST(RenderCsv, ExactText) {
  const std::string expected =
      "n,x,label,vec,empty\n"
      "1,0.1,plain,\"[1,2.5,-3]\",\n"
      "-20,0.3333333333333333,\"x,y\",\"[]\",\"he said \"\"hi\"\"\"\n"
      "300,0.30000000000000004,\"two\nlines\",\"[0.5]\",7\n";
  EXPECT_EQ(render_csv(sample_table()), expected);
}

TEST(RenderCsv, ReadsBackWithAnRfc4180Reader) {
  const Table t = sample_table();
  const auto rec = parse_csv(render_csv(t));
  ASSERT_EQ(rec.size(), 4u);
  EXPECT_EQ(rec[0], (std::vector<std::string>{"n", "x", "label", "vec", "empty"}));
  for (const auto& r : rec) EXPECT_EQ(r.size(), 5u);
  EXPECT_EQ(rec[1][2], "plain");
  EXPECT_EQ(rec[2][2], "x,y");
  EXPECT_EQ(rec[3][2], "two\nlines");
  EXPECT_EQ(rec[2][4], "he said \"hi\"");
  EXPECT_EQ(rec[1][4], "");  // std::monostate: an empty cell
  // Reals carry full precision.
  EXPECT_EQ(read_double(rec[2][1]), 1.0 / 3.0);
  EXPECT_EQ(read_double(rec[3][1]), 0.1 + 0.2);
  // A vector cell is a JSON array.
  const auto v = nlohmann::json::parse(rec[1][3]);
  ASSERT_TRUE(v.is_array());
  EXPECT_EQ(v, nlohmann::json::parse("[1, 2.5, -3]"));
  EXPECT_EQ(nlohmann::json::parse(rec[2][3]), nlohmann::json::array());
}

TEST(RenderCsv, NonFiniteRealsAndEmptyTable) {
  Table t;
  t.name = "nf";
  t.columns = {{"a"}, {"b"}, {"c"}};
  t.add_row({kNan, kInf, -kInf});
  EXPECT_EQ(render_csv(t), "a,b,c\nnan,inf,-inf\n");
  t.rows.clear();
  EXPECT_EQ(render_csv(t), "a,b,c\n");
}

// ---- JSON ------------------------------------------------------------------------------------

TEST(TableJson, RowsAreObjectsKeyedByColumn) {
  const nlohmann::json j = table_json(sample_table());
  EXPECT_EQ(j["name"], "sample");
  EXPECT_EQ(j["title"], "every kind of cell");
  EXPECT_EQ(j["columns"], nlohmann::json::parse(R"(["n","x","label","vec","empty"])"));
  ASSERT_TRUE(j["rows"].is_array());
  ASSERT_EQ(j["rows"].size(), 3u);
  const auto& r0 = j["rows"][0];
  ASSERT_TRUE(r0.is_object());
  EXPECT_EQ(r0.size(), 5u);
  EXPECT_TRUE(r0["n"].is_number_integer());
  EXPECT_EQ(r0["n"].get<std::int64_t>(), 1);
  EXPECT_TRUE(r0["x"].is_number_float());
  EXPECT_EQ(r0["x"].get<double>(), 0.1);
  EXPECT_EQ(r0["label"], "plain");
  EXPECT_EQ(r0["vec"], nlohmann::json::parse("[1.0, 2.5, -3.0]"));
  EXPECT_TRUE(r0["empty"].is_null());
  EXPECT_EQ(j["rows"][1]["n"].get<std::int64_t>(), -20);
  EXPECT_EQ(j["rows"][1]["vec"], nlohmann::json::array());
  EXPECT_EQ(j["rows"][2]["label"], "two\nlines");
  EXPECT_EQ(j["rows"][2]["empty"].get<std::int64_t>(), 7);
  EXPECT_EQ(j["notes"], nlohmann::json::parse(R"(["first note","second note"])"));
  EXPECT_EQ(j["run"], nlohmann::json::parse(R"({"generator":"test","seed":3})"));
}

TEST(TableJson, NonFiniteAsStringsAndFullPrecisionThroughText) {
  Table t;
  t.name = "nf";
  t.columns = {{"a"}, {"b"}, {"c"}, {"v"}, {"third"}};
  t.add_row({kNan, kInf, -kInf, std::vector<double>{1.5, kNan, -kInf}, 1.0 / 3.0});
  const nlohmann::json j = table_json(t);
  const auto& r = j["rows"][0];
  EXPECT_EQ(r["a"], "nan");
  EXPECT_EQ(r["b"], "inf");
  EXPECT_EQ(r["c"], "-inf");
  EXPECT_EQ(r["v"], nlohmann::json::parse(R"([1.5, "nan", "-inf"])"));
  // The serialized text is standard JSON and the reals survive it bit for bit.
  const nlohmann::json back = nlohmann::json::parse(j.dump());
  EXPECT_EQ(back["rows"][0]["third"].get<double>(), 1.0 / 3.0);
  EXPECT_EQ(back, j);
}

TEST(TableJson, ExtraDataIsMerged) {
  Table t = sample_table();
  t.extra = {{"histogram", {1, 2, 3}}};
  const nlohmann::json j = table_json(t);
  EXPECT_EQ(j["histogram"], nlohmann::json::parse("[1,2,3]"));
}

// ---- several tables --------------------------------------------------------------------------

std::vector<Table> two_tables() {
  Table a;
  a.name = "alpha";
  a.title = "first";
  a.columns = {{"k"}, {"v", "%.2f"}};
  a.add_row({std::int64_t{1}, 0.25});
  a.add_row({std::int64_t{2}, 0.5});
  a.notes = {"alpha note"};
  Table b;
  b.name = "beta";
  b.title = "second";
  b.columns = {{"word"}};
  b.add_row({std::string("x")});
  return {a, b};
}

TEST(Render, CsvSeparatesTablesWithNamedComments) {
  const std::string expected =
      "# table: alpha\n"
      "k,v\n"
      "1,0.25\n"
      "2,0.5\n"
      "\n"
      "# table: beta\n"
      "word\n"
      "x\n";
  EXPECT_EQ(render(two_tables(), Format::csv, nlohmann::json::object()), expected);
  // One table: plain CSV, nothing else.
  EXPECT_EQ(render({two_tables()[0]}, Format::csv, nlohmann::json::object()),
            "k,v\n1,0.25\n2,0.5\n");
}

TEST(Render, JsonIsOneDocumentWithProvenanceAndTables) {
  const nlohmann::json prov = {{"version", "9.9"}, {"command_line", "demo --x"}};
  const std::string text = render(two_tables(), Format::json, prov);
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(text)) << text;
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.size(), 2u);
  EXPECT_EQ(j["provenance"], prov);
  ASSERT_TRUE(j["tables"].is_array());
  ASSERT_EQ(j["tables"].size(), 2u);
  EXPECT_EQ(j["tables"][0]["name"], "alpha");
  EXPECT_EQ(j["tables"][1]["name"], "beta");
  EXPECT_EQ(j["tables"][0]["rows"][1]["v"].get<double>(), 0.5);
  EXPECT_EQ(j["tables"][1]["rows"][0]["word"], "x");
  // No tables: still one valid document.
  const auto empty = nlohmann::json::parse(render({}, Format::json, prov));
  EXPECT_EQ(empty["tables"], nlohmann::json::array());
}

TEST(Render, MarkdownTables) {
  const std::string md = render(two_tables(), Format::markdown, nlohmann::json::object());
  const auto lines = lines_of(md);
  int tables = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("### ", 0) == 0) {
      ++tables;
      ASSERT_LT(i + 3, lines.size());
      EXPECT_EQ(lines[i + 1], "");
    }
  }
  EXPECT_EQ(tables, 2);
  EXPECT_NE(md.find("### alpha: first\n"), std::string::npos) << md;
  EXPECT_NE(md.find("### beta: second\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| k | v |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | 0.25 |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | 0.50 |\n"), std::string::npos) << md;  // display "%.2f"
  EXPECT_NE(md.find("| word |\n|---|\n| x |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("- alpha note"), std::string::npos) << md;
  // Every table line starts and ends with a pipe. Header separator: right after each header, pipes
  // and dashes only, same column count.
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    if (lines[i].rfind("| k |", 0) == 0 || lines[i].rfind("| word |", 0) == 0) {
      const std::string& sep = lines[i + 1];
      EXPECT_EQ(sep.find_first_not_of("|-: "), std::string::npos) << sep;
      const auto pipes = [](const std::string& s) { return std::count(s.begin(), s.end(), '|'); };
      EXPECT_EQ(pipes(sep), pipes(lines[i])) << sep;
    }
  }
  for (const auto& l : lines) {
    if (l.empty() || l[0] != '|') continue;
    EXPECT_EQ(l.back(), '|') << l;
  }
}

TEST(Render, TextColumnsLineUpWithTheHeader) {
  Table t;
  t.name = "align";
  t.title = "columns of different widths";
  t.columns = {{"a"}, {"long_column_name", "%.3f"}, {"c"}, {"d", "~%.3f"}};
  t.add_row({std::int64_t{1}, 0.5, std::string("short"), 5.2e-13});
  t.add_row({std::int64_t{123456789}, 12345.678, std::string("a_much_longer_cell"), 0.25});
  t.add_row({std::int64_t{-3}, kNan, std::string("x"), -1.0});
  t.notes = {"a note below"};
  const std::string text = render({t}, Format::table, nlohmann::json::object());
  const auto lines = lines_of(text);
  ASSERT_EQ(lines.size(), 1u + 1u + 3u + 1u) << text;
  EXPECT_EQ(lines[0], "== align: columns of different widths");
  EXPECT_EQ(lines.back(), "  a note below");
  // Word starts on each line (no cell here holds a space).
  const auto starts = [](const std::string& l) {
    std::vector<std::size_t> s;
    for (std::size_t i = 0; i < l.size(); ++i)
      if (l[i] != ' ' && (i == 0 || l[i - 1] == ' ')) s.push_back(i);
    return s;
  };
  const auto header = starts(lines[1]);
  ASSERT_EQ(header.size(), 4u) << lines[1];
  EXPECT_EQ(lines[1].substr(0, 1), "a");
  for (std::size_t i = 2; i < 5; ++i) {
    EXPECT_EQ(starts(lines[i]), header) << "line " << i << ":\n" << text;
    EXPECT_NE(lines[i].back(), ' ') << "trailing blanks on line " << i;
  }
  // Cells show their display format.
  EXPECT_NE(lines[2].find("0.500"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("5.2e-13"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("12345.678"), std::string::npos) << lines[3];
  EXPECT_NE(lines[4].find("nan"), std::string::npos) << lines[4];
}

TEST(Render, TextOfSeveralTablesAndVectors) {
  const std::string text = render(two_tables(), Format::table, nlohmann::json::object());
  EXPECT_NE(text.find("== alpha: first\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n\n== beta: second\n"), std::string::npos) << text;
  Table m;
  m.name = "m";
  m.columns = {{"row", "%.2f"}};
  m.add_row({std::vector<double>{4, 2, 0.126}});
  const std::string mt = render_text(m);
  EXPECT_NE(mt.find("[4, 2, 0.13]"), std::string::npos) << mt;  // integral entries as integers
}

// ---- human_number: every number a person reads outside a table's columns -----------------------

// Expected strings: C's "%g" (6 significant digits, exponent form below 1e-4 and from 1e6),
// written out by hand.
TEST(HumanNumber, ShowsEveryMagnitude) {
  EXPECT_EQ(human_number(1e6), "1e+06");   // not "100000" (to_string(x).substr(0, 6))
  EXPECT_EQ(human_number(1e-7), "1e-07");  // not "0.0000"
  EXPECT_EQ(human_number(1e-9), "1e-09");  // not "0.000000"
  EXPECT_EQ(human_number(0.5), "0.5");
  EXPECT_EQ(human_number(1.0), "1");
  EXPECT_EQ(human_number(-3.25), "-3.25");
  EXPECT_EQ(human_number(1.0 / 3.0), "0.333333");
  EXPECT_EQ(human_number(123456.0), "123456");
  EXPECT_EQ(human_number(1234567.0), "1.23457e+06");
  EXPECT_EQ(human_number(-0.0), "0");
  EXPECT_EQ(human_number(kNan), "nan");
  EXPECT_EQ(human_number(kInf), "inf");
  EXPECT_EQ(human_number(-kInf), "-inf");
}

// Whatever the magnitude, the text reads back within 6 significant digits and is never a
// string of zeros for a non-zero value.
TEST(HumanNumber, ReadsBackToSixSignificantDigits) {
  std::mt19937_64 gen(10);
  std::uniform_real_distribution<double> mantissa(-10, 10);
  std::uniform_int_distribution<int> exponent(-300, 300);
  for (int i = 0; i < 20000; ++i) {
    const double v = mantissa(gen) * std::pow(10.0, exponent(gen));
    if (v == 0 || !std::isfinite(v)) continue;
    const std::string s = human_number(v);
    const double back = std::strtod(s.c_str(), nullptr);
    ASSERT_LE(std::fabs(back - v), 5e-6 * std::fabs(v)) << v << " shown as " << s;
    ASSERT_NE(s.find_first_of("123456789"), std::string::npos) << v << " shown as " << s;
  }
}

TEST(HumanCount, SingularAndPlural) {
  EXPECT_EQ(human_count(1, "thread", "threads"), "1 thread");
  EXPECT_EQ(human_count(2, "thread", "threads"), "2 threads");
  EXPECT_EQ(human_count(0, "key", "keys"), "0 keys");
}

// ---- seeds are unsigned 64-bit in every format ----------------------------------------------

TEST(UnsignedCells, LargestSeedInEveryFormat) {
  Table t;
  t.name = "s";
  t.title = "seeds";
  t.columns = {{"seed"}, {"n"}};
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t two63 = std::uint64_t{1} << 63;
  t.add_row({max, std::int64_t{-1}});
  t.add_row({two63, std::int64_t{2}});
  for (Format f : {Format::table, Format::csv, Format::markdown}) {
    const std::string s = render({t}, f, nlohmann::json::object());
    EXPECT_NE(s.find("18446744073709551615"), std::string::npos) << s;
    EXPECT_NE(s.find("9223372036854775808"), std::string::npos) << s;
    EXPECT_EQ(s.find("-9223372036854775808"), std::string::npos) << s;
  }
  const auto j = nlohmann::json::parse(render({t}, Format::json, nlohmann::json::object()));
  EXPECT_EQ(j["tables"][0]["rows"][0]["seed"].get<std::uint64_t>(), max);
  EXPECT_EQ(j["tables"][0]["rows"][1]["seed"].get<std::uint64_t>(), two63);
  EXPECT_EQ(j["tables"][0]["rows"][0]["n"].get<std::int64_t>(), -1);
}

// The same through the real binary: --seeds 18446744073709551615 printed -1 before.
TEST(UnsignedCells, DemoPrintsTheLargestSeed) {
  const std::string args =
      "--table training --configs qk-random --seeds 18446744073709551615 --steps 3 -q --format ";
  for (const char* f : {"table", "csv", "json", "markdown"}) {
    const auto r = test::run_demo(args + f);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("18446744073709551615"), std::string::npos) << f << ":\n" << r.out;
    for (const char* negative : {" -1 ", ",-1,", "| -1 |", "\"seed\": -1"})
      EXPECT_EQ(r.out.find(negative), std::string::npos) << f << ":\n" << r.out;
  }
}

// Titles and notes through the real binary.
TEST(HumanNumber, DemoTitlesAndNotes) {
  const auto big = test::run_demo("--table rnn-decay --w 1e6 -q");
  ASSERT_EQ(big.exit_code, 0) << big.err;
  EXPECT_NE(big.out.find("(w = 1e+06)"), std::string::npos) << big.out;
  const auto tiny = test::run_demo("--table rnn-decay --w 1e-7 -q");
  ASSERT_EQ(tiny.exit_code, 0) << tiny.err;
  EXPECT_NE(tiny.out.find("(w = 1e-07)"), std::string::npos) << tiny.out;
  const auto lr = test::run_demo("--table knob --knob-lr 1e-7 --knob-steps 0,1 -q");
  ASSERT_EQ(lr.exit_code, 0) << lr.err;
  EXPECT_NE(lr.out.find("lr = 1e-07"), std::string::npos) << lr.out;
  const auto sweep = test::run_demo(
      "--table training-sweep --seeds 0:8 --steps 3 --grad analytic --converged-below 1e-9 -q");
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  EXPECT_NE(sweep.out.find("loss < 1e-09"), std::string::npos) << sweep.out;
  const auto one_key =
      test::run_demo("--table softmax-saturation --keys 1 --d-k 1 --samples 10 -q");
  ASSERT_EQ(one_key.exit_code, 0) << one_key.err;
  EXPECT_NE(one_key.out.find("over 1 key,"), std::string::npos) << one_key.out;
  // The notice of a run without a GPU names its thread count ("1 thread", never "1 threads").
  const auto threads = test::run_demo("--table rnn-decay --device auto --threads 1");
  ASSERT_EQ(threads.exit_code, 0) << threads.err;
  EXPECT_EQ(threads.err.find("1 threads"), std::string::npos) << threads.err;
  if (threads.err.find("running on the CPU") != std::string::npos) {
    EXPECT_NE(threads.err.find("with 1 thread\n"), std::string::npos) << threads.err;
  }
}

}  // namespace
}  // namespace attn

#include "host/memory.hpp"
#include "host/progress.hpp"

namespace attn {
namespace {

// ChunkPacer's chunks with a multiple: every chunk but a last one taking all that remains is a
// multiple of it, however the timing resizes them (fast chunks double from an odd first size;
// a slow one shrinks to an arbitrary size), and the chunks cover the items exactly.
TEST(ChunkPacer, ChunksAreMultiplesButTheLast) {
  ChunkPacer pacer(3, 2, 1000, 1e-9, 2);  // every chunk "too slow": sizes shrink to min
  ChunkPacer fast(3, 2, 1000, 1e9, 2);    // every chunk "fast": sizes double
  for (ChunkPacer* p : {&pacer, &fast}) {
    std::uint64_t done = 0;
    const std::uint64_t count = 101;
    while (done < count) {
      const std::uint64_t c = p->next(count - done);
      ASSERT_GT(c, 0u);
      if (c < count - done) {
        EXPECT_EQ(c % 2, 0u) << "chunk at " << done;
      }
      done += c;
      p->done();
    }
    EXPECT_EQ(done, count);
  }
}

TEST(HumanDuration, EveryMagnitudeReadsAsAPersonWould) {
  EXPECT_EQ(human_duration(0.0712), "0.071s");  // under 10 s: two digits, never "0s"
  EXPECT_EQ(human_duration(2.5), "2.5s");
  EXPECT_EQ(human_duration(42), "42s");
  EXPECT_EQ(human_duration(65), "1m05s");
  EXPECT_EQ(human_duration(3 * 3600 + 7 * 60 + 5), "3h07m");
  EXPECT_EQ(human_duration(12 * 86400), "12 days");
  EXPECT_EQ(human_duration(23.6 * 86400 * 365.25), "23.6 years");
}

TEST(HumanBytes, DecimalUnitsWithThreeDigits) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(4940), "4.94 kB");  // was "4.94e-06 GB"
  EXPECT_EQ(human_bytes(999.4e3), "999 kB");
  EXPECT_EQ(human_bytes(999.6e3), "1 MB");
  EXPECT_EQ(human_bytes(1.234e9), "1.23 GB");
  EXPECT_EQ(human_bytes(3e18), "3000 PB");
}

}  // namespace
}  // namespace attn
