// format.hpp: rendering tables (table.hpp) for people and for programs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "host/table.hpp"

namespace attn {

enum class Format { table, csv, json, markdown };

// Shortest decimal that reads back as the same double ("0.1", "0.7317287020936569", "1e-27").
std::string round_trip(double v);
// A real as a column displays it in the text and Markdown formats.
std::string display_real(double v, const std::string& display);

std::string render_text(const Table& t);
std::string render_markdown(const Table& t);
std::string render_csv(const Table& t);
nlohmann::json table_json(const Table& t);

// Several tables in one format. JSON is one object {"provenance": ..., "tables": [...]}; CSV
// of several tables puts "# table: NAME" before each header and a blank line between them.
std::string render(const std::vector<Table>& tables, Format f, const nlohmann::json& provenance);

}  // namespace attn
