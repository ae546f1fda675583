// chunks.cpp: see chunks.hpp.
#include "host/chunks.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <thread>

#include "host/cluster.hpp"
#include "host/output.hpp"
#include "host/progress.hpp"
#include "host/provenance.hpp"
#include "version.hpp"

namespace attn {
namespace {

constexpr const char* kPartFormat = "attnlab-part 1";
constexpr const char* kCheckpointFormat = "attnlab-checkpoint 1";

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// What makes two runs "the same command": the program version, the tables and the table flags
// given (not --threads, --device, --format, --out: they never change a number).
json identity(const Options& o) {
  json id = {
      {"version", kVersion}, {"git_commit", kGitCommit}, {"tables", o.tables}, {"given", o.given}};
  if (o.shards > 0) id["shard"] = std::to_string(o.shard) + "/" + std::to_string(o.shards);
  return id;
}

json read_json_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(what + " " + path + ": cannot read it");
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    throw std::invalid_argument(what + " " + path + ": not JSON (" + std::string(e.what()) + ")");
  }
}

// Whether j is an object whose "format" is `format` (anything else is not ours, never a throw).
bool has_format(const json& j, const char* format) {
  return j.is_object() && j.contains("format") && j["format"].is_string() &&
         j["format"].get<std::string>() == format;
}

// --- demo merge: the parts' states, by table and chunk --------------------------------------
std::map<std::string, std::map<std::uint64_t, ChunkState>> g_parts;
bool g_merging = false;

// --- --checkpoint FILE: one section per table ------------------------------------------------
struct Checkpoint {
  std::string path;
  json id;
  json sections = json::object();  // label -> {"next", "fold", "states": [[i, state], ...]}
  std::string command_line;
};
Checkpoint g_checkpoint;

void save_checkpoint() {
  const json j = {{"format", kCheckpointFormat},
                  {"identity", g_checkpoint.id},
                  {"command_line", g_checkpoint.command_line},
                  {"tables", g_checkpoint.sections}};
  write_file_now(g_checkpoint.path, j.dump());  // survives the interruption it is saved for
}

// Chunk i's owner among n processes: contiguous ranges of about equal work (the midpoint of
// each chunk's work decides), the same on every process.
std::pair<std::uint64_t, std::uint64_t> owned_range(const ChunkJob& job, std::uint64_t p,
                                                    std::uint64_t n) {
  if (n <= 1) return {0, job.chunks};
  double total = 0;
  for (std::uint64_t i = 0; i < job.chunks; ++i) total += job.work(i);
  std::uint64_t lo = job.chunks, hi = job.chunks;
  double before = 0;
  for (std::uint64_t i = 0; i < job.chunks; ++i) {
    const double w = job.work(i);
    const auto owner = std::min<std::uint64_t>(
        n - 1, static_cast<std::uint64_t>(static_cast<double>(n) * (before + w / 2) / total));
    if (owner == p && lo == job.chunks) lo = i;
    if (owner > p) {
      hi = i;
      break;
    }
    before += w;
  }
  if (lo == job.chunks) hi = lo;  // more processes than chunks: nothing here
  return {lo, hi};
}

json states_json(const std::map<std::uint64_t, ChunkState>& states) {
  json a = json::array();
  for (const auto& [i, s] : states) a.push_back(json::array({i, s}));
  return a;
}

void states_from_json(const json& a, std::map<std::uint64_t, ChunkState>& states) {
  for (const auto& e : a) states[e.at(0).get<std::uint64_t>()] = e.at(1);
}

struct Part {
  std::string path;
  json j;
};
std::vector<std::string> check_parts(const std::vector<Part>& parts);

}  // namespace

bool reports_results(const Options& o) { return o.shards == 0 && cluster::is_root(); }

