// chunks.cpp: see chunks.hpp.
#include "host/chunks.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <stdexcept>
#include <thread>

#include <sys/stat.h>

#include "host/cluster.hpp"
#include "host/input.hpp"
#include "host/output.hpp"
#include "host/progress.hpp"
#include "host/provenance.hpp"
#include "version.hpp"

namespace attn {
namespace {

// Format 2 carries a checksum; format 1 (without one) is refused as an older version's.
constexpr const char* kPartFormat = "attnlab-part 2";
constexpr const char* kCheckpointFormat = "attnlab-checkpoint 2";
constexpr const char* kOldPartFormat = "attnlab-part 1";
constexpr const char* kOldCheckpointFormat = "attnlab-checkpoint 1";
// Deeper nesting than any state has (about 8 levels): refused before parsing, as dump() and
// comparisons of a parsed document recurse once per level.
constexpr int kMaxStateDepth = 64;

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

// A checkpoint or part file, parsed: a regular file (a FIFO, device or directory refused without
// waiting on it), JSON, nested at most kMaxStateDepth deep. follow_links: false for a file demo
// also replaces (a checkpoint). Throws std::invalid_argument naming what and path.
json read_json_file(const std::string& path, const std::string& what, bool follow_links) {
  const std::string where = what + " " + path + ": ";
  std::string text;
  try {
    text = read_regular_file(path, std::numeric_limits<std::size_t>::max(), follow_links);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(where + e.what());
  }
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxStateDepth)
        throw std::invalid_argument(where + "JSON nested deeper than " +
                                    std::to_string(kMaxStateDepth) + " levels: not demo's");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw std::invalid_argument(where + "not JSON (" + json_error_text(e) + ")");
  }
}

// The text of member key of j, cut for a message; "?" when there is none.
std::string text_of(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_string()) return "?";
  return quote_input(j.at(key).get<std::string>(), 60);
}

// The format of a file demo wrote: its "format" text ("" when it has none).
std::string format_of(const json& j) {
  if (!j.is_object() || !j.contains("format") || !j.at("format").is_string()) return "";
  return j.at("format").get<std::string>();
}

// Checks a checkpoint's or part's format and checksum (and removes the checksum member, which
// is no part of the content). Throws std::invalid_argument beginning with where.
void check_format_and_checksum(json& j, const std::string& where, const char* format,
                               const char* old_format, const char* what, const char* remedy) {
  const std::string f = format_of(j);
  if (f == old_format)
    throw std::invalid_argument(where + "written by an older version of demo (" + old_format +
                                ", without a checksum); " + remedy);
  if (f != format) throw std::invalid_argument(where + "not an attnlab " + what);
  if (!j.contains("checksum") || !j.at("checksum").is_string())
    throw std::invalid_argument(where + "no checksum (the " + std::string(what) + " is damaged); " +
                                remedy);
  const std::string stored = j.at("checksum").get<std::string>();
  j.erase("checksum");
  const std::string actual = content_checksum(j);
  if (stored != actual)
    throw std::invalid_argument(where + "checksum mismatch (stored " + quote_input(stored, 30) +
                                ", content " + actual + "): the " + what +
                                " was changed or damaged after demo wrote it; " + remedy);
}

// j with its checksum added: what demo writes.
json sealed(json j) {
  j["checksum"] = content_checksum(j);
  return j;
}

// A whole count in [0, limit] from JSON; throws std::invalid_argument naming what.
std::uint64_t count_at_most(const json& j, std::uint64_t limit, const std::string& what) {
  if (!j.is_number_integer() || (j.is_number_unsigned() ? false : j.get<std::int64_t>() < 0))
    throw std::invalid_argument(what + " is not a whole count");
  const auto v = j.get<std::uint64_t>();
  if (v > limit)
    throw std::invalid_argument(what + " " + std::to_string(v) + " is more than " +
                                std::to_string(limit));
  return v;
}

bool g_merging = false;  // demo merge: states come from the parts (g_part_states below)

// --- --checkpoint FILE: one section per table ------------------------------------------------
struct Checkpoint {
  std::string path;
  json id;
  json sections = json::object();  // label -> {"next", "fold", "states": [[i, state], ...]}
  std::string command_line;
};
Checkpoint g_checkpoint;

