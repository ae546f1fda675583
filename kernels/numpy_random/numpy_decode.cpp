// numpy_decode.cpp: see numpy_decode.hpp.
#include "kernels/numpy_random/numpy_decode.hpp"

#include <omp.h>

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_clones.hpp"
#include "cpu_threads.hpp"
#include "kernels/numpy_random/numpy_lane.hpp"
#include "kernels/numpy_random/numpy_simd.hpp"

namespace attn::dk_std::stream {
namespace {

constexpr std::uint64_t kMinPieceWords = std::uint64_t{1} << 12;

int thread_count(const StreamSplit& s) { return s.threads > 0 ? s.threads : omp_get_max_threads(); }

// A decoded piece of the words [begin, end) that cannot be true: another range, more normals
// than words, a next start inside the range. A device's decoder returns one when its results
// were read before they were written (a missing wait) or are corrupt; joined, its counts would
// run the job past its end, so it is refused.
void check_piece(const Piece& p, std::uint64_t begin, std::uint64_t end) {
  if (p.begin == begin && p.end == end && p.n <= end - begin && p.next >= end) return;
  throw std::runtime_error("numpy stream: the decoder returned an impossible piece for words [" +
                           std::to_string(begin) + ", " + std::to_string(end) + ") (range [" +
                           std::to_string(p.begin) + ", " + std::to_string(p.end) + "), " +
                           std::to_string(p.n) + " normals, next at " + std::to_string(p.next) +
                           "): its results were not waited for, or are corrupt");
}

// items 0 .. n-1 over the threads, one at a time as threads come free.
template <class F>
void parallel_items(int threads, std::size_t n, bool parallel, F&& f) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (parallel && n > 1)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    bind_this_thread();
    f(static_cast<std::size_t>(i));
  }
}

}  // namespace

