// format.hpp: rendering tables (table.hpp) for people and for programs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "host/json.hpp"
#include "host/table.hpp"

namespace attn {

enum class Format { table, csv, json, markdown };
// The format named by an option's text ("table", "csv", "json", "markdown"); throws
// std::invalid_argument naming the option and the choices otherwise.
Format parse_format(const std::string& option, const std::string& text);
// The name parse_format reads.
const char* format_name(Format f);

// Shortest decimal that reads back as the same double ("0.1", "0.7317287020936569", "1e-27").
std::string round_trip(double v);
// A number in a title, note or message, for people: C's "%g" (6 significant digits, shortest
// of fixed and exponent form): 0.5, 1e+06, 1e-07, 0.333333, 1e-09; "nan", "inf", "-inf"; never
// "-0". The one formatter for every number a person reads outside a table's columns.
std::string human_number(double v);
// "1 thread", "2 threads": a count with its noun in the right number.
std::string human_count(std::uint64_t n, const std::string& singular, const std::string& plural);
// A real as a column displays it in the text and Markdown formats.
std::string display_real(double v, const std::string& display);

// "0.77" style, for notes: value rounded to `decimals` places.
std::string fixed(double v, int decimals);

// The columns of the matrix tables: case, quantity, row, values.
std::vector<Column> matrix_columns();
// Adds rows (case, quantity, row name, values) for an r x c row-major matrix.
void add_matrix_rows(Table& t, const std::string& case_name, const std::string& quantity,
                     const double* m, int rows, int cols,
                     const std::vector<std::string>& row_names);

std::string render_text(const Table& t);
std::string render_markdown(const Table& t);
std::string render_csv(const Table& t);
nlohmann::json table_json(const Table& t);

// Several tables in one format. JSON is one object {"provenance": ..., "tables": [...]}; CSV
// of several tables puts "# table: NAME" before each header and a blank line between them.
std::string render(const std::vector<Table>& tables, Format f, const nlohmann::json& provenance);

}  // namespace attn