void save_checkpoint() {
  const json j = sealed({{"format", kCheckpointFormat},
                         {"identity", g_checkpoint.id},
                         {"command_line", g_checkpoint.command_line},
                         {"tables", g_checkpoint.sections}});
  write_file_now(g_checkpoint.path, j.dump());  // survives the interruption it is saved for
}

// A checkpoint's section for one table, checked for what the driver relies on: chunks (at most
// kMaxChunks), next <= chunks, a fold state when next > 0, and states [[i, state], ...] with
// next <= i < chunks, i increasing. The states themselves are the table's to check (run_chunks).
void check_section(const std::string& label, const json& s, const std::string& where) {
  const std::string at = where + label + ": ";
  if (!s.is_object() || !s.contains("chunks") || !s.contains("next") || !s.contains("states") ||
      !s.contains("fold") || !s.at("states").is_array())
    throw std::invalid_argument(at + "not a checkpoint section (chunks, next, fold, states)");
  const std::uint64_t chunks = count_at_most(s.at("chunks"), kMaxChunks, at + "chunks");
  const std::uint64_t next = count_at_most(s.at("next"), chunks, at + "next");
  if (next > 0 && s.at("fold").is_null())
    throw std::invalid_argument(at + "no result for the " + std::to_string(next) +
                                " chunks folded");
  std::uint64_t after = next;
  for (const json& e : s.at("states")) {
    if (!e.is_array() || e.size() != 2)
      throw std::invalid_argument(at + "a held state is not [chunk, state]");
    const std::uint64_t i = count_at_most(e.at(0), chunks, at + "a held state's chunk");
    if (i < after || i >= chunks)
      throw std::invalid_argument(at + "held state for chunk " + std::to_string(i) +
                                  " is out of order or out of range [" + std::to_string(next) +
                                  ", " + std::to_string(chunks) + ")");
    after = i + 1;
  }
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

// --- demo merge: the parts' states, by table and chunk, and where each came from -----------
struct PartStates {
  std::string first;                             // the first of the table's parts read
  std::uint64_t chunks = 0;                      // the table's chunks, as its parts say
  std::map<std::uint64_t, ChunkState> states;    // chunk -> state
  std::map<std::uint64_t, std::string> file_of;  // first chunk of a part -> its path
  std::string file(std::uint64_t chunk) const {  // the part that holds chunk
    auto it = file_of.upper_bound(chunk);
    return it == file_of.begin() ? first : std::prev(it)->second;
  }
};
std::map<std::string, PartStates> g_part_states;

// A part's fields, checked for what merge relies on: the command's identity and words, its
// table, shard < shards, chunks (at most kMaxChunks), range [lo, hi) within them, and a state
// for every chunk of that range, in order. Throws std::invalid_argument beginning with where.
void check_part_fields(const json& j, const std::string& where) {
  const auto fields = {"identity", "table", "shard", "shards", "chunks", "range", "argv", "states"};
  for (const char* k : fields)
    if (!j.contains(k))
      throw std::invalid_argument(where + "not an attnlab part file (no " + k + ")");
  if (!j.at("identity").is_object() || !j.at("identity").contains("tables") ||
      !j.at("identity").at("tables").is_array())
    throw std::invalid_argument(where + "its identity is damaged");
  for (const json& t : j.at("identity").at("tables"))
    if (!t.is_string()) throw std::invalid_argument(where + "its identity is damaged");
  if (!j.at("table").is_string()) throw std::invalid_argument(where + "its table is not a name");
  if (!j.at("argv").is_array())
    throw std::invalid_argument(where + "its argv is not a list of words");
  for (const json& w : j.at("argv"))
    if (!w.is_string()) throw std::invalid_argument(where + "its argv is not a list of words");
  const std::uint64_t shards =
      count_at_most(j.at("shards"), std::numeric_limits<std::uint32_t>::max(), where + "shards");
  if (shards == 0) throw std::invalid_argument(where + "shards is 0");
  count_at_most(j.at("shard"), shards - 1, where + "shard");
  const std::uint64_t chunks = count_at_most(j.at("chunks"), kMaxChunks, where + "chunks");
  const json& r = j.at("range");
  if (!r.is_array() || r.size() != 2) throw std::invalid_argument(where + "range is not [lo, hi]");
  const std::uint64_t hi = count_at_most(r.at(1), chunks, where + "range's end");
  const std::uint64_t lo = count_at_most(r.at(0), hi, where + "range's start");
  const json& states = j.at("states");
  if (!states.is_array() || states.size() != hi - lo)
    throw std::invalid_argument(
        where + "holds " + (states.is_array() ? std::to_string(states.size()) : "no") +
        " states for the " + std::to_string(hi - lo) + " chunks of its range");
  std::uint64_t want = lo;
  for (const json& e : states) {
    if (!e.is_array() || e.size() != 2 || !e.at(0).is_number_unsigned() ||
        e.at(0).get<std::uint64_t>() != want)
      throw std::invalid_argument(where + "its state for chunk " + std::to_string(want) +
                                  " is missing or out of order");
    ++want;
  }
}

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
  // Where it is saved: a regular file or nothing (never a FIFO, link, device or directory), in
  // a folder that takes a file now (not read-only, full or forbidden), before any work.
  const std::string where = "--checkpoint " + o.checkpoint + ": ";
  try {
    refuse_non_utf8("--checkpoint", o.checkpoint);
    refuse_existing(o.checkpoint, true);
    probe_writable("--checkpoint", o.checkpoint);
  } catch (const std::runtime_error& e) {
    const std::string why = e.what();
    if (why.rfind("--checkpoint", 0) == 0) throw std::invalid_argument(why);
    if (why.rfind(o.checkpoint, 0) == 0) throw std::invalid_argument("--checkpoint " + why);
    throw std::invalid_argument(where + why);
  }
  struct stat st {};
  if (lstat(o.checkpoint.c_str(), &st) != 0) return;  // none yet: the first save makes it
  json j = read_json_file(o.checkpoint, "--checkpoint", /*follow_links=*/false);
  check_format_and_checksum(j, where, kCheckpointFormat, kOldCheckpointFormat, "checkpoint",
                            "remove it to start again");
  if (!j.contains("identity") || !j.contains("tables") || !j.at("tables").is_object())
    throw std::invalid_argument(where + "not an attnlab checkpoint");
  if (j.at("identity") != g_checkpoint.id)
    throw std::invalid_argument("--checkpoint " + o.checkpoint + " was made by another command (" +
                                text_of(j, "command_line") + "); remove it or give another file");
  for (const auto& [label, section] : j.at("tables").items()) check_section(label, section, where);
  g_checkpoint.sections = std::move(j.at("tables"));
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
      json j = read_json_file(f, "merge: part", /*follow_links=*/true);
      const std::string where = "merge: " + f + ": ";
      check_format_and_checksum(j, where, kPartFormat, kOldPartFormat, "part file",
                                "run its shard again");
      check_part_fields(j, where);
      parts.push_back({f, std::move(j)});
    }
  }
  try {
    return check_parts(parts);
  } catch (const json::exception& e) {
    throw std::invalid_argument("merge: a part file is damaged (" + json_error_text(e) + ")");
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
    if (text_of(id, "version") != text_of(id0, "version") ||
        text_of(id, "git_commit") != text_of(id0, "git_commit"))
      throw std::invalid_argument("merge: " + p.path + " was made by another version (" +
                                  text_of(id, "version") + ", " + text_of(id, "git_commit") +
                                  ") than " + parts.front().path);
    id.erase("shard");
    id0.erase("shard");
    if (id != id0)
      throw std::invalid_argument("merge: " + p.path + " is part of another command (" +
                                  text_of(j, "command_line") + ") than " + parts.front().path +
                                  " (" + text_of(first, "command_line") + ")");
    if (j.at("shards").get<std::uint64_t>() != shards)
      throw std::invalid_argument("merge: " + p.path + " is one of " +
                                  std::to_string(j.at("shards").get<std::uint64_t>()) + " parts, " +
                                  parts.front().path + " one of " + std::to_string(shards));
    const std::string table = j.at("table");
    const auto& tables = id0.at("tables");
    if (std::find(tables.begin(), tables.end(), j.at("table")) == tables.end())
      throw std::invalid_argument("merge: " + p.path + " holds table " + quote_input(table) +
                                  ", which its command does not make");
    const auto shard = j.at("shard").get<std::uint64_t>();
    auto& mine = seen[table];
    if (mine.count(shard))
      throw std::invalid_argument("merge: " + p.path + " is part " + std::to_string(shard) +
                                  " of " + quote_input(table) + " again (also " + mine[shard] +
                                  ")");
    mine[shard] = p.path;
  }
  for (const auto& table : first.at("identity").at("tables")) {
    const auto& mine = seen[table.get<std::string>()];
    const std::string name = quote_input(table.get<std::string>());
    for (std::uint64_t s = 0; s < shards; ++s)
      if (!mine.count(s))
        throw std::invalid_argument("merge: part " + std::to_string(s) + " of " +
                                    std::to_string(shards) + " of " + name + " is missing (" +
                                    name + ".part.json with shard " + std::to_string(s) + ")");
  }
  // A table's parts: one number of chunks, ranges that do not overlap.
  g_part_states.clear();
  for (const Part& p : parts) {
    PartStates& t = g_part_states[p.j.at("table").get<std::string>()];
    const auto chunks = p.j.at("chunks").get<std::uint64_t>();
    const auto lo = p.j.at("range").at(0).get<std::uint64_t>();
    const auto hi = p.j.at("range").at(1).get<std::uint64_t>();
    if (t.first.empty()) {
      t.first = p.path;
      t.chunks = chunks;
    } else if (t.chunks != chunks) {
      throw std::invalid_argument("merge: " + p.path + " cuts its table into " +
                                  std::to_string(chunks) + " chunks, " + t.first + " into " +
                                  std::to_string(t.chunks));
    }
    if (lo == hi) continue;  // more parts than chunks: this one holds none
    const auto after = t.states.lower_bound(lo);
    if (after != t.states.end() && after->first < hi)
      throw std::invalid_argument("merge: " + p.path + " holds chunk " +
                                  std::to_string(after->first) + ", which " + t.file(after->first) +
                                  " holds too");
    states_from_json(p.j.at("states"), t.states);
    t.file_of[lo] = p.path;
  }
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