// Decodes the jobs, their pieces in one parallel loop per round. Rounds: the words
// [S, S + rest) hold at most `rest` normal starts (each normal takes at least one word), so each
// round decodes those words of every unfinished job in pieces, and the next round goes on from
// the first start past them (about 1.5% of words are rejections: rounds after the first are
// small, and run on one thread below kSerialWords); a job's last kFinishNormals or fewer are
// decoded one at a time, counted, instead of in further rounds.
void decode(std::initializer_list<Job> jobs_in, const StreamSplit& split, const SideWork& side,
            HostArray<Piece>* pieces_store) {
  constexpr std::uint64_t kSerialWords = 2 * kMinPieceWords;
  constexpr std::uint64_t kFinishNormals = 256;
  const int threads = thread_count(split);
  const int head = std::clamp(split.head_starts, 1, kMaxHead);
  const CpuLevel level = cpu_level();
  struct Todo {
    Job job;
    std::uint64_t done = 0;
    std::size_t first = 0, n = 0;       // its pieces this round
    std::uint64_t rest = 0, words = 0;  // this round's words and words per piece
    double* buf = nullptr;
  };
  std::vector<Todo> todo;
  for (const Job& j : jobs_in) todo.push_back(Todo{j});
  HostArray<Piece> own_pieces;
  HostArray<Piece>& store = pieces_store != nullptr ? *pieces_store : own_pieces;
  Piece* pieces = nullptr;
  std::vector<std::size_t> owner;  // the job of each piece
  std::size_t side_items = side.count;
  for (;;) {
    owner.clear();
    std::uint64_t round_words = 0;
    std::vector<std::uint64_t> job_words(todo.size(), 0);  // words per piece, per job
    std::size_t n_pieces = 0;
    for (std::size_t j = 0; j < todo.size(); ++j) {
      const Todo& t = todo[j];
      if (t.done == t.job.count) continue;
      const std::uint64_t rest = t.job.count - t.done;
      job_words[j] = split.piece_words > 0
                         ? split.piece_words
                         : std::max(kMinPieceWords, (rest + 8 * threads - 1) /
                                                        (8 * static_cast<std::uint64_t>(threads)));
      n_pieces += static_cast<std::size_t>((rest + job_words[j] - 1) / job_words[j]);
    }
    // Room for the baseline loop's groups of four (a short last group padded with empty pieces).
    pieces = store.reserve((n_pieces + 3) / 4 * 4, split.host);
    n_pieces = 0;
    for (std::size_t j = 0; j < todo.size(); ++j) {
      Todo& t = todo[j];
      t.first = n_pieces;
      t.n = 0;
      if (t.done == t.job.count) continue;
      const std::uint64_t rest = t.job.count - t.done;
      const std::uint64_t words = job_words[j];
      t.rest = rest;
      t.words = words;
      for (std::uint64_t b = 0; b < rest; b += words) {
        Piece& p = *::new (static_cast<void*>(pieces + n_pieces++)) Piece;
        p.begin = b;
        p.end = std::min(rest, b + words);
        owner.push_back(j);
      }
      t.n = n_pieces - t.first;
      // A piece's normals start at distinct words of its range: at most `words` of them.
      t.buf = t.job.out != nullptr ? t.job.out->buffer(rest, split.host) : nullptr;
      round_words += rest;
    }
    if (n_pieces == 0 && side_items == 0) return;
    auto lane = [&](std::size_t i) {
      Piece& p = pieces[i];
      const Todo& t = todo[owner[i]];
      return lane_at(*t.job.g, p.begin, p, head, t.buf != nullptr ? t.buf + p.begin : nullptr);
    };
    const bool parallel = side_items > 0 || round_words >= kSerialWords;
    if (split.decoder) {
      // An asynchronous decoder's pieces decode while this CPU's threads run the side work; the
      // round waits for them before it reads them. Unwinding waits too (the device still
      // writes to the pieces and values), and leaves the side work's error to propagate.
      struct Waiter {
        const DecodeWait* wait;
        bool pending = true;
        ~Waiter() {
          if (!pending || !*wait) return;
          try {
            (*wait)();
          } catch (...) {  // the error that unwinds goes on; this one is its consequence
          }
        }
      } waiter{&split.wait};
      for (const Todo& t : todo)
        if (t.n > 0) split.decoder(*t.job.g, pieces + t.first, t.n, head, t.buf);
      parallel_items(threads, side_items, true, side.run);
      waiter.pending = false;
      if (split.wait) split.wait();
    } else {
      if (level != CpuLevel::baseline) {  // a piece at a time, eight words at once
        parallel_items(threads, side_items + n_pieces, parallel, [&](std::size_t i) {
          if (i < side_items)
            side.run(i);
          else
            decode_lane_simd(lane(i - side_items));
        });
      } else {  // four pieces at a time (decode_lanes4); a short last group gets empty pieces
        const std::size_t groups = (n_pieces + 3) / 4;
        for (std::size_t i = n_pieces; i < groups * 4; ++i)
          ::new (static_cast<void*>(pieces + i)) Piece{};  // begin = end = 0: nothing to decode
        owner.resize(groups * 4, 0);
        parallel_items(threads, side_items + groups, parallel, [&](std::size_t i) {
          if (i < side_items) {
            side.run(i);
          } else {
            const std::size_t g = 4 * (i - side_items);
            decode_lanes4(lane(g), lane(g + 1), lane(g + 2), lane(g + 3));
          }
        });
      }
    }
    side_items = 0;
    // Resync each job: t is the true start of its next normal; piece i's normals from t on are
    // true.
    for (Todo& job : todo) {
      if (job.n == 0) continue;
      std::uint64_t t = 0;
      for (std::size_t i = job.first; i < job.first + job.n; ++i) {
        Piece& p = pieces[i];
        const std::uint64_t begin = (i - job.first) * job.words;
        check_piece(p, begin, std::min(job.rest, begin + job.words));
        if (t >= p.end) continue;  // the previous piece's last normal covers this one
        std::uint64_t k = 0;
        const std::uint64_t recorded = std::min<std::uint64_t>(p.n, head);
        while (k < recorded && p.head[k] < t) ++k;
        if (k == recorded || p.head[k] != t) {  // no shared start seen: decode again from t
          decode_lane(
              lane_at(*job.job.g, t, p, head, job.buf != nullptr ? job.buf + p.begin : nullptr));
          k = 0;
        }
        if (job.buf != nullptr && p.n > k)
          job.job.out->spans.push_back(Span{job.buf + p.begin + k, job.done, p.n - k});
        job.done += p.n - k;
        t = p.next;
      }
      job.job.g->advance(t);
      // The last few normals one at a time, counted: a round for them (their words, then the
      // few that rejections pushed out) cost more than they do.
      const std::uint64_t left = job.job.count - job.done;
      if (left > 0 && left <= kFinishNormals) {
        double* out = job.job.out != nullptr ? job.job.out->buffer(left, split.host) : nullptr;
        for (std::uint64_t i = 0; i < left; ++i) {
          const double x = numpy_rng::standard_normal(*job.job.g);
          if (out != nullptr) out[i] = x;
        }
        if (out != nullptr) job.job.out->spans.push_back(Span{out, job.done, left});
        job.done = job.job.count;
      }
    }
  }
}

}  // namespace attn::dk_std::stream
