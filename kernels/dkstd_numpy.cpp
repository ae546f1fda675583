// dkstd_numpy.cpp: see dkstd_numpy.hpp.
#include "dkstd_numpy.hpp"

#include "hd.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace attn::dkstd {
namespace {

using numpy_rng::Pcg64;

constexpr int kMaxHead = 64;
constexpr std::uint64_t kMinPieceWords = std::uint64_t{1} << 14;
// Rows per wave hold about this many normals of q (and as many of k): 2 x 64 MiB kept.
constexpr std::uint64_t kWaveNormals = std::uint64_t{1} << 23;

// The generator with its position in words: what standard_normal draws, counted.
struct Counted {
  Pcg64 g;
  std::uint64_t pos;
  std::uint64_t next_uint64() {
    ++pos;
    return g.next_uint64();
  }
  double next_double() {
    ++pos;
    return g.next_double();
  }
};

// Memory for decoded normals, reused from block to block. Backed by 2 MiB pages where the
// kernel offers them (first touches of fresh 4 KiB pages cost as much as decoding the normals).
class Buffer {
 public:
  double* reserve(std::size_t n) {
    if (n > capacity_) {
      constexpr std::size_t kHuge = std::size_t{1} << 21;
      const std::size_t bytes = (n * sizeof(double) + kHuge - 1) / kHuge * kHuge;
      void* p = std::aligned_alloc(kHuge, bytes);
      if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__)
      (void)madvise(p, bytes, MADV_HUGEPAGE);  // a hint: without it, 4 KiB pages
#endif
      p_.reset(static_cast<double*>(p));
      capacity_ = bytes / sizeof(double);
    }
    return p_.get();
  }

 private:
  struct Free {
    void operator()(double* p) const { std::free(p); }
  };
  std::unique_ptr<double, Free> p_;
  std::size_t capacity_ = 0;
};

// A run of decoded normals, in order, as spans of the buffers that hold them.
struct Span {
  const double* p;
  std::uint64_t first;  // index of p[0] in the run
  std::uint64_t n;
};
struct Normals {
  std::vector<Buffer> buffers;
  std::size_t used = 0;  // buffers in use by spans
  std::vector<Span> spans;
  void clear() {
    used = 0;
    spans.clear();
  }
  double* buffer(std::size_t n) {
    if (used == buffers.size()) buffers.emplace_back();
    return buffers[used++].reserve(n);
  }
};

struct Piece {
  std::uint64_t begin = 0,
                end = 0;   // words [begin, end) of the stream, relative to the run's start
  std::uint64_t n = 0;     // normals decoded that start before end
  std::uint64_t next = 0;  // where the first normal starting at or after end starts
  std::uint64_t head[kMaxHead];
};

int thread_count(const StreamSplit& s) { return s.threads > 0 ? s.threads : omp_get_max_threads(); }

// One piece's decode in progress: its generator at word pos, normals so far.
struct Lane {
  Pcg64 g;
  std::uint64_t pos, end, n;
  Piece* piece;
  int head;
  double* out;  // values, or null
};

// One normal of lane l. The ziggurat's first step is inlined here and the rare path gets a
// counted copy of the generator, so that the generator stays in registers (held in a struct
// whose address the rare path takes, its 128-bit state went through memory on every word:
// 4x slower).
ATTN_INLINE void step(Lane& l) {
  if (l.n < static_cast<std::uint64_t>(l.head)) l.piece->head[l.n] = l.pos;
  int idx;
  std::uint64_t rabs;
  double x;
  ++l.pos;
  if (!numpy_rng::ziggurat_first(l.g.next_uint64(), idx, rabs, x)) {
    Counted c{l.g, l.pos};
    x = numpy_rng::standard_normal_rare(c, idx, rabs, x);
    l.g = c.g;
    l.pos = c.pos;
  }
  if (l.out != nullptr) l.out[l.n] = x;
  ++l.n;
}

Lane lane_at(const Pcg64& g0, std::uint64_t pos, Piece& piece, int head, double* out) {
  Lane l{g0, pos, piece.end, 0, &piece, head, out};
  l.g.advance(pos);
  return l;
}

