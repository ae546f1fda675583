// chunks.cpp: see chunks.hpp.
#include "host/chunks.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>
#include <tuple>

#include <sys/stat.h>

#include "host/cluster.hpp"
#include "host/format.hpp"
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

// What makes two runs "the same command": the program version, the experiments (under "tables":
// their tables' names) and the experiment flags given (not --threads, --device, --format, --out:
// they never change a number).
json identity(const Options& o) {
  json id = {{"version", kVersion},
             {"git_commit", kGitCommit},
             {"tables", o.experiments},
             {"given", o.given}};
  if (o.shards > 0) id["shard"] = std::to_string(o.shard) + "/" + std::to_string(o.shards);
  return id;
}

// How two identities differ, for a refusal: the first that does, as the user would put it
// ("--steps: 1e2 here, 100 in the file"); here and there name a's and b's side.
std::string identity_difference(const json& a, const json& b, const std::string& here,
                                const std::string& there) {
  const auto shown = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  const auto both = [&](const json& x, const json& y) {
    return shown(x) + " " + here + ", " + shown(y) + " " + there;
  };
  if (a.value("version", json()) != b.value("version", json()))
    return "another version (" + both(a.value("version", json()), b.value("version", json())) + ")";
  if (a.value("git_commit", json()) != b.value("git_commit", json()))
    return "another build (" + both(a.value("git_commit", json()), b.value("git_commit", json())) +
           ")";
  if (a.value("shard", json("none")) != b.value("shard", json("none")))
    return "another part (--shard " +
           both(a.value("shard", json("none")), b.value("shard", json("none"))) + ")";
  if (a.value("tables", json()) != b.value("tables", json()))
    return "other tables (" + both(a.value("tables", json()), b.value("tables", json())) + ")";
  const json ga = a.value("given", json::object()), gb = b.value("given", json::object());
  for (const auto& [flag, text] : ga.items())
    if (!gb.contains(flag))
      return flag + " " + shown(text) + " given " + here + " only";
    else if (gb.at(flag) != text)
      return flag + ": " + both(text, gb.at(flag)) + " (options are compared as written)";
  for (const auto& [flag, text] : gb.items())
    if (!ga.contains(flag)) return flag + " " + shown(text) + " given " + there + " only";
  return "another command";
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
  if (json_nesting(text, kMaxStateDepth).too_deep)
    throw std::invalid_argument(where + "JSON nested deeper than " +
                                std::to_string(kMaxStateDepth) + " levels: not demo's");
  try {
    return parse_json(text, path);
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
  const std::string actual = content_checksum(j, /*stoppable=*/true);
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

// --- --checkpoint FILE: one section per table ------------------------------------------------
struct Checkpoint {
  std::string path;
  json id;
  json sections = json::object();  // label -> {"next", "fold", "states": [[i, state], ...]}
  std::string command_line;
};

// Writes the checkpoint file, every table's section.
void write_checkpoint(const Checkpoint& c) {
  const json j = sealed({{"format", kCheckpointFormat},
                         {"identity", c.id},
                         {"command_line", c.command_line},
                         {"tables", c.sections}});
  write_file_now(c.path, j.dump());  // survives the interruption it is saved for
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
// each chunk's work decides), the same on every process. A process that owns no chunk (more
// processes than chunks) gets the empty range where its successors' chunks begin, so that rank
// 0 always waits for every chunk from its hi on.
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
    if (owner >= p && lo == job.chunks) lo = i;  // owning nothing: the empty range at i
    if (owner > p) {
      hi = i;
      break;
    }
    before += w;
  }
  if (lo == job.chunks) hi = lo;  // no chunk here or after: the empty range at the end
  return {lo, hi};
}

void states_from_json(const json& a, std::map<std::uint64_t, ChunkState>& states) {
  for (const auto& e : a) states[e.at(0).get<std::uint64_t>()] = e.at(1);
}

// A state as this process holds it: its exact text, or the experiment's own form (ChunkJob::native)
// while it stays in the process that computed it.
struct Held {
  ChunkState text;
  NativeState native;  // when it has a value, the state is this (text is unused)
};

// The states of chunks [first, first + count) as the job computes them.
std::vector<Held> compute_states(const ChunkJob& job, std::uint64_t first, std::uint64_t count) {
  std::vector<Held> held(count);
  if (job.native.compute) {
    std::vector<NativeState> states = job.native.compute(first, count);
    for (std::uint64_t k = 0; k < count; ++k) held[k].native = std::move(states.at(k));
  } else {
    std::vector<ChunkState> states = job.compute(first, count);
    for (std::uint64_t k = 0; k < count; ++k) held[k].text = std::move(states.at(k));
  }
  return held;
}

// A held state's exact text: what leaves the process.
ChunkState state_text(const ChunkJob& job, const Held& h) {
  return h.native.has_value() ? job.native.text(h.native) : h.text;
}

void fold_held(const ChunkJob& job, std::uint64_t i, const Held& h) {
  if (h.native.has_value())
    job.native.fold(i, h.native);
  else
    job.fold(i, h.text);
}

json states_json(const ChunkJob& job, const std::map<std::uint64_t, Held>& states) {
  json a = json::array();
  for (const auto& [i, s] : states) a.push_back(json::array({i, state_text(job, s)}));
  return a;
}

struct Part {
  std::string path;
  json j;
};

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
std::vector<std::string> check_parts(const std::vector<Part>& parts,
                                     std::map<std::string, PartStates>& states);

// What the chunk driver keeps in this process from one call to the next: the checkpoint
// (prepare_chunks reads it; each job saves its own section into it), the parts that demo merge
// read (load_parts; each job folds its table's), and how many jobs ran (each job's MPI messages
// carry a tag of their own). The public functions below reach the one Driver of the process and
// hand it, or the part of it they need, explicitly to the rest.
struct Driver {
  Checkpoint checkpoint;
  bool merging = false;                     // demo merge: states come from the parts
  std::map<std::string, PartStates> parts;  // table -> its parts' states
  std::string first_part;                   // demo merge: the part whose words it runs,
  json first_identity;                      // and that part's command (without its shard)
  int jobs = 0;                             // jobs run_chunks began
};

Driver& driver() {
  static Driver d;
  return d;
}

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
        " states for the " + human_count(hi - lo, "chunk", "chunks") + " of its range");
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

