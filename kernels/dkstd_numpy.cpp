// dkstd_numpy.cpp: see dkstd_numpy.hpp.
#include "dkstd_numpy.hpp"

#include "cpu_clones.hpp"
#include "hd.hpp"

#include <omp.h>
#if ATTN_HAVE_CPU_LEVELS
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>

namespace attn::dkstd {
namespace {

using numpy_rng::Pcg64;

constexpr std::uint64_t kMinPieceWords = std::uint64_t{1} << 14;
// Waves of rows hold about this many normals of q, and of k: 2 MiB each, reused, so that they
// stay in cache and the process touches little fresh memory. q is kept whole only when it fits
// in one wave; a larger q is located (its words counted, values not kept) and decoded again a
// wave at a time beside k. Measured on the project's 2-core machine (a VM): decoding a normal
// costs about 2 ns on one core, while the first touch of fresh memory costs 4 ns per normal
// with 4 KiB pages (about 2 GB/s) and, with transparent huge pages, sometimes 100 ms of
// compaction; re-decoding is the cheaper and the steadier way.
constexpr std::uint64_t kWaveNormals = std::uint64_t{1} << 18;
constexpr std::uint64_t kKWaveNormals = std::uint64_t{1} << 18;

using Counted = CountedPcg64;

// Memory for decoded normals, reused from wave to wave and block to block.
class Buffer {
 public:
  double* reserve(std::size_t n) {
    if (n > capacity_) {
      constexpr std::size_t kAlign = 64;
      const std::size_t bytes = (n * sizeof(double) + kAlign - 1) / kAlign * kAlign;
      void* p = std::aligned_alloc(kAlign, bytes);
      if (p == nullptr) throw std::bad_alloc();
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

int thread_count(const StreamSplit& s) { return s.threads > 0 ? s.threads : omp_get_max_threads(); }

// One piece's decode in progress: its generator at word pos, normals so far.
struct Lane {
  Pcg64 g;
  std::uint64_t pos, end, n;
  Piece* piece;
  int head;
  double* out;  // values, or null
};

// One normal of lane l (numpy_pieces.hpp).
ATTN_INLINE void step(Lane& l) { piece_step(l.g, l.pos, l.n, *l.piece, l.head, l.out); }

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

#if ATTN_HAVE_CPU_LEVELS
// ---- x86-64-v4: eight consecutive words at once ---------------------------------------------
// A vector holds the generator's states after words pos .. pos+7 (lane j's XSL-RR output is
// word pos+j); one step moves every lane 8 words on, s -> A8 s + C8 (the 8-step LCG, built by
// composing the one-step map), so the eight 128-bit multiplies are independent. Each lane takes
// the ziggurat's first step on its word, with the tables read by gathers. When all eight are
// accepted (about 89% of vectors: 1.5% of words are rejected) they are eight consecutive
// normals. Otherwise the lanes are read in order: a normal is a function of the word it starts
// at, so after a rejection the lanes past the words it took are still the right candidates.
// The wedge takes its uniform from the next lane's word; the tail, and a wedge in lane 7, run
// the scalar rare path from that lane's state, and the vector is rebuilt where it stopped if it
// went past the vector. Bits: the same operations as ziggurat_first and standard_normal_rare
// (int64 -> double is exact below 2^52, the sign is the sign bit), tested at every split.
using numpy_rng::u128;
// GCC 12 warns that the intrinsics' internal __Y "may be used uninitialized" (a known false
// positive of _mm512_set1/undefined intrinsics under -Wextra).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// High 64 bits of a * b, lane by lane, for b = b1 * 2^32 + b0 (b0, b1 in the lanes' low halves).
ATTN_TARGET_V4 ATTN_INLINE __m512i mulhi_v4(__m512i a, __m512i b0, __m512i b1) {
  const __m512i lo32 = _mm512_set1_epi64(0xffffffffll);
  const __m512i a1 = _mm512_srli_epi64(a, 32);
  const __m512i p00 = _mm512_mul_epu32(a, b0), p01 = _mm512_mul_epu32(a, b1);
  const __m512i p10 = _mm512_mul_epu32(a1, b0), p11 = _mm512_mul_epu32(a1, b1);
  const __m512i mid =
      _mm512_add_epi64(_mm512_add_epi64(_mm512_srli_epi64(p00, 32), _mm512_and_si512(p01, lo32)),
                       _mm512_and_si512(p10, lo32));
  return _mm512_add_epi64(_mm512_add_epi64(p11, _mm512_srli_epi64(p01, 32)),
                          _mm512_add_epi64(_mm512_srli_epi64(p10, 32), _mm512_srli_epi64(mid, 32)));
}

// The states after words at, at+1, ..., at+7 of a generator standing at state s.
ATTN_TARGET_V4 ATTN_INLINE void lanes_from(u128 s, u128 inc, __m512i& lo, __m512i& hi) {
  alignas(64) std::uint64_t l[8], h[8];
  for (int j = 0; j < 8; ++j) {
    s = s * Pcg64::kMultiplier + inc;
    l[j] = static_cast<std::uint64_t>(s);
    h[j] = static_cast<std::uint64_t>(s >> 64);
  }
  lo = _mm512_load_si512(l);
  hi = _mm512_load_si512(h);
}

// Decodes lane l's normals while eight whole words remain before its end (its head already
// recorded); values stored when Keep.
template <bool Keep>
ATTN_TARGET_V4 void run_v4(Lane& l) {
  if (l.pos + 8 > l.end) return;
  const u128 inc = l.g.increment();
  u128 a8 = 1, c8 = 0;
  for (int j = 0; j < 8; ++j) {
    a8 *= Pcg64::kMultiplier;
    c8 = c8 * Pcg64::kMultiplier + inc;
  }
  const __m512i alo = _mm512_set1_epi64(static_cast<long long>(a8));
  const __m512i alo_hi32 = _mm512_srli_epi64(alo, 32);
  const __m512i ahi = _mm512_set1_epi64(static_cast<long long>(a8 >> 64));
  const __m512i clo = _mm512_set1_epi64(static_cast<long long>(c8));
  const __m512i chi = _mm512_set1_epi64(static_cast<long long>(c8 >> 64));
  const __m512i byte = _mm512_set1_epi64(0xff), mant = _mm512_set1_epi64(0x000fffffffffffffll);
  const __m512i sign = _mm512_set1_epi64(static_cast<long long>(0x8000000000000000ull));
  (void)sign;
  const __m512i one = _mm512_set1_epi64(1);
  const auto* k_table = reinterpret_cast<const long long*>(zig::kZigguratK);

  u128 at = l.g.state();  // the state at pos, while `fresh` (no vector consumed since)
  bool fresh = true;
  __m512i lo, hi, prev_lo = _mm512_setzero_si512(), prev_hi = _mm512_setzero_si512();
  lanes_from(at, inc, lo, hi);
  std::uint64_t pos = l.pos, n = l.n;
  while (pos + 8 <= l.end) {
    const __m512i r = _mm512_rorv_epi64(_mm512_xor_si512(hi, lo), _mm512_srli_epi64(hi, 58));
    const __m512i idx = _mm512_and_si512(r, byte);
    const __m512i rabs = _mm512_and_si512(_mm512_srli_epi64(r, 9), mant);
    const __mmask8 accepted =
        _mm512_cmplt_epu64_mask(rabs, _mm512_i64gather_epi64(idx, k_table, 8));
    __m512d x = _mm512_setzero_pd();
    if constexpr (Keep) {  // locating needs only the acceptances
      const __m512d w = _mm512_i64gather_pd(idx, zig::kZigguratW, 8);
      x = _mm512_castsi512_pd(
          _mm512_xor_si512(_mm512_castpd_si512(_mm512_mul_pd(_mm512_cvtepu64_pd(rabs), w)),
                           _mm512_and_si512(_mm512_slli_epi64(r, 55), sign)));
    }
    // The next eight words' states.
    const __m512i mlo = _mm512_mullo_epi64(lo, alo);
    const __m512i mhi = _mm512_add_epi64(
        mulhi_v4(lo, alo, alo_hi32),
        _mm512_add_epi64(_mm512_mullo_epi64(lo, ahi), _mm512_mullo_epi64(hi, alo)));
    const __m512i next_lo = _mm512_add_epi64(mlo, clo);
    __m512i next_hi = _mm512_add_epi64(mhi, chi);
    next_hi = _mm512_mask_add_epi64(next_hi, _mm512_cmplt_epu64_mask(next_lo, mlo), next_hi, one);
    if (__builtin_expect(accepted == 0xff, 1)) {
      if constexpr (Keep) _mm512_storeu_pd(l.out + n, x);
      n += 8;
    } else {
      // Rejections, in order (about 11% of vectors). A rejected lane j starts a normal that
      // takes more words: lane j+1's as the wedge's uniform, or more for the tail or a redraw;
      // those lanes are dropped, and `keep` marks the lanes that are normals, values in xs.
      alignas(64) double xs[8];
      alignas(64) std::uint64_t rs[8];
      _mm512_store_pd(xs, x);
      _mm512_store_si512(rs, r);
      unsigned keep = accepted, todo = ~accepted & 0xffu;
      bool rebuilt = false;
      while (todo != 0) {
        const unsigned j = static_cast<unsigned>(__builtin_ctz(todo));
        int id;
        std::uint64_t rabs_j;
        double x_j;
        (void)numpy_rng::ziggurat_first(rs[j], id, rabs_j, x_j);
        if (id != 0 && j < 7) {  // the wedge, with the next word's uniform (next_double)
          const double u = static_cast<double>(rs[j + 1] >> 11) * (1.0 / 9007199254740992.0);
          const double fx = (zig::f(id - 1) - zig::f(id)) * u + zig::f(id);
          if (fx < std::exp(-0.5 * x_j * x_j)) keep |= 1u << j;  // xs[j] is x_j
          keep &= ~(2u << j);  // else the next try starts at word j + 2
          todo &= ~(3u << j);
          continue;
        }
        // The tail, or a wedge whose uniform is the next vector's first word: the scalar path.
        alignas(64) std::uint64_t los[8], his[8];
        _mm512_store_si512(los, lo);
        _mm512_store_si512(his, hi);
        Pcg64 g = l.g;
        g.set_state((static_cast<u128>(his[j]) << 64) | los[j]);
        Counted c{g, pos + j + 1};
        xs[j] = numpy_rng::standard_normal_rare(c, id, rabs_j, x_j);
        keep |= 1u << j;
        const std::uint64_t used = c.pos - pos;  // lanes j+1 .. used-1 were its words
        if (used >= 8) {  // past this vector: emit, and rebuild the lanes where it ended
          keep &= (2u << j) - 1;
          if constexpr (Keep)
            _mm512_storeu_pd(l.out + n, _mm512_maskz_compress_pd(keep, _mm512_load_pd(xs)));
          n += static_cast<unsigned>(__builtin_popcount(keep));
          pos = c.pos;
          at = c.g.state();
          fresh = true;
          lanes_from(at, inc, lo, hi);
          rebuilt = true;
          break;
        }
        const unsigned taken = ((1u << used) - 1) & ~((2u << j) - 1);
        keep &= ~taken;
        todo &= ~((1u << used) - 1);
      }
      if (!rebuilt) {
        if constexpr (Keep)
          _mm512_storeu_pd(l.out + n, _mm512_maskz_compress_pd(keep, _mm512_load_pd(xs)));
        n += static_cast<unsigned>(__builtin_popcount(keep));
      }
      if (rebuilt) continue;
    }
    pos += 8;
    prev_lo = lo;
    prev_hi = hi;
    lo = next_lo;
    hi = next_hi;
    fresh = false;
  }
  if (!fresh) {  // the state after word pos - 1: lane 7 of the vector consumed last
    alignas(64) std::uint64_t los[8], his[8];
    _mm512_store_si512(los, prev_lo);
    _mm512_store_si512(his, prev_hi);
    at = (static_cast<u128>(his[7]) << 64) | los[7];
  }
  l.g.set_state(at);
  l.pos = pos;
  l.n = n;
}

// Lane l decoded with the vector loop between its recorded head and its last eight words.
ATTN_TARGET_V4 void decode_lane_v4(Lane l) {
  while (l.n < static_cast<std::uint64_t>(l.head) && l.pos < l.end) step(l);
  if (l.out != nullptr)
    run_v4<true>(l);
  else
    run_v4<false>(l);
  while (l.pos < l.end) step(l);
  finish(l);
}
#pragma GCC diagnostic pop
#endif

// The next `count` normals from g (standing at a normal's start); g then stands after them.
// keep: store the values in out (else only g moves). Rounds: the words [S, S + rest) hold at
// most `rest` normal starts (each normal takes at least one word), so each round decodes those
// words in parallel pieces and the next round goes on from the first start past them.
void decode(Pcg64& g, std::uint64_t count, const StreamSplit& split, bool keep, Normals* out) {
  const int threads = thread_count(split);
  const int head = std::clamp(split.head_starts, 1, kMaxHead);
  const bool v4 = ATTN_HAVE_CPU_LEVELS && cpu_level() == CpuLevel::v4;
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
    if (split.decoder) {
      split.decoder(g, pieces.data(), pieces.size(), head, buf);
    } else {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (groups > 1)
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(groups); ++i) {
        auto lane = [&](int j) {
          Piece& p = pieces[4 * i + j];
          return lane_at(g, p.begin, p, head, keep ? buf + p.begin : nullptr);
        };
#if ATTN_HAVE_CPU_LEVELS
        if (v4) {
          for (int j = 0; j < 4; ++j) decode_lane_v4(lane(j));
          continue;
        }
#endif
        decode_lanes4(lane(0), lane(1), lane(2), lane(3));
      }
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

// The run's values [i, i + count) as one pointer, when one span holds them all (else null).
const double* contiguous(const Normals& v, std::uint64_t i, std::uint64_t count) {
  auto it = std::upper_bound(v.spans.begin(), v.spans.end(), i,
                             [](std::uint64_t x, const Span& s) { return x < s.first; });
  const Span& s = *(it - 1);
  return i + count <= s.first + s.n ? s.p + (i - s.first) : nullptr;
}

// Moments of `rows` rows: row r's dot is q[qrow0 + r] . k[krow0 + r], summed from j = 0 in order
// (as the sequential loop sums it); q and k hold their waves' rows.
Moments chunk_dots(const Normals& q, std::uint64_t qrow0, const Normals& k, std::uint64_t krow0,
                   std::uint64_t rows, std::uint32_t d_k) {
  Moments m;
  const double* pq = contiguous(q, qrow0 * d_k, rows * d_k);
  const double* pk = contiguous(k, krow0 * d_k, rows * d_k);
  if (pq != nullptr && pk != nullptr) {  // the usual case: four rows at once (four sums in flight)
    std::uint64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
      const double *q0 = pq + r * d_k, *k0 = pk + r * d_k;
      double d0 = 0, d1 = 0, d2 = 0, d3 = 0;
      for (std::uint32_t j = 0; j < d_k; ++j) {
        d0 += q0[j] * k0[j];
        d1 += q0[d_k + j] * k0[d_k + j];
        d2 += q0[2 * d_k + j] * k0[2 * d_k + j];
        d3 += q0[3 * d_k + j] * k0[3 * d_k + j];
      }
      m.push(d0);
      m.push(d1);
      m.push(d2);
      m.push(d3);
    }
    for (; r < rows; ++r) {
      double dot = 0;
      for (std::uint32_t j = 0; j < d_k; ++j) dot += pq[r * d_k + j] * pk[r * d_k + j];
      m.push(dot);
    }
    return m;
  }
  Reader rq(q, qrow0 * d_k), rk(k, krow0 * d_k);
  for (std::uint64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (std::uint64_t j = 0; j < d_k;) {
      const double *a, *b;
      const std::uint64_t nq = rq.take(d_k - j, a);
      std::uint64_t n = 0;
      while (n < nq) {  // k's spans may end elsewhere than q's
        const std::uint64_t nk = rk.take(nq - n, b);
        for (std::uint64_t t = 0; t < nk; ++t) dot += a[n + t] * b[t];
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

StreamSplit device_split(PieceDecoder decoder) {
  StreamSplit s;
  s.piece_words = 256;
  s.head_starts = 16;
  s.wave_normals = s.k_wave_normals = std::uint64_t{1} << 22;
  s.decoder = std::move(decoder);
  return s;
}

void decode_pieces_cpu(const Pcg64& g0, Piece* pieces, std::size_t count, int head, double* values,
                       int threads) {
#pragma omp parallel for schedule(dynamic, 1) \
    num_threads(threads > 0 ? threads : omp_get_max_threads())
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i) {
    Piece& p = pieces[i];
    decode_piece(g0, p.begin, p, head, values != nullptr ? values + p.begin : nullptr);
  }
}

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

  const std::uint64_t k_wave = split_.k_wave_normals > 0 ? split_.k_wave_normals : kKWaveNormals;
  const std::uint64_t k_rows =
      std::max<std::uint64_t>(1, k_wave / (rows_per_chunk * d_k)) * rows_per_chunk;
  Moments total;
  std::vector<Moments> parts;
  for (std::uint64_t r0 = 0; r0 < samples; r0 += wave_rows) {
    monitor.checkpoint();
    const std::uint64_t rows = std::min(wave_rows, samples - r0);
    if (samples > wave_rows) {
      q.clear();
      decode(gq, rows * d_k, split_, true, &q);
    }
    for (std::uint64_t k0 = 0; k0 < rows; k0 += k_rows) {  // k0: the k wave's first row in q's
      monitor.checkpoint();
      const std::uint64_t krows = std::min(k_rows, rows - k0);
      k.clear();
      decode(gk, krows * d_k, split_, true, &k);
      const std::uint64_t chunks = (krows + rows_per_chunk - 1) / rows_per_chunk;
      parts.assign(chunks, Moments{});
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (chunks > 1)
      for (std::int64_t c = 0; c < static_cast<std::int64_t>(chunks); ++c) {
        const std::uint64_t first = static_cast<std::uint64_t>(c) * rows_per_chunk;
        parts[c] =
            chunk_dots(q, k0 + first, k, first, std::min(rows_per_chunk, krows - first), d_k);
      }
      for (const Moments& m : parts) total = merge(total, m);
      monitor.advance(2.0 * static_cast<double>(krows * d_k));
    }
  }
  gen_ = gk;
  return total;
}

}  // namespace attn::dkstd