void finish(const Lane& l) {
  l.piece->n = l.n;
  l.piece->next = l.pos;
}

// Decodes lane l until a normal starts at or after its end.
void decode_lane(Lane l) {
  while (l.pos < l.end) step(l);
  finish(l);
}

// Four lanes in one loop: each PCG64 step waits on a 128-bit multiply, and four independent
// streams fill those waits (1.8x the rate of one).
void decode_lanes4(Lane a, Lane b, Lane c, Lane d) {
  while (a.pos < a.end && b.pos < b.end && c.pos < c.end && d.pos < d.end) {
    step(a);
    step(b);
    step(c);
    step(d);
  }
  decode_lane(a);
  decode_lane(b);
  decode_lane(c);
  decode_lane(d);
}

// The next `count` normals from g (standing at a normal's start); g then stands after them.
// keep: store the values in out (else only g moves). Rounds: the words [S, S + rest) hold at
// most `rest` normal starts (each normal takes at least one word), so each round decodes those
// words in parallel pieces and the next round goes on from the first start past them.
void decode(Pcg64& g, std::uint64_t count, const StreamSplit& split, bool keep, Normals* out) {
  const int threads = thread_count(split);
  const int head = std::clamp(split.head_starts, 1, kMaxHead);
  std::uint64_t done = 0;
  std::vector<Piece> pieces;
  while (done < count) {
    const std::uint64_t rest = count - done;
    const std::uint64_t words =
        split.piece_words > 0
            ? split.piece_words
            : std::max(kMinPieceWords,
                       (rest + 32 * threads - 1) / (32 * static_cast<std::uint64_t>(threads)));
    const std::uint64_t n_pieces = (rest + words - 1) / words;
    pieces.assign(n_pieces, Piece{});
    for (std::uint64_t i = 0; i < n_pieces; ++i) {
      pieces[i].begin = i * words;
      pieces[i].end = std::min(rest, (i + 1) * words);
    }
    // A piece's normals start at distinct words of its range: at most `words` of them.
    double* buf = keep ? out->buffer(rest) : nullptr;
    // Pieces four at a time (decode_lanes4); a short last group gets empty pieces.
    const std::uint64_t groups = (n_pieces + 3) / 4;
    Piece empty;
    empty.begin = empty.end = rest;
    pieces.resize(groups * 4, empty);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (groups > 1)
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(groups); ++i) {
      auto lane = [&](int j) {
        Piece& p = pieces[4 * i + j];
        return lane_at(g, p.begin, p, head, keep ? buf + p.begin : nullptr);
      };
      decode_lanes4(lane(0), lane(1), lane(2), lane(3));
    }
    // Resync: t is the true start of the next normal; piece i's normals from t on are true.
    std::uint64_t t = 0;
    for (Piece& p : pieces) {
      if (t >= p.end) continue;  // the previous piece's last normal covers this one
      std::uint64_t k = 0;
      const std::uint64_t recorded = std::min<std::uint64_t>(p.n, head);
      while (k < recorded && p.head[k] < t) ++k;
      if (k == recorded || p.head[k] != t) {  // no shared start seen: decode again from t
        decode_lane(lane_at(g, t, p, head, keep ? buf + p.begin : nullptr));
        k = 0;
      }
      if (keep && p.n > k) out->spans.push_back(Span{buf + p.begin + k, done, p.n - k});
      done += p.n - k;
      t = p.next;
    }
    g.advance(t);
  }
}

// Reads a run's normals in order from index i on, a contiguous stretch at a time.
class Reader {
 public:
  Reader(const Normals& v, std::uint64_t i) : v_(v) {
    auto it = std::upper_bound(v.spans.begin(), v.spans.end(), i,
                               [](std::uint64_t x, const Span& s) { return x < s.first; });
    span_ = static_cast<std::size_t>(it - v.spans.begin()) - 1;
    off_ = i - v.spans[span_].first;
  }
  // Up to `want` values from here; returns how many (at least 1 while the run lasts).
  std::uint64_t take(std::uint64_t want, const double*& p) {
    const Span& s = v_.spans[span_];
    const std::uint64_t got = std::min(want, s.n - off_);
    p = s.p + off_;
    off_ += got;
    if (off_ == s.n) {
      ++span_;
      off_ = 0;
    }
    return got;
  }