ChunkState share_result(const ChunkState& on_rank_0) {
  if (cluster::size() == 1) return on_rank_0;
  return json::parse(cluster::broadcast(cluster::is_root() ? on_rank_0.dump() : std::string()));
}

bool reports_results(const Options& o) { return o.shards == 0 && cluster::is_root(); }

void prepare_chunks(const Options& o) {
  if (o.shards > 0 && cluster::size() > 1)
    throw std::invalid_argument("--shard and MPI are two ways to split one run: use one");
  if (o.shards > 0 && o.out_dir.empty())
    throw std::invalid_argument("--shard " + std::to_string(o.shard) + "/" +
                                std::to_string(o.shards) +
                                " needs --out DIR for its partial-state file");
  // Destinations (a part, the checkpoint) that cannot be written are refused as every refused
  // destination is (std::runtime_error: demo exits 1); what an existing checkpoint holds is
  // input (std::invalid_argument: exit 2).
  if (o.shards > 0)
    for (const auto& t : o.experiments)
      refuse_existing(o.out_dir + "/" + t + ".part.json", o.force);
  if (o.checkpoint.empty() || !cluster::is_root()) return;
  Checkpoint& checkpoint = driver().checkpoint;
  checkpoint = Checkpoint{o.checkpoint, identity(o), json::object(), o.command_line};
  // Where it is saved: a regular file or nothing (never a FIFO, link, device or directory), in
  // a folder that takes a file now (not read-only, full or forbidden), before any work.
  const std::string where = "--checkpoint " + o.checkpoint + ": ";
  try {
    refuse_unusable_name("--checkpoint", o.checkpoint);
    refuse_existing(o.checkpoint, true);
    probe_writable("--checkpoint", o.checkpoint);
  } catch (const std::runtime_error& e) {
    const std::string why = e.what();
    if (why.rfind("--checkpoint", 0) == 0) throw;
    if (why.rfind(o.checkpoint, 0) == 0) throw std::runtime_error("--checkpoint " + why);
    throw std::runtime_error(where + why);
  }
  // A save a killed run left half-made (its temporary, its PID gone) goes, as --out's do.
  const std::filesystem::path at(o.checkpoint);
  note_removed_temporaries(remove_stale_temporaries(
      at.parent_path().empty() ? "." : at.parent_path().string(), at.filename().string()));
  struct stat st {};
  if (lstat(o.checkpoint.c_str(), &st) != 0) return;  // none yet: the first save makes it
  json j = read_json_file(o.checkpoint, "--checkpoint", /*follow_links=*/false);
  check_format_and_checksum(j, where, kCheckpointFormat, kOldCheckpointFormat, "checkpoint",
                            "remove it to start again");
  if (!j.contains("identity") || !j.contains("tables") || !j.at("tables").is_object())
    throw std::invalid_argument(where + "not an attnlab checkpoint");
  if (j.at("identity") != checkpoint.id)
    throw std::invalid_argument(
        "--checkpoint " + o.checkpoint + " was made by another command: " +
        identity_difference(checkpoint.id, j.at("identity"), "here", "in the file") + " (" +
        text_of(j, "command_line") + "); remove it or give another file");
  for (const auto& [label, section] : j.at("tables").items()) check_section(label, section, where);
  checkpoint.sections = std::move(j.at("tables"));
  spdlog::info("resuming from checkpoint {}", o.checkpoint);
}