namespace {
// Runs a table's check of a state read from a file; what it finds wrong (or a JSON type or
// range error) becomes one std::invalid_argument line beginning with where.
template <class F>
void checked_state(const std::string& where, F check) {
  try {
    check();
  } catch (const json::exception& e) {
    throw std::invalid_argument(where + json_error_text(e));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(where + quote_input(e.what(), 200));
  }
}
}  // namespace

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
    PartStates& parts = g_part_states[job.label];
    if (parts.chunks != job.chunks)
      throw std::invalid_argument("merge: " + parts.first + ": " + job.label + " has " +
                                  std::to_string(job.chunks) + " chunks, the parts " +
                                  std::to_string(parts.chunks));
    // Every state checked before any is folded.
    for (std::uint64_t i = 0; i < job.chunks; ++i) {
      const auto it = parts.states.find(i);
      if (it == parts.states.end())
        throw std::invalid_argument("merge: the parts hold no state for chunk " +
                                    std::to_string(i) + " of " + job.label);
      checked_state("merge: " + parts.file(i) + ": " + job.label + ": chunk " + std::to_string(i) +
                        "'s state: ",
                    [&] { job.check(i, it->second); });
    }
    for (std::uint64_t i = 0; i < job.chunks; ++i) job.fold(i, parts.states.at(i));
    g_part_states.erase(job.label);
    return true;
  }
  const bool checkpointing = !o.checkpoint.empty() && (root || shard);
  if (checkpointing && g_checkpoint.sections.contains(job.label)) {
    // Its structure was checked when it was read (check_section); here what the table holds.
    const json& s = g_checkpoint.sections[job.label];
    const std::string where = "--checkpoint " + o.checkpoint + ": " + job.label + ": ";
    if (s.at("chunks").get<std::uint64_t>() != job.chunks)
      throw std::invalid_argument(where + "this request has " + std::to_string(job.chunks) +
                                  " chunks, the checkpoint " +
                                  std::to_string(s.at("chunks").get<std::uint64_t>()));
    const auto folded = s.at("next").get<std::uint64_t>();
    if (folded > 0 && !fold_here)
      throw std::invalid_argument(where + "a part's checkpoint with " + std::to_string(folded) +
                                  " chunks folded (a part folds none)");
    for (const auto& e : s.at("states")) {
      const auto i = e.at(0).get<std::uint64_t>();
      checked_state(where + "chunk " + std::to_string(i) + "'s state: ",
                    [&] { job.check(i, e.at(1)); });
    }
    if (folded > 0)
      checked_state(where + "the result of chunks 0.." + std::to_string(folded - 1) + ": ",
                    [&] { job.load(s.at("fold"), folded); });
    next = folded;
    states_from_json(s.at("states"), held);
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
      progress.stop_point();
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
      progress.stop_point();
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
    json part = sealed({{"format", kPartFormat},
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
                        {"states", states_json(held)}});
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
  if (!j.is_string()) throw std::invalid_argument("a number is not in exact text");
  const std::string& s = j.get_ref<const std::string&>();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  // strtod skips leading white space; the exact text has none.
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) || end != s.c_str() + s.size())
    throw std::invalid_argument("'" + quote_input(s, 24) + "' is not a number in exact text");
  return v;
}

