// provenance.cpp: see provenance.hpp.
#include "host/provenance.hpp"

#include <ctime>

#include "host/backend.hpp"
#include "version.hpp"

namespace attn {

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json Provenance::to_json(const Backend& b) const {
  nlohmann::json j;
  j["program"] = "attnlab demo";
  j["version"] = kVersion;
  j["git_commit"] = kGitCommit;
  j["command_line"] = command_line;
  j["backend"] = b.name();
  nlohmann::json d;
  if (b.kind() == DeviceKind::cuda) {
    d["gpu"] = b.gpu().name;
    d["gpu_index"] = b.gpu().index;
    d["gpus_seen"] = b.gpu().count;
    d["compute_capability"] = b.gpu().compute_capability;
    d["driver"] = b.gpu().driver;
    d["runtime"] = b.gpu().runtime;
    d["memory_gib"] = b.gpu().memory_gib;
    d["multiprocessors"] = b.gpu().multiprocessors;
  }
  d["cpu"] = cpu_model();
  d["threads"] = b.threads();
  j["device"] = d;
  j["start_utc"] = start_utc;
  j["wall_seconds"] = wall_seconds;
  return j;
}

}  // namespace attn
