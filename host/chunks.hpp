// chunks.hpp: the chunk driver. Every bulk experiment (one that cuts its work into many independent
// chunks: the sqrt(d_k) sampler, softmax saturation, the training sweep) hands its work to this
// driver as a ChunkJob: how many chunks, "compute chunks [first, first + count)" giving one
// serializable partial state per chunk, and "fold chunk i's state into the result". The driver
// owns the rest: which process computes which chunk (threads inside a backend call, MPI ranks,
// --shard I/N), progress, Ctrl-C, checkpoints (--checkpoint FILE) and partial-state files
// (demo merge).
//
// The merge order is fixed: a chunk's state is computed from the chunk alone, and states are
// folded into the result one by one in chunk order 0, 1, 2, ... (a fixed tree over chunk
// indices: each chunk's own fixed tree inside, then a left fold). No process count, thread
// count, shard count or interruption changes which states are merged in which order, so the
// result is bit-identical however the work was split.
//
// A table whose states cost more to write as text and read back than to compute (small chunks,
// each summarizing thousands of numbers) may keep them in its own form while they stay in the
// process that computed them (ChunkJob::native): they become text only where they leave it.
//
// Files: a --checkpoint and a --shard's part hold states, in the exact text of exact_state.hpp
// (included here: the tables write and read their states with it), and a checksum of their
// content (content_checksum); demo reads back only a regular file whose checksum matches, and
// checks every state read from one against what the chunk must hold (ChunkJob's check and load)
// before any is used. A file that fails is refused with one line naming it and what is wrong
// (std::invalid_argument: demo exits 2); so is a file of an older version, written without a
// checksum.
//
// Who computes what: chunks are cut into contiguous ranges of about equal work (ChunkJob::work),
// one per process (MPI rank or shard); rank 0 receives the other ranks' states (a few bytes to a
// few kilobytes per chunk, see README "Scaling"), folds them in order and alone prints, writes
// and shows progress.
#pragma once

#include <any>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/exact_state.hpp"
#include "host/json.hpp"
#include "host/options.hpp"

namespace attn {

using ChunkState = nlohmann::json;
// A chunk's state in an experiment's own form (any copyable object; ChunkJob::native).
using NativeState = std::any;

// The most chunks a job may have (2^28): the driver walks the chunk list a few times before any
// work (progress totals, the split between processes), which stays under about a second here.
// Chunks hold 2^22 normals or more, so this allows 10^15 normals and more per table.
inline constexpr std::uint64_t kMaxChunks = std::uint64_t{1} << 28;

// Chunks over ranges of items of several keys (a table's d_k values): key k's `count` items
// are cut into runs of `per` items, keys one after another. Computed, never stored: any request
// size costs memory per key only.
class KeyRanges {
 public:
  struct Range {
    std::size_t key;
    std::uint64_t first, count;  // items [first, first + count) of that key
  };
  void add(std::uint64_t count, std::uint64_t per);  // per >= 1
  std::uint64_t chunks() const { return starts_.empty() ? 0 : starts_.back(); }
  Range at(std::uint64_t chunk) const;  // chunk < chunks()