// The scale (moments.hpp) is written only when it is not 1, so that states of ordinary values
// read and write as before it existed.
json exact(const Moments& m) {
  json j = json::array({exact(m.n), exact(m.mean), exact(m.m2), exact(m.m3), exact(m.m4)});
  if (m.scale != 1) j.push_back(exact(m.scale));
  return j;
}

Moments exact_moments(const json& j) {
  if (!j.is_array() || (j.size() != 5 && j.size() != 6))
    throw std::invalid_argument("moments are not 5 numbers (n, mean, m2, m3, m4) or 6 (a scale)");
  Moments m;
  m.n = exact_double(j.at(0));
  m.mean = exact_double(j.at(1));
  m.m2 = exact_double(j.at(2));
  m.m3 = exact_double(j.at(3));
  m.m4 = exact_double(j.at(4));
  if (j.size() == 6) {
    // A power of two above 1 (moments.hpp): written only when the sums needed it.
    m.scale = exact_double(j.at(5));
    int exponent = 0;
    if (!(std::isfinite(m.scale) && m.scale > 1 && std::frexp(m.scale, &exponent) == 0.5))
      throw std::invalid_argument("moments with a scale that is not a power of two above 1");
  }
  // What push() and merge() can leave: a whole count; nothing but zeros for no values or for the
  // spread of one; finite moments of finite values, and m2 a sum of squares.
  if (!(m.n >= 0 && m.n <= 0x1p53 && m.n == std::floor(m.n)))
    throw std::invalid_argument("moments of n = " + exact(m.n).get<std::string>() +
                                " values: not a count");
  if (m.n == 0 && (m.mean != 0 || m.m2 != 0 || m.m3 != 0 || m.m4 != 0))
    throw std::invalid_argument("moments of no values that are not zero");
  if (!std::isfinite(m.mean) || !std::isfinite(m.m2) || !std::isfinite(m.m3) ||
      !std::isfinite(m.m4))
    throw std::invalid_argument("moments of " + std::to_string(static_cast<std::uint64_t>(m.n)) +
                                " finite values that are not finite (NaN or infinity)");
  if (m.m2 < 0) throw std::invalid_argument("moments with a negative sum of squares (m2)");
  if (m.n == 1 && (m.m2 != 0 || m.m3 != 0 || m.m4 != 0))
    throw std::invalid_argument("moments of one value with a spread");
  return m;
}

std::int64_t exact_count(const json& j, const std::string& what) {
  if (j.is_number_unsigned() && j.get<std::uint64_t>() <= std::uint64_t{INT64_MAX})
    return j.get<std::int64_t>();
  if (j.is_number_integer() && !j.is_number_unsigned() && j.get<std::int64_t>() >= 0)
    return j.get<std::int64_t>();
  throw std::invalid_argument(what + " " + quote_input(j.dump(), 24) + " is not a count");
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
  if (hex.size() % 16 != 0)
    throw std::invalid_argument("a vector of " + std::to_string(hex.size()) +
                                " hex digits, not a multiple of 16 (8 bytes a value)");
  const auto digit = [](char c) -> unsigned {
    if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
    throw std::invalid_argument("a vector holds a character that is not a hex digit");
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

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string content_checksum(const json& doc) {
  if (doc.is_object() && doc.contains("checksum")) {  // the content is the rest
    json rest = doc;
    rest.erase("checksum");
    return content_checksum(rest);
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016" PRIx64, fnv1a64(doc.dump()));
  return buf;
}

}  // namespace attn