void prepare_chunks(const Options& o) {
  if (o.shards > 0 && cluster::size() > 1)
    throw std::invalid_argument("--shard and MPI are two ways to split one run: use one");
  if (o.shards > 0 && o.out_dir.empty())
    throw std::invalid_argument("--shard " + std::to_string(o.shard) + "/" +
                                std::to_string(o.shards) +
                                " needs --out DIR for its partial-state file");
  if (o.shards > 0)
    for (const auto& t : o.tables) refuse_existing(o.out_dir + "/" + t + ".part.json", o.force);
  if (o.checkpoint.empty() || !cluster::is_root()) return;
  g_checkpoint = Checkpoint{o.checkpoint, identity(o), json::object(), o.command_line};
  if (!std::filesystem::exists(o.checkpoint)) return;
  const json j = read_json_file(o.checkpoint, "--checkpoint");
  if (!has_format(j, kCheckpointFormat) || !j.contains("identity") || !j.contains("tables") ||
      !j["tables"].is_object())
    throw std::invalid_argument("--checkpoint " + o.checkpoint + ": not an attnlab checkpoint");
  if (j.at("identity") != g_checkpoint.id)
    throw std::invalid_argument("--checkpoint " + o.checkpoint + " was made by another command (" +
                                j.value("command_line", "?") + "); remove it or give another file");
  g_checkpoint.sections = j.at("tables");
  spdlog::info("resuming from checkpoint {}", o.checkpoint);
}

std::vector<std::string> load_parts(const std::vector<std::string>& dirs) {
  std::vector<Part> parts;
  for (const std::string& dir : dirs) {
    if (!std::filesystem::is_directory(dir))
      throw std::invalid_argument("merge: " + dir + " is not a directory");
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name.size() > 10 && name.compare(name.size() - 10, 10, ".part.json") == 0)
        files.push_back(e.path().string());
    }
    if (files.empty())
      throw std::invalid_argument("merge: " + dir +
                                  " holds no *.part.json (not the --out of a --shard run)");
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      json j = read_json_file(f, "merge: part");
      const auto fields = {"identity", "table", "shard", "shards", "argv", "states"};
      const bool complete =
          has_format(j, kPartFormat) &&
          std::all_of(fields.begin(), fields.end(), [&](const char* k) { return j.contains(k); });
      if (!complete) throw std::invalid_argument("merge: " + f + " is not an attnlab part file");
      parts.push_back({f, std::move(j)});
    }
  }
  try {
    return check_parts(parts);
  } catch (const json::exception& e) {
    throw std::invalid_argument("merge: a part file is damaged (" + std::string(e.what()) + ")");
  }
}

