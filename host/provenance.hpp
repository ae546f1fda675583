// provenance.hpp: what every result file says about how it was made.
#pragma once

#include <string>

#include "host/json.hpp"

namespace attn {

class Backend;

struct Provenance {
  std::string command_line;
  std::string start_utc;  // ISO 8601, e.g. "2026-11-29T13:24:08Z"
  double wall_seconds = 0;

  // {"version", "git_commit", "command_line", "backend", "device": {...}, "start_utc",
  //  "wall_seconds"}; experiments add their generator, seeds and samples per table.
  nlohmann::json to_json(const Backend& b) const;
};

std::string utc_now_iso8601();

}  // namespace attn