 private:
  std::vector<std::uint64_t> counts_, pers_;
  std::vector<std::uint64_t> starts_;  // starts_[k + 1]: chunks of keys 0 .. k
};

struct ChunkJob {
  std::string label;  // the table's name: progress label, part file name, checkpoint section
  std::string unit;   // what work() counts, for progress ("normals", "model-steps")
  std::uint64_t chunks = 0;
  // Chunks per compute() call: a backend's preference (a GPU wants many). It never changes
  // results: each chunk's state depends on the chunk alone.
  std::uint64_t batch = 1;
  // Whether calls are paced by time (about 0.1 s a call, growing from `least` chunks up to
  // `batch`, so that progress and Ctrl-C stay responsive where a call's time grows with its
  // chunks: the CPU), or every call takes `batch` chunks (a GPU backend whose call lasts as long
  // as one seed's training however many seeds fill it, and which asks for stops inside the call).
  bool paced = true;
  // The fewest chunks a paced call takes, and paced calls take a whole multiple of it (but a
  // last one of a process's range, or before a chunk a checkpoint holds, which takes what
  // remains): as many chunks as the backend computes in the time of one (on the CPU one lane
  // pack of seeds per thread, Backend::least_seeds_per_call). At most `batch` counts.
  std::uint64_t least = 1;
  std::function<double(std::uint64_t chunk)> work;  // units of work in chunk i (progress, split)
  // The states of chunks [first, first + count), in order.
  std::function<std::vector<ChunkState>(std::uint64_t first, std::uint64_t count)> compute;
  // Folds chunk i's state into the result; called for i = 0, 1, 2, ... in order.
  std::function<void(std::uint64_t chunk, const ChunkState& state)> fold;
  // For a state read from a file (a checkpoint, a part), before any is folded: throws
  // std::invalid_argument saying what is wrong when it cannot be chunk i's state (a count that is
  // negative or not the chunk's, a NaN where only finite values arise, a vector whose length is
  // not its count, ...).
  std::function<void(std::uint64_t chunk, const ChunkState& state)> check;
  // The result so far, after chunks [0, next) were folded, and back: for checkpoints. load
  // checks the state as check does (its counts must be those of chunks [0, next)) and throws
  // std::invalid_argument saying what is wrong (the run then stops, before any work).
  std::function<ChunkState()> save;
  std::function<void(const ChunkState& state, std::uint64_t next)> load;
  // Optional: the states in the experiment's own form while they stay in this process. With
  // native.compute set, the driver calls it instead of compute (the states of chunks [first,
  // first + count), in order), folds those states with native.fold, and turns one into its exact
  // text with native.text only where it leaves the process (an MPI message, a checkpoint, a
  // part); a state read from a file or received from another rank is text, and goes through
  // check and fold. native.fold(i, s) must fold what fold(i, native.text(s)) folds, bit for bit,
  // so that the result stays the same however the work is split.
  struct Native {
    std::function<std::vector<NativeState>(std::uint64_t first, std::uint64_t count)> compute;
    std::function<void(std::uint64_t chunk, const NativeState& state)> fold;
    std::function<ChunkState(const NativeState& state)> text;
  } native;
  // Optional: told of each chunk whose state MPI rank 0 receives from another rank (computed in
  // this run, not read from a checkpoint), so that a table can state what this run computed.
  std::function<void(std::uint64_t chunk)> received;
  // A second pass: a job whose chunks need the whole result of an earlier job of the same table
  // (handed to every rank with share_result). A --shard does not run it (its part holds the
  // first pass alone); demo merge runs it, after folding the parts, in its own process.
  bool second_pass = false;
};

// Runs the job as this process's part of the run (see the top of this file). A job of more
// than kMaxChunks chunks is refused first (std::invalid_argument: demo exits 2). Returns true when
// this process now holds the whole result and should make the table (a single process, MPI rank
// 0, demo merge), false when it only computed a part (a --shard, which writes
// OUT/LABEL.part.json; another MPI rank). Throws Interrupted on Ctrl-C/SIGTERM (after saving the
// checkpoint), std::runtime_error for a failed file.
bool run_chunks(const Options& o, const ChunkJob& job);

// The state on MPI rank 0, on every rank of the job (a collective call: every rank calls it, in
// the same order); the state itself in a job of one. For a second pass (ChunkJob::second_pass)
// whose chunks need what rank 0 folded.
ChunkState share_result(const ChunkState& on_rank_0);

// Whether this process makes the final tables and files (not a shard, not an MPI rank but 0).
bool reports_results(const Options& o);

// Before any work: checks --shard and --checkpoint: where the checkpoint and the parts go (a
// regular file or nothing, in a folder that takes a file now: probe_writable; std::runtime_error
// when not, as for every refused destination) and, when the checkpoint exists, what it holds
// (its checksum, its structure; one from another command is refused, naming the command that
// made it; std::invalid_argument).
void prepare_chunks(const Options& o);

// `demo merge DIR...`: reads DIR/*.part.json from every directory, checks each (a regular
// file, its checksum, a state for every chunk of its range) and that they are the parts
// 0..N-1 of one command (same command, same N, each part and chunk once, same version; a
// mismatch is refused naming the part), keeps their states for run_chunks and returns that
// command's words without --shard/--out/--checkpoint (to be parsed again with merge's own --out,
// --format, --force, --quiet). Throws std::invalid_argument.
std::vector<std::string> load_parts(const std::vector<std::string>& dirs);
// After load_parts: the parts' words, parsed (o; nullptr when they did not parse as a run), must
// make the command the parts' identity records; else the first part was edited after it was
// written (its checksum made again): std::invalid_argument naming it.
void check_merged_command(const Options* o);

}  // namespace attn