namespace {
std::vector<std::string> check_parts(const std::vector<Part>& parts) {
  const json& first = parts.front().j;
  const auto shards = first.at("shards").get<std::uint64_t>();
  std::map<std::string, std::map<std::uint64_t, std::string>> seen;  // table -> shard -> path
  for (const Part& p : parts) {
    const json& j = p.j;
    json id = j.at("identity"), id0 = first.at("identity");
    if (id.value("version", "") != id0.value("version", "") ||
        id.value("git_commit", "") != id0.value("git_commit", ""))
      throw std::invalid_argument("merge: " + p.path + " was made by another version (" +
                                  id.value("version", "?") + ", " + id.value("git_commit", "?") +
                                  ") than " + parts.front().path);
    id.erase("shard");
    id0.erase("shard");
    if (id != id0)
      throw std::invalid_argument("merge: " + p.path + " is part of another command (" +
                                  j.value("command_line", "?") + ") than " + parts.front().path +
                                  " (" + first.value("command_line", "?") + ")");
    if (j.at("shards").get<std::uint64_t>() != shards)
      throw std::invalid_argument("merge: " + p.path + " is one of " +
                                  std::to_string(j.at("shards").get<std::uint64_t>()) + " parts, " +
                                  parts.front().path + " one of " + std::to_string(shards));
    const std::string table = j.at("table");
    const auto shard = j.at("shard").get<std::uint64_t>();
    auto& mine = seen[table];
    if (mine.count(shard))
      throw std::invalid_argument("merge: " + p.path + " is part " + std::to_string(shard) +
                                  " of " + table + " again (also " + mine[shard] + ")");
    mine[shard] = p.path;
  }
  for (const auto& table : first.at("identity").at("tables")) {
    const auto& mine = seen[table.get<std::string>()];
    for (std::uint64_t s = 0; s < shards; ++s)
      if (!mine.count(s))
        throw std::invalid_argument("merge: part " + std::to_string(s) + " of " +
                                    std::to_string(shards) + " of " + table.get<std::string>() +
                                    " is missing (" + table.get<std::string>() +
                                    ".part.json with shard " + std::to_string(s) + ")");
  }
  g_parts.clear();
  for (const Part& p : parts) states_from_json(p.j.at("states"), g_parts[p.j.at("table")]);
  g_merging = true;
  // The original words, without what made them a shard and what merge says itself (where and
  // how to print; --device and --threads: merge computes nothing).
  std::vector<std::string> argv;
  const auto words = first.at("argv").get<std::vector<std::string>>();
  const std::vector<std::string> with_value = {
      "--shard",  "--out",    "--checkpoint", "--checkpoint-every",
      "--format", "--device", "--threads"};
  const std::vector<std::string> alone = {"--force",   "--quiet", "-q",
                                          "--verbose", "-v",      "--no-plots"};
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    const std::string key = w.substr(0, w.find('='));
    if (std::find(with_value.begin(), with_value.end(), key) != with_value.end()) {
      if (key == w) ++i;  // "--out DIR" rather than "--out=DIR"
      continue;
    }
    if (std::find(alone.begin(), alone.end(), w) != alone.end()) continue;
    argv.push_back(w);
  }
  return argv;
}
}  // namespace

void KeyRanges::add(std::uint64_t count, std::uint64_t per) {
  if (starts_.empty()) starts_.push_back(0);
  counts_.push_back(count);
  pers_.push_back(per);
  starts_.push_back(starts_.back() + (count + per - 1) / per);
}

KeyRanges::Range KeyRanges::at(std::uint64_t chunk) const {
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), chunk);
  const auto key = static_cast<std::size_t>(it - starts_.begin()) - 1;
  const std::uint64_t first = (chunk - starts_[key]) * pers_[key];
  return {key, first, std::min(pers_[key], counts_[key] - first)};
}