namespace {
// The table a job's label belongs to, of `tables` (a JSON array of names): the table itself, or
// TABLE-K, one of the jobs of a table that runs several (a grid of configurations); "" for none.
std::string table_of_job(const json& tables, const std::string& label) {
  for (const auto& t : tables) {
    const std::string name = t.get<std::string>();
    if (label == name) return name;
    if (label.size() > name.size() + 1 && label.compare(0, name.size() + 1, name + "-") == 0 &&
        std::all_of(label.begin() + static_cast<std::ptrdiff_t>(name.size()) + 1, label.end(),
                    [](char c) { return c >= '0' && c <= '9'; }))
      return name;
  }
  return "";
}
}  // namespace

std::vector<std::string> load_parts(const std::vector<std::string>& dirs) {
  std::vector<Part> parts;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) throw std::invalid_argument(dir + ": no such folder");
    if (!std::filesystem::is_directory(dir, ec))
      throw std::invalid_argument(dir +
                                  ": not a folder (merge takes the folders "
                                  "the shards wrote their parts into)");
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name.size() > 10 && name.compare(name.size() - 10, 10, ".part.json") == 0)
        files.push_back(e.path().string());
    }
    if (files.empty())
      throw std::invalid_argument(dir + " holds no *.part.json (not the --out of a --shard run)");
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      json j = read_json_file(f, "part", /*follow_links=*/true);
      const std::string where = f + ": ";
      check_format_and_checksum(j, where, kPartFormat, kOldPartFormat, "part file",
                                "run its shard again");
      check_part_fields(j, where);
      parts.push_back({f, std::move(j)});
    }
  }
  try {
    std::map<std::string, PartStates> states;
    std::vector<std::string> words = check_parts(parts, states);
    Driver& d = driver();
    d.parts = std::move(states);
    d.merging = true;
    d.first_part = parts.front().path;
    d.first_identity = parts.front().j.at("identity");
    d.first_identity.erase("shard");
    return words;
  } catch (const json::exception& e) {
    throw std::invalid_argument("a part file is damaged (" + json_error_text(e) + ")");
  }
}

void check_merged_command(const Options* o) {
  const Driver& d = driver();
  const std::string redo = "; the part was edited: run its shard again";
  if (o == nullptr)
    throw std::invalid_argument(d.first_part + ": its words (argv) are not a run of demo" + redo);
  // The build is the parts' (checked among them), not necessarily this one's.
  json mine = identity(*o), theirs = d.first_identity;
  for (const char* build : {"version", "git_commit"}) mine.erase(build), theirs.erase(build);
  if (mine != theirs)
    throw std::invalid_argument(
        d.first_part + ": its words (argv) are not the command its identity records (" +
        identity_difference(theirs, mine, "in its identity", "in its words") + ")" + redo);
}