 private:
  const Normals& v_;
  std::size_t span_;
  std::uint64_t off_;
};

// Moments of rows [row0, row0 + rows): row r's dot is q[r] . k[r], summed from j = 0 in order
// (as the sequential loop sums it); q and k hold the wave's rows from row0 on.
Moments chunk_dots(const Normals& q, const Normals& k, std::uint64_t row0, std::uint64_t rows,
                   std::uint32_t d_k) {
  Reader rq(q, row0 * d_k), rk(k, row0 * d_k);
  Moments m;
  for (std::uint64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (std::uint64_t j = 0; j < d_k;) {
      const double *pq, *pk;
      const std::uint64_t nq = rq.take(d_k - j, pq);
      std::uint64_t n = 0;
      while (n < nq) {  // k's spans may end elsewhere than q's
        const std::uint64_t nk = rk.take(nq - n, pk);
        for (std::uint64_t t = 0; t < nk; ++t) dot += pq[n + t] * pk[t];
        n += nk;
      }
      j += nq;
    }
    m.push(dot);
  }
  return m;
}

}  // namespace

struct NumpyStream::Buffers {
  Normals q, k;
};
NumpyStream::NumpyStream(std::uint64_t seed, StreamSplit split)
    : gen_(seed), split_(split), bufs_(std::make_unique<Buffers>()) {}
NumpyStream::~NumpyStream() = default;

std::vector<double> parallel_normals(Pcg64& g, std::uint64_t count, const StreamSplit& split) {
  Normals v;
  decode(g, count, split, true, &v);
  std::vector<double> out(count);
  for (const Span& s : v.spans)
    std::copy(s.p, s.p + s.n, out.begin() + static_cast<std::ptrdiff_t>(s.first));
  return out;
}

Moments NumpyStream::next_block(std::uint64_t samples, std::uint32_t d_k, Monitor& monitor) {
  const std::uint64_t rows_per_chunk = std::max<std::uint64_t>(1, 65536 / d_k);
  const std::uint64_t wave = split_.wave_normals > 0 ? split_.wave_normals : kWaveNormals;
  const std::uint64_t wave_rows =
      std::max<std::uint64_t>(1, wave / (rows_per_chunk * d_k)) * rows_per_chunk;
  const int threads = thread_count(split_);

  Pcg64 gq = gen_, gk = gen_;
  Normals& q = bufs_->q;
  Normals& k = bufs_->k;
  q.clear();
  if (samples <= wave_rows) {  // q fits: decode it once and keep it; k starts where it ends
    decode(gk, samples * d_k, split_, true, &q);
  } else {  // locate k's start (q is decoded again, a wave at a time, below)
    for (std::uint64_t r = 0; r < samples; r += wave_rows) {
      monitor.checkpoint();
      decode(gk, std::min(wave_rows, samples - r) * d_k, split_, false, nullptr);
    }
  }

  Moments total;
  std::vector<Moments> parts;
  for (std::uint64_t r0 = 0; r0 < samples; r0 += wave_rows) {
    monitor.checkpoint();
    const std::uint64_t rows = std::min(wave_rows, samples - r0);
    if (samples > wave_rows) {
      q.clear();
      decode(gq, rows * d_k, split_, true, &q);
    }
    k.clear();
    decode(gk, rows * d_k, split_, true, &k);
    const std::uint64_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
    parts.assign(chunks, Moments{});
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (chunks > 1)
    for (std::int64_t c = 0; c < static_cast<std::int64_t>(chunks); ++c) {
      const std::uint64_t first = static_cast<std::uint64_t>(c) * rows_per_chunk;
      parts[c] = chunk_dots(q, k, first, std::min(rows_per_chunk, rows - first), d_k);
    }
    for (const Moments& m : parts) total = merge(total, m);
    monitor.advance(2.0 * static_cast<double>(rows * d_k));
  }
  gen_ = gk;
  return total;
}

}  // namespace attn::dkstd