bool run_chunks(const Options& o, const ChunkJob& job) {
  if (job.chunks > kMaxChunks)
    throw std::invalid_argument(job.label + ": this request cuts into " +
                                std::to_string(job.chunks) +
                                " chunks of work, more than the 2^28 (268435456) the chunk driver "
                                "takes; ask for fewer samples or rows");
  static int sequence = 0;  // every rank runs the same jobs in the same order: a message tag
  const int tag = 100 + (sequence++ % 30000);
  const bool mpi = cluster::size() > 1, root = cluster::is_root();
  const bool shard = o.shards > 0, fold_here = !shard && root;

  // What is done already (a checkpoint) and where the fold stands.
  std::uint64_t next = 0;                    // chunks [0, next) are folded
  std::map<std::uint64_t, ChunkState> held;  // states computed, not yet folded
  if (g_merging) {
    auto& states = g_parts[job.label];
    for (std::uint64_t i = 0; i < job.chunks; ++i) {
      const auto it = states.find(i);
      if (it == states.end())
        throw std::runtime_error("merge: the parts hold no state for chunk " + std::to_string(i) +
                                 " of " + job.label);
      job.fold(i, it->second);
    }
    states.clear();
    return true;
  }
  const bool checkpointing = !o.checkpoint.empty() && (root || shard);
  if (checkpointing && g_checkpoint.sections.contains(job.label)) {
    const json& s = g_checkpoint.sections[job.label];
    if (s.at("chunks").get<std::uint64_t>() != job.chunks)
      throw std::runtime_error("--checkpoint " + o.checkpoint + ": " + job.label + " has " +
                               std::to_string(job.chunks) + " chunks, the checkpoint " +
                               std::to_string(s.at("chunks").get<std::uint64_t>()));
    try {
      next = s.at("next");
      if (next > 0) job.load(s.at("fold"));
      states_from_json(s.at("states"), held);
    } catch (const json::exception& e) {
      throw std::runtime_error("--checkpoint " + o.checkpoint + ": " + job.label +
                               "'s section is damaged (" + e.what() + ")");
    }
  }
  // Every rank learns which chunks are done.
  std::vector<std::uint64_t> done_list;
  if (mpi) {
    json d = {{"next", next}, {"held", json::array()}};
    for (const auto& [i, s] : held) d["held"].push_back(i);
    d = json::parse(cluster::broadcast(d.dump()));
    next = d["next"];
    done_list = d["held"].get<std::vector<std::uint64_t>>();
  } else {
    for (const auto& [i, s] : held) done_list.push_back(i);
  }
  const auto is_done = [&](std::uint64_t i) {
    return i < next || std::binary_search(done_list.begin(), done_list.end(), i);
  };

  const std::uint64_t processes = shard ? o.shards : static_cast<std::uint64_t>(cluster::size());
  const std::uint64_t me = shard ? o.shard : static_cast<std::uint64_t>(cluster::rank());
  const auto [lo, hi] = owned_range(job, me, processes);

  double total = 0;  // the work this process shows progress for
  for (std::uint64_t i = shard ? lo : 0; i < (shard ? hi : job.chunks); ++i)
    if (!is_done(i)) total += job.work(i);
  Progress progress(job.label, total, job.unit, o.quiet || !root);

  auto last_save = Clock::now();
  const auto save = [&] {
    if (!checkpointing) return;
    g_checkpoint.sections[job.label] = {{"chunks", job.chunks},
                                        {"next", next},
                                        {"fold", next > 0 && fold_here ? job.save() : json()},
                                        {"states", states_json(held)}};
    save_checkpoint();
    last_save = Clock::now();
  };
  // A state arrives (computed here or received): fold what is now contiguous.
  const auto deliver = [&](std::uint64_t i, ChunkState s) {
    progress.advance(job.work(i));
    held.emplace(i, std::move(s));
    if (fold_here)
      for (auto it = held.find(next); it != held.end() && it->first == next; it = held.find(next)) {
        job.fold(next, it->second);
        held.erase(it);
        ++next;
      }
    if (checkpointing &&
        std::chrono::duration<double>(Clock::now() - last_save).count() >= o.checkpoint_seconds)
      save();
  };
  std::uint64_t received = 0, expected = 0;  // on MPI rank 0: other ranks' states
  const auto drain = [&] {
    int from = 0;
    std::string bytes;
    while (cluster::poll(tag, from, bytes)) {
      const json m = json::parse(bytes);
      for (const auto& e : m) {
        deliver(e.at(0).get<std::uint64_t>(), e.at(1));
        ++received;
      }
    }
  };
  if (mpi && root)
    for (std::uint64_t i = hi; i < job.chunks; ++i) expected += is_done(i) ? 0 : 1;

  // Chunks per compute() call: up to the backend's batch, paced to about 0.1 s a call so that
  // progress and Ctrl-C stay responsive (the states, and so the result, do not depend on it).
  ChunkPacer pacer(1, 1, std::max<std::uint64_t>(1, job.batch));
  try {
    for (std::uint64_t i = lo; i < hi;) {
      if (is_done(i)) {
        ++i;
        continue;
      }
      const std::uint64_t want = pacer.next(hi - i);
      std::uint64_t count = 1;
      while (count < want && i + count < hi && !is_done(i + count)) ++count;
      progress.checkpoint();
      std::vector<ChunkState> states = job.compute(i, count);
      pacer.done();
      if (mpi && !root) {
        json m = json::array();
        for (std::uint64_t k = 0; k < count; ++k) m.push_back(json::array({i + k, states[k]}));
        cluster::send(0, tag, m.dump());
      } else {
        for (std::uint64_t k = 0; k < count; ++k) deliver(i + k, std::move(states[k]));
      }
      if (mpi && root) drain();
      i += count;
    }
    if (mpi && !root) cluster::flush(progress);
    while (mpi && root && received < expected) {
      progress.checkpoint();
      drain();
      if (received < expected) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } catch (const Interrupted&) {
    if (checkpointing) {
      save();
      spdlog::warn("checkpoint saved to {}: run the same command again to continue", o.checkpoint);
    }
    throw;
  }
  progress.finish();
  if (checkpointing) save();

  if (shard) {
    json part = {{"format", kPartFormat},
                 {"identity", identity(o)},
                 {"table", job.label},
                 {"shard", o.shard},
                 {"shards", o.shards},
                 {"chunks", job.chunks},
                 {"range", {lo, hi}},
                 {"command_line", o.command_line},
                 {"argv", o.argv},
                 {"version", kVersion},
                 {"git_commit", kGitCommit},
                 {"start_utc", utc_now_iso8601()},
                 {"states", states_json(held)}};
    const std::string path = o.out_dir + "/" + job.label + ".part.json";
    write_file_atomic(path, part.dump(), o.force);
    spdlog::info("wrote part {} of {} ({} chunks of {}) to {}", o.shard, o.shards, hi - lo,
                 job.chunks, path);
    return false;
  }
  if (root && next != job.chunks)
    throw std::logic_error(job.label + ": folded " + std::to_string(next) + " of " +
                           std::to_string(job.chunks) + " chunks");
  return root;
}

// --- exact numbers ---------------------------------------------------------------------------
json exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%a", v);
  return std::string(buf);
}