namespace {
// Checks that the parts are those of one command, each once, and gathers their states by
// table into `states`; returns the command's words for merge (see load_parts).
std::vector<std::string> check_parts(const std::vector<Part>& parts,
                                     std::map<std::string, PartStates>& states) {
  const json& first = parts.front().j;
  const auto shards = first.at("shards").get<std::uint64_t>();
  std::map<std::string, std::map<std::uint64_t, std::string>> seen;  // table -> shard -> path
  for (const Part& p : parts) {
    const json& j = p.j;
    json id = j.at("identity"), id0 = first.at("identity");
    if (text_of(id, "version") != text_of(id0, "version") ||
        text_of(id, "git_commit") != text_of(id0, "git_commit"))
      throw std::invalid_argument(p.path + " was made by another version (" +
                                  text_of(id, "version") + ", " + text_of(id, "git_commit") +
                                  ") than " + parts.front().path);
    id.erase("shard");
    id0.erase("shard");
    if (id != id0)
      throw std::invalid_argument(
          p.path + " is part of another command than " + parts.front().path + ": " +
          identity_difference(id0, id, "in " + parts.front().path, "in " + p.path) + " (" +
          text_of(j, "command_line") + ")");
    if (j.at("shards").get<std::uint64_t>() != shards)
      throw std::invalid_argument(p.path + " is one of " +
                                  std::to_string(j.at("shards").get<std::uint64_t>()) + " parts, " +
                                  parts.front().path + " one of " + std::to_string(shards));
    const std::string table = j.at("table");
    if (table_of_job(id0.at("tables"), table).empty())
      throw std::invalid_argument(p.path + " holds table " + quote_input(table) +
                                  ", which its command does not make");
    const auto shard = j.at("shard").get<std::uint64_t>();
    auto& mine = seen[table];
    if (mine.count(shard))
      throw std::invalid_argument(p.path + " is part " + std::to_string(shard) + " of " +
                                  quote_input(table) + " again (also " + mine[shard] + ")");
    mine[shard] = p.path;
  }
  // Every table has a job, and every job all its parts.
  const auto& tables = first.at("identity").at("tables");
  for (const auto& table : tables)
    if (std::none_of(seen.begin(), seen.end(), [&](const auto& job) {
          return table_of_job(tables, job.first) == table.get<std::string>();
        }))
      seen[table.get<std::string>()];  // none: reported missing below
  for (const auto& [job, mine] : seen) {
    const std::string name = quote_input(job);
    for (std::uint64_t s = 0; s < shards; ++s)
      if (!mine.count(s))
        throw std::invalid_argument("part " + std::to_string(s) + " of " + std::to_string(shards) +
                                    " of " + name + " is missing (" + name +
                                    ".part.json with shard " + std::to_string(s) + ")");
  }
  // A table's parts: one number of chunks, ranges that do not overlap.
  for (const Part& p : parts) {
    PartStates& t = states[p.j.at("table").get<std::string>()];
    const auto chunks = p.j.at("chunks").get<std::uint64_t>();
    const auto lo = p.j.at("range").at(0).get<std::uint64_t>();
    const auto hi = p.j.at("range").at(1).get<std::uint64_t>();
    if (t.first.empty()) {
      t.first = p.path;
      t.chunks = chunks;
    } else if (t.chunks != chunks) {
      throw std::invalid_argument(p.path + " cuts its table into " +
                                  human_count(chunks, "chunk", "chunks") + ", " + t.first +
                                  " into " + std::to_string(t.chunks));
    }
    if (lo == hi) continue;  // more parts than chunks: this one holds none
    const auto after = t.states.lower_bound(lo);
    if (after != t.states.end() && after->first < hi)
      throw std::invalid_argument(p.path + " holds chunk " + std::to_string(after->first) +
                                  ", which " + t.file(after->first) + " holds too");
    states_from_json(p.j.at("states"), t.states);
    t.file_of[lo] = p.path;
  }
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

// --- one job: run_chunks and its steps ---------------------------------------------------------

// demo merge: folds the table's states from the parts, every one checked before any is folded.
void fold_parts(std::map<std::string, PartStates>& tables, const ChunkJob& job) {
  PartStates& parts = tables[job.label];
  if (parts.first.empty())
    throw std::invalid_argument("no part holds " + quote_input(job.label) +
                                " (its .part.json files are missing)");
  if (parts.chunks != job.chunks)
    throw std::invalid_argument(parts.first + ": " + job.label + " has " +
                                human_count(job.chunks, "chunk", "chunks") + ", the parts " +
                                std::to_string(parts.chunks));
  for (std::uint64_t i = 0; i < job.chunks; ++i) {
    stop_point();  // a chunk's check may make its summaries again from its results
    const auto it = parts.states.find(i);
    if (it == parts.states.end())
      throw std::invalid_argument("the parts hold no state for chunk " + std::to_string(i) +
                                  " of " + job.label);
    checked_state(parts.file(i) + ": " + job.label + ": chunk " + std::to_string(i) + "'s state: ",
                  [&] { job.check(i, it->second); });
  }
  for (std::uint64_t i = 0; i < job.chunks; ++i) job.fold(i, parts.states.at(i));
  tables.erase(job.label);
}

// One job's run in this process: who it is, which chunks it computes, what is folded and what
// is held, where it stands with the other ranks and its checkpoint. run_chunks makes one; the
// steps below take it explicitly.
struct JobRun {
  JobRun(const Options& options, const ChunkJob& chunk_job, int message_tag, Checkpoint& c)
      : o(options),
        job(chunk_job),
        tag(message_tag),
        mpi(cluster::size() > 1),
        root(cluster::is_root()),
        shard(o.shards > 0),
        fold_here(!shard && root),
        checkpoint(!o.checkpoint.empty() && (root || shard) ? &c : nullptr) {}

  const Options& o;
  const ChunkJob& job;
  const int tag;  // this job's MPI messages
  const bool mpi, root, shard;
  const bool fold_here;          // this process folds the states (one process, or MPI rank 0)
  Checkpoint* checkpoint;        // where this process saves the job's section; null: it saves none
  std::uint64_t lo = 0, hi = 0;  // the chunks this process computes
  std::uint64_t next = 0;        // chunks [0, next) are folded
  std::map<std::uint64_t, Held> held;        // states computed, not yet folded
  std::vector<std::uint64_t> done;           // chunks held when the job began, on every rank
  double work = 0;                           // the work this process shows progress for
  std::uint64_t received = 0, expected = 0;  // on MPI rank 0: other ranks' states
  std::optional<Progress> progress;          // from the plan on
  Clock::time_point last_save{};
  bool save_failed = false;  // a save while the run went on failed (warned of once)
  bool changed = false;      // a state arrived since the job began: the checkpoint has news to save
};

bool is_done(const JobRun& run, std::uint64_t i) {
  return i < run.next || std::binary_search(run.done.begin(), run.done.end(), i);
}

// The job's section of the checkpoint, read back: its states checked, its result so far loaded.
// Its structure was checked when the file was read (check_section); here what the table holds.
void resume(JobRun& run, const json& s) {
  const ChunkJob& job = run.job;
  const std::string where = "--checkpoint " + run.o.checkpoint + ": " + job.label + ": ";
  if (s.at("chunks").get<std::uint64_t>() != job.chunks)
    throw std::invalid_argument(where + "this request has " + std::to_string(job.chunks) +
                                " chunks, the checkpoint " +
                                std::to_string(s.at("chunks").get<std::uint64_t>()));
  const auto folded = s.at("next").get<std::uint64_t>();
  if (folded > 0 && !run.fold_here)
    throw std::invalid_argument(where + "a part's checkpoint with " + std::to_string(folded) +
                                " chunks folded (a part folds none)");
  for (const auto& e : s.at("states")) {
    stop_point();
    const auto i = e.at(0).get<std::uint64_t>();
    checked_state(where + "chunk " + std::to_string(i) + "'s state: ",
                  [&] { job.check(i, e.at(1)); });
  }
  if (folded > 0)
    checked_state(where + "the result of chunks 0.." + std::to_string(folded - 1) + ": ",
                  [&] { job.load(s.at("fold"), folded); });
  run.next = folded;
  std::map<std::uint64_t, ChunkState> states;
  states_from_json(s.at("states"), states);
  for (auto& [i, text] : states) run.held[i].text = std::move(text);
}

// Before any work: what is done already (the checkpoint's, made known to every rank), which
// chunks this process computes, the work it shows progress for, and (MPI rank 0) how many
// states the other ranks will send.
void plan(JobRun& run) {
  const ChunkJob& job = run.job;
  if (run.checkpoint && run.checkpoint->sections.contains(job.label))
    resume(run, run.checkpoint->sections.at(job.label));
  if (run.mpi) {
    json d = {{"next", run.next}, {"held", json::array()}};
    for (const auto& [i, s] : run.held) d["held"].push_back(i);
    d = json::parse(cluster::broadcast(d.dump()));
    run.next = d["next"];
    run.done = d["held"].get<std::vector<std::uint64_t>>();
  } else {
    for (const auto& [i, s] : run.held) run.done.push_back(i);
  }
  const std::uint64_t processes =
      run.shard ? run.o.shards : static_cast<std::uint64_t>(cluster::size());
  const std::uint64_t me = run.shard ? run.o.shard : static_cast<std::uint64_t>(cluster::rank());
  std::tie(run.lo, run.hi) = owned_range(job, me, processes);
  for (std::uint64_t i = run.shard ? run.lo : 0; i < (run.shard ? run.hi : job.chunks); ++i)
    if (!is_done(run, i)) run.work += job.work(i);
  if (run.mpi && run.root)
    for (std::uint64_t i = run.hi; i < job.chunks; ++i) run.expected += is_done(run, i) ? 0 : 1;
}

// Saves the job's section (what is folded, what is held) and writes the checkpoint file; nothing
// without a checkpoint here.
void save_checkpoint(JobRun& run) {
  if (!run.checkpoint) return;
  const ChunkJob& job = run.job;
  run.checkpoint->sections[job.label] = {
      {"chunks", job.chunks},
      {"next", run.next},
      {"fold", run.next > 0 && run.fold_here ? job.save() : json()},
      {"states", states_json(job, run.held)}};
  write_checkpoint(*run.checkpoint);
  run.last_save = Clock::now();
}

// A save while the run goes on (every --checkpoint-every seconds, and at its end): a failure (a
// disk that filled after the check before the work) is warned of once and the run goes on to its
// results, which are what it is for; the checkpoint only lets a stopped run continue.
void save_checkpoint_or_warn(JobRun& run) {
  try {
    save_checkpoint(run);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    run.last_save = Clock::now();
    if (!run.save_failed)
      spdlog::warn(
          "warning: checkpoint not saved ({}); the run goes on, but a stop now could "
          "not be continued from it",
          e.what());
    run.save_failed = true;
  }
}

// Folds the held states that now follow the folded ones without a gap, in chunk order.
void fold_ready(JobRun& run) {
  for (auto it = run.held.find(run.next); it != run.held.end(); it = run.held.find(run.next)) {
    fold_held(run.job, run.next, it->second);
    run.held.erase(it);
    ++run.next;
  }
}

// A state arrives (computed here or received): it counts for progress (unless counted already),
// is held and, where this process folds, folded as soon as it can be; the checkpoint is saved
// when it is due.
void deliver(JobRun& run, std::uint64_t i, Held s, bool counted = false) {
  run.changed = true;
  if (!counted) run.progress->advance(run.job.work(i));
  run.held.emplace(i, std::move(s));
  if (run.fold_here) fold_ready(run);
  if (run.checkpoint && std::chrono::duration<double>(Clock::now() - run.last_save).count() >=
                            run.o.checkpoint_seconds)
    save_checkpoint_or_warn(run);
}

// MPI rank 0: delivers the states the other ranks have sent so far.
void receive(JobRun& run) {
  int from = 0;
  std::string bytes;
  while (cluster::poll(run.tag, from, bytes)) {
    const json m = json::parse(bytes);
    for (const auto& e : m) {
      const auto i = e.at(0).get<std::uint64_t>();
      deliver(run, i, Held{e.at(1), {}});
      ++run.received;
      if (run.job.received) run.job.received(i);
    }
  }
}

// Computes one batch from chunk `first` (not done): as many following chunks not done as the
// pacer asks for, in one compute() call; their states go to rank 0 (another MPI rank) or are
// delivered here. Rank 0 then takes what the other ranks sent. Returns the chunk after it.
std::uint64_t compute_batch(JobRun& run, ChunkPacer& pacer, std::uint64_t first) {
  const std::uint64_t want = pacer.next(run.hi - first);
  std::uint64_t count = 1;
  while (count < want && first + count < run.hi && !is_done(run, first + count)) ++count;
  run.progress->stop_point();
  std::vector<Held> states = compute_states(run.job, first, count);
  pacer.done();
  if (run.mpi && !run.root) {
    json m = json::array();
    for (std::uint64_t k = 0; k < count; ++k)
      m.push_back(json::array({first + k, state_text(run.job, states[k])}));
    cluster::send(0, run.tag, m.dump());
  } else {
    // The call's work counts as one advance of progress (the stop audit measures the work
    // between the checks of one call).
    double work = 0;
    for (std::uint64_t k = 0; k < count; ++k) work += run.job.work(first + k);
    run.progress->advance(work);
    for (std::uint64_t k = 0; k < count; ++k) deliver(run, first + k, std::move(states[k]), true);
  }
  if (run.mpi && run.root) receive(run);
  return first + count;
}

// Computes this process's chunks that are not done, batch by batch; then, on MPI, sends what
// is still queued (ranks but 0) or waits for every other rank's states (rank 0). Chunks per
// compute() call: up to the backend's batch, paced to about 0.1 s a call so that progress and
// Ctrl-C stay responsive, in multiples of the job's least (the states, and so the result, do
// not depend on it). The debug log gets the calls' sizes.
void compute_chunks(JobRun& run) {
  const std::uint64_t batch = std::max<std::uint64_t>(1, run.job.batch);
  const std::uint64_t least = std::clamp<std::uint64_t>(run.job.least, 1, batch);
  const std::uint64_t first = run.job.paced ? least : batch;
  ChunkPacer pacer(first, first, batch, 0.1, run.job.paced ? least : 1);
  std::uint64_t calls = 0, fewest = ~std::uint64_t{0}, most = 0;
  for (std::uint64_t i = run.lo; i < run.hi;) {
    if (is_done(run, i)) {
      ++i;
      continue;
    }
    const std::uint64_t next = compute_batch(run, pacer, i);
    ++calls;
    fewest = std::min(fewest, next - i);
    most = std::max(most, next - i);
    i = next;
  }
  if (calls > 0)
    spdlog::debug("{}: {} calls of {} to {} chunks (at least {}, at most {} a call)", run.job.label,
                  calls, fewest, most, least, batch);
  if (run.mpi && !run.root) cluster::flush(*run.progress);
  while (run.mpi && run.root && run.received < run.expected) {
    run.progress->stop_point();
    receive(run);
    if (run.received < run.expected) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// A --shard's result: OUT/LABEL.part.json with the states of its range, sealed.
void write_part(const JobRun& run) {
  const Options& o = run.o;
  const json part = sealed({{"format", kPartFormat},
                            {"identity", identity(o)},
                            {"table", run.job.label},
                            {"shard", o.shard},
                            {"shards", o.shards},
                            {"chunks", run.job.chunks},
                            {"range", {run.lo, run.hi}},
                            {"command_line", o.command_line},
                            {"argv", o.argv},
                            {"version", kVersion},
                            {"git_commit", kGitCommit},
                            {"start_utc", utc_now_iso8601()},
                            {"states", states_json(run.job, run.held)}});
  const std::string path = o.out_dir + "/" + run.job.label + ".part.json";
  write_file_atomic(path, part.dump(), o.force);
  spdlog::info("wrote part {} of {} ({} of {}) to {}", o.shard, o.shards,
               human_count(run.hi - run.lo, "chunk", "chunks"), run.job.chunks, path);
}

}  // namespace

bool run_chunks(const Options& o, const ChunkJob& job) {
  if (job.chunks > kMaxChunks)
    throw std::invalid_argument(job.label + ": this request cuts into " +
                                std::to_string(job.chunks) +
                                " chunks of work, more than the 2^28 (268435456) the chunk driver "
                                "takes; ask for fewer samples or rows");
  Driver& d = driver();
  // Every rank runs the same jobs in the same order: the job's number tags its messages.
  const int tag = 100 + (d.jobs++ % 30000);
  if (job.second_pass && o.shards > 0) return false;  // demo merge runs it
  if (d.merging && !job.second_pass) {
    fold_parts(d.parts, job);
    return true;
  }
  JobRun run(o, job, tag, d.checkpoint);
  plan(run);
  run.progress.emplace(job.label, run.work, job.unit, o.quiet || !run.root);
  run.last_save = Clock::now();
  try {
    compute_chunks(run);
  } catch (const Interrupted&) {
    if (run.checkpoint && (run.changed || !std::filesystem::exists(o.checkpoint))) {
      save_checkpoint(run);
      spdlog::warn("checkpoint saved to {}: run the same command again to continue", o.checkpoint);
    }
    throw;
  }
  run.progress->finish();
  // A job resumed whole from the checkpoint leaves the file as it was read.
  if (run.changed || (run.checkpoint && !std::filesystem::exists(o.checkpoint)))
    save_checkpoint_or_warn(run);
  if (run.shard) {
    write_part(run);
    return false;
  }
  if (run.root && run.next != job.chunks)
    throw std::logic_error(job.label + ": folded " + std::to_string(run.next) + " of " +
                           human_count(job.chunks, "chunk", "chunks"));
  return run.root;
}

}  // namespace attn