double exact_double(const json& j) {
  const std::string s = j.get<std::string>();
  return std::strtod(s.c_str(), nullptr);
}

// The scale (moments.hpp) is written only when it is not 1, so that states of ordinary values
// read and write as before it existed.
json exact(const Moments& m) {
  json j = json::array({exact(m.n), exact(m.mean), exact(m.m2), exact(m.m3), exact(m.m4)});
  if (m.scale != 1) j.push_back(exact(m.scale));
  return j;
}

Moments exact_moments(const json& j) {
  Moments m;
  m.n = exact_double(j.at(0));
  m.mean = exact_double(j.at(1));
  m.m2 = exact_double(j.at(2));
  m.m3 = exact_double(j.at(3));
  m.m4 = exact_double(j.at(4));
  if (j.size() > 5) m.scale = exact_double(j.at(5));
  return m;
}

std::string exact_vector(const std::vector<double>& v) {
  static const char* hex = "0123456789abcdef";
  std::string s(v.size() * 16, '0');
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint64_t b;
    std::memcpy(&b, &v[i], 8);
    for (int k = 0; k < 8; ++k) {  // little-endian bytes, each as two hex digits
      const unsigned byte = (b >> (8 * k)) & 0xff;
      s[i * 16 + 2 * k] = hex[byte >> 4];
      s[i * 16 + 2 * k + 1] = hex[byte & 15];
    }
  }
  return s;
}

void append_exact_vector(const std::string& hex, std::vector<double>& out) {
  if (hex.size() % 16 != 0) throw std::runtime_error("a partial state's vector is damaged");
  const auto digit = [](char c) -> unsigned {
    if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
    throw std::runtime_error("a partial state's vector is damaged");
  };
  for (std::size_t i = 0; i < hex.size(); i += 16) {
    std::uint64_t b = 0;
    for (int k = 0; k < 8; ++k)
      b |= static_cast<std::uint64_t>(digit(hex[i + 2 * k]) << 4 | digit(hex[i + 2 * k + 1]))
           << (8 * k);
    double d;
    std::memcpy(&d, &b, 8);
    out.push_back(d);
  }
}

}  // namespace attn
