// dkstd_numpy.cpp: see dkstd_numpy.hpp.
#include "dkstd_numpy.hpp"

#include "cpu_clones.hpp"
#include "cpu_threads.hpp"
#include "hd.hpp"

#include <omp.h>
#if ATTN_HAVE_CPU_LEVELS
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <new>
#include <utility>

namespace attn::dkstd {
namespace {

using numpy_rng::Pcg64;

constexpr std::uint64_t kMinPieceWords = std::uint64_t{1} << 12;
// Waves of rows hold up to 2^18 normals of q, and of k (2 MiB each), two of each (one decoded
// while the other's dot products are taken), reused, so that they stay in cache and the process
// touches little fresh memory. q is kept whole only when it fits in one wave; a larger q is
// located (its words counted, values not kept) and decoded again a wave at a time beside k.
// Decoding a normal again costs less than the first touch of fresh memory to keep it (a page
// fault per 4 KiB page; with transparent huge pages, at times a compaction): re-decoding is the
// cheaper and the steadier way. Waves of a larger q are a 64th of it, from 2^16 normals (512 KiB)
// to 2^18: a short block gains more from touching less fresh memory than it loses to more joins,
// a long one the reverse.
std::uint64_t auto_wave(std::uint64_t q_normals) {
  constexpr std::uint64_t kMin = std::uint64_t{1} << 16, kMax = std::uint64_t{1} << 18;
  return q_normals <= kMax ? kMax : std::clamp(q_normals / 64, kMin, kMax);
}

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
// streams fill those waits.
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
// ---- Eight consecutive words at once (AVX-512, AVX2) ----------------------------------------
// Eight lanes hold the generator's states after words pos .. pos+7 (lane j's XSL-RR output is
// word pos+j); one step moves every lane 8 words on, s -> A8 s + C8 (the 8-step LCG, built by
// composing the one-step map), so the eight 128-bit multiplies are independent. Each lane takes
// the ziggurat's first step on its word, its layer's k and w read by table lookups (Isa::layer:
// permutes and a gather at AVX-512, paired scalar loads at AVX2), and stores its candidate
// value in the slot of its word: in a block of vectors, word w's value at slot[w - base].
// About 98.5% of words are accepted there; a vector with a lane that is not (about 11% of
// vectors) is listed with its lanes' states, with no branch in the loop (a branch there, taken
// at random, and the call behind it cost as much as the loop itself). resolve_block then walks
// the listed lanes in order: a normal is a function of the word it starts at, so every word up
// to the next listed one that is not drawn by an earlier normal starts an accepted normal, and
// a listed word that does start a normal runs the scalar rare path (the wedge, the tail,
// redraws) from its lane's state. The values are compacted over the words the rare paths drew,
// in the same walk. Bits: the same operations as ziggurat_first and standard_normal_rare
// (uint64 -> double is exact below 2^52, the sign is the sign bit), tested at every split and
// at each level. The loop is written once (run) over an ISA shim (IsaV4, IsaV3).
using numpy_rng::u128;

constexpr unsigned kBlockVectors = 128;  // vectors a block: its lists take 17 KiB of stack

// A block's listed vectors: for entry e, vector vix[e] of the block, accepted[e] its lanes
// surely accepted (Isa::surely_accepted), los[e]/his[e] its lanes' states.
struct Listed {
  alignas(64) std::uint64_t los[kBlockVectors][8], his[kBlockVectors][8];
  unsigned accepted[kBlockVectors], vix[kBlockVectors];
  u128 state(unsigned e, unsigned j) const {
    return (static_cast<u128>(his[e][j]) << 64) | los[e][j];
  }
};

// Where a block's walk ended: n normals; the next starts at word next, which is past the
// block's end only when a rare path drew past it (the generator then stands at `state`).
struct BlockEnd {
  std::uint64_t n, next;
  u128 state;
};

// The normals of the block of words [base, base + words), a true normal start at base: the
// first m entries of `listed` are its vectors with a lane not surely accepted. slot: the
// candidate values by word (null when locating); the normals' values are left at slot[0 .. n).
__attribute__((noinline)) BlockEnd resolve_block(const Pcg64& proto, std::uint64_t base,
                                                 std::uint64_t words, unsigned m,
                                                 const Listed& listed, double* slot) {
  const std::uint64_t end = base + words;
  std::uint64_t c = base, n = 0;  // c: where the next normal starts
  u128 state = 0;
  // Words c .. to-1 start accepted normals: their values move down to slot[n ..).
  auto take_accepted = [&](std::uint64_t to) {
    if (slot != nullptr && n != c - base)
      std::memmove(slot + n, slot + (c - base), (to - c) * sizeof(double));
    n += to - c;
  };
  for (unsigned e = 0; e < m; ++e) {
    const std::uint64_t vbase = base + 8 * std::uint64_t{listed.vix[e]};
    for (unsigned todo = ~listed.accepted[e] & 0xffu; todo != 0; todo &= todo - 1) {
      const unsigned j = static_cast<unsigned>(__builtin_ctz(todo));
      const std::uint64_t w = vbase + j;
      if (w < c) continue;  // drawn by the normal before
      take_accepted(w);
      const u128 s = listed.state(e, j);
      int id;
      std::uint64_t rabs;
      double x;
      c = w + 1;
      if (numpy_rng::ziggurat_first(Pcg64::output(s), id, rabs, x)) {
        // accepted after all (the vector test left it undecided)
      } else if (id != 0 && j < 7 && w + 2 < end) {
        // The wedge, its uniform the next lane's word. Rejected, the normal draws again from
        // word w + 2 as a new normal would: that word's turn in this walk gives its value.
        c = w + 2;
        const std::uint64_t u = Pcg64::output(listed.state(e, j + 1));
        if (!numpy_rng::wedge_accepts(id, x, Pcg64::double_from(u))) continue;
      } else {  // the tail, or a wedge whose uniform or redraw lies past the block
        Pcg64 g = proto;
        g.set_state(s);
        Counted cg{g, w + 1};
        x = numpy_rng::standard_normal_rare(cg, id, rabs, x);
        c = cg.pos;
        state = cg.g.state();
      }
      if (slot != nullptr) slot[n] = x;
      ++n;
    }
  }
  if (c < end) {
    take_accepted(end);
    c = end;
  }
  return BlockEnd{n, c, state};
}

// Each layer's k and w side by side, for the AVX2 decoder's paired loads (v3::Isa::layer).
struct alignas(16) KW {
  std::uint64_t k;
  double w;
};
alignas(64) constexpr std::array<KW, 256> kLayers = [] {
  std::array<KW, 256> t{};
  for (int i = 0; i < 256; ++i) t[i] = KW{zig::kZigguratK[i], zig::kZigguratW[i]};
  return t;
}();

// GCC 12 warns that the intrinsics' internal __Y "may be used uninitialized" (a known false
// positive of the _mm*_set1/undefined intrinsics under -Wextra).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// The ISA shims: each member carries its level's target (cpu_clones.hpp).
struct IsaV4 {  // one AVX-512 register
  using V = __m512i;
  using D = __m512d;
  ATTN_TARGET_V4 static V set1(std::uint64_t x) {
    return _mm512_set1_epi64(static_cast<long long>(x));
  }
  ATTN_TARGET_V4 static V load(const std::uint64_t* p) { return _mm512_load_si512(p); }
  ATTN_TARGET_V4 static void store(std::uint64_t* p, V v) { _mm512_store_si512(p, v); }
  ATTN_TARGET_V4 static void storeu(double* p, D v) { _mm512_storeu_pd(p, v); }
  ATTN_TARGET_V4 static V add(V a, V b) { return _mm512_add_epi64(a, b); }
  ATTN_TARGET_V4 static V and_(V a, V b) { return _mm512_and_si512(a, b); }
  ATTN_TARGET_V4 static V xor_(V a, V b) { return _mm512_xor_si512(a, b); }
  ATTN_TARGET_V4 static D xor_(D a, V b) {
    return _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(a), b));
  }
  template <int N>
  ATTN_TARGET_V4 static V srl(V a) {
    return _mm512_srli_epi64(a, N);
  }
  template <int N>
  ATTN_TARGET_V4 static V sll(V a) {
    return _mm512_slli_epi64(a, N);
  }
  ATTN_TARGET_V4 static V mul_u32(V a, V b) { return _mm512_mul_epu32(a, b); }
  ATTN_TARGET_V4 static V mul_lo(V a, V b) { return _mm512_mullo_epi64(a, b); }
  ATTN_TARGET_V4 static V rotr(V x, V r) { return _mm512_rorv_epi64(x, r); }
  // hi + 1 where sum < addend (the carry out of sum = addend + something, mod 2^64).
  ATTN_TARGET_V4 static V add_carry(V hi, V sum, V addend) {
    return _mm512_mask_add_epi64(hi, _mm512_cmplt_epu64_mask(sum, addend), hi, set1(1));
  }
  // The lanes surely accepted: rabs >> 36 < k16[idx] (k16 = kZigguratK >> 36, so then rabs <
  // kZigguratK[idx]). The 256 16-bit thresholds sit in eight registers and are read by four
  // two-register permutes, cheaper than an eight-lane gather. A lane with rabs >> 36 ==
  // k16[idx] (p = 2^-16) is left to resolve_block's exact test, as are the rejected ones.
  struct KTable {
    __m512i t[8];
    ATTN_TARGET_V4 KTable() {
      alignas(64) std::uint16_t k[256];
      for (int i = 0; i < 256; ++i) k[i] = static_cast<std::uint16_t>(zig::kZigguratK[i] >> 36);
      for (int i = 0; i < 8; ++i) t[i] = _mm512_load_si512(k + 32 * i);
    }
  };
  // A vector's layers: the indices, k read by surely_accepted's permutes, w by width's gather.
  struct Layer {
    const KTable& k;
    V idx;
  };
  ATTN_TARGET_V4 static Layer layer(const KTable& k, V idx) { return {k, idx}; }
  ATTN_TARGET_V4 static D width(const Layer& l) {
    return _mm512_i64gather_pd(l.idx, zig::kZigguratW, 8);
  }
  ATTN_TARGET_V4 static unsigned surely_accepted(const Layer& l, V rabs) {
    const KTable& k = l.k;
    const V idx = l.idx;
    const __m512i p0 = _mm512_permutex2var_epi16(k.t[0], idx, k.t[1]);
    const __m512i p1 = _mm512_permutex2var_epi16(k.t[2], idx, k.t[3]);
    const __m512i p2 = _mm512_permutex2var_epi16(k.t[4], idx, k.t[5]);
    const __m512i p3 = _mm512_permutex2var_epi16(k.t[6], idx, k.t[7]);
    const __mmask8 b6 = _mm512_test_epi64_mask(idx, set1(64));
    const __mmask8 b7 = _mm512_test_epi64_mask(idx, set1(128));
    const V t = _mm512_mask_blend_epi64(b7, _mm512_mask_blend_epi64(b6, p0, p1),
                                        _mm512_mask_blend_epi64(b6, p2, p3));
    return _mm512_cmplt_epu64_mask(srl<36>(rabs), and_(t, set1(0xffff)));
  }
  ATTN_TARGET_V4 static D to_double(V a) { return _mm512_cvtepu64_pd(a); }
  ATTN_TARGET_V4 static D mul(D a, D b) { return _mm512_mul_pd(a, b); }
};

struct IsaV3 {  // two AVX2 registers: lanes 0-3 in a, 4-7 in b
  struct V {
    __m256i a, b;
  };
  struct D {
    __m256d a, b;
  };
  ATTN_TARGET_V3 static V set1(std::uint64_t x) {
    const __m256i v = _mm256_set1_epi64x(static_cast<long long>(x));
    return {v, v};
  }
  ATTN_TARGET_V3 static V load(const std::uint64_t* p) {
    return {_mm256_load_si256(reinterpret_cast<const __m256i*>(p)),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 4))};
  }
  ATTN_TARGET_V3 static void store(std::uint64_t* p, V v) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(p), v.a);
    _mm256_store_si256(reinterpret_cast<__m256i*>(p + 4), v.b);
  }
  ATTN_TARGET_V3 static void storeu(double* p, D v) {
    _mm256_storeu_pd(p, v.a);
    _mm256_storeu_pd(p + 4, v.b);
  }
  ATTN_TARGET_V3 static V add(V x, V y) {
    return {_mm256_add_epi64(x.a, y.a), _mm256_add_epi64(x.b, y.b)};
  }
  ATTN_TARGET_V3 static V sub(V x, V y) {
    return {_mm256_sub_epi64(x.a, y.a), _mm256_sub_epi64(x.b, y.b)};
  }
  ATTN_TARGET_V3 static V and_(V x, V y) {
    return {_mm256_and_si256(x.a, y.a), _mm256_and_si256(x.b, y.b)};
  }
  ATTN_TARGET_V3 static V or_(V x, V y) {
    return {_mm256_or_si256(x.a, y.a), _mm256_or_si256(x.b, y.b)};
  }
  ATTN_TARGET_V3 static V xor_(V x, V y) {
    return {_mm256_xor_si256(x.a, y.a), _mm256_xor_si256(x.b, y.b)};
  }
  ATTN_TARGET_V3 static D xor_(D x, V y) {
    return {_mm256_xor_pd(x.a, _mm256_castsi256_pd(y.a)),
            _mm256_xor_pd(x.b, _mm256_castsi256_pd(y.b))};
  }
  template <int N>
  ATTN_TARGET_V3 static V srl(V x) {
    return {_mm256_srli_epi64(x.a, N), _mm256_srli_epi64(x.b, N)};
  }
  template <int N>
  ATTN_TARGET_V3 static V sll(V x) {
    return {_mm256_slli_epi64(x.a, N), _mm256_slli_epi64(x.b, N)};
  }
  ATTN_TARGET_V3 static V mul_u32(V x, V y) {
    return {_mm256_mul_epu32(x.a, y.a), _mm256_mul_epu32(x.b, y.b)};
  }
  // The low 64 bits of x * y from 32-bit halves: x0 y0 + ((x1 y0 + x0 y1) << 32).
  ATTN_TARGET_V3 static V mul_lo(V x, V y) {
    const V cross = add(mul_u32(srl<32>(x), y), mul_u32(x, srl<32>(y)));
    return add(mul_u32(x, y), sll<32>(cross));
  }
  // AVX2's variable shifts give 0 for a count of 64, so r = 0 leaves x.
  ATTN_TARGET_V3 static V rotr(V x, V r) {
    const V left = sub(set1(64), r);
    return {_mm256_or_si256(_mm256_srlv_epi64(x.a, r.a), _mm256_sllv_epi64(x.a, left.a)),
            _mm256_or_si256(_mm256_srlv_epi64(x.b, r.b), _mm256_sllv_epi64(x.b, left.b))};
  }
  // All-ones lanes where x < y, unsigned (a signed compare after flipping the sign bits).
  ATTN_TARGET_V3 static V lt_lanes(V x, V y) {
    const V s = set1(0x8000000000000000ull);
    const V xf = xor_(x, s), yf = xor_(y, s);
    return {_mm256_cmpgt_epi64(yf.a, xf.a), _mm256_cmpgt_epi64(yf.b, xf.b)};
  }
  ATTN_TARGET_V3 static V add_carry(V hi, V sum, V addend) {
    return sub(hi, lt_lanes(sum, addend));
  }
  // A vector's layers' k and w, read from kLayers (k and w side by side, 16 bytes a layer): a
  // 16-byte load per lane, two lanes' pairs to a register, and unpacks sort the k's from the
  // w's (lane order: unpacklo of (0, 2) and (1, 3) is (k0, k1 | k2, k3)). Loads, not four
  // four-lane gathers a vector: on AVX2 a gather can cost more than four scalar loads and their
  // inserts (`bench_kernels DkStdNumpyStream/512/1` times the stream).
  struct KTable {};
  struct Layer {
    V k;
    D w;
  };
  // Layers j0's and j1's (k, w) pairs in one register, from their byte offsets into kLayers.
  ATTN_TARGET_V3 static __m256i two_layers(const char* base, std::uint64_t off0,
                                           std::uint64_t off1) {
    return _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(base + off0))),
        _mm_load_si128(reinterpret_cast<const __m128i*>(base + off1)), 1);
  }
  ATTN_TARGET_V3 static Layer layer(const KTable&, V idx) {
    // The lanes' byte offsets into kLayers (16 bytes a layer), scaled here, eight lanes in two
    // instructions, rather than by a scalar shift per lane.
    alignas(32) std::uint64_t off[8];
    store(off, sll<4>(idx));
    const char* base = reinterpret_cast<const char*>(kLayers.data());
    const __m256i e0 = two_layers(base, off[0], off[2]), o0 = two_layers(base, off[1], off[3]);
    const __m256i e1 = two_layers(base, off[4], off[6]), o1 = two_layers(base, off[5], off[7]);
    return {{_mm256_unpacklo_epi64(e0, o0), _mm256_unpacklo_epi64(e1, o1)},
            {_mm256_castsi256_pd(_mm256_unpackhi_epi64(e0, o0)),
             _mm256_castsi256_pd(_mm256_unpackhi_epi64(e1, o1))}};
  }
  ATTN_TARGET_V3 static D width(const Layer& l) { return l.w; }
  // The lanes accepted: rabs < k[idx], a signed compare (both are below 2^52).
  ATTN_TARGET_V3 static unsigned surely_accepted(const Layer& l, V rabs) {
    return static_cast<unsigned>(
               _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(l.k.a, rabs.a)))) |
           static_cast<unsigned>(
               _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(l.k.b, rabs.b))))
               << 4;
  }
  // Exact below 2^52: the bits of 2^52 + x as a double, less 2^52.
  ATTN_TARGET_V3 static D to_double(V x) {
    const V m = or_(x, set1(0x4330000000000000ull));
    const __m256d two52 = _mm256_set1_pd(4503599627370496.0);
    return {_mm256_sub_pd(_mm256_castsi256_pd(m.a), two52),
            _mm256_sub_pd(_mm256_castsi256_pd(m.b), two52)};
  }
  ATTN_TARGET_V3 static D mul(D x, D y) {
    return {_mm256_mul_pd(x.a, y.a), _mm256_mul_pd(x.b, y.b)};
  }
};
#pragma GCC diagnostic pop
#endif

// ---- The vector loop, written once over an ISA shim ----------------------------------------
#if ATTN_HAVE_CPU_LEVELS
// High 64 bits of a * b, lane by lane, for b = b1 * 2^32 + b0 (b0, b1 in the lanes' low halves).
template <class Isa>
typename Isa::V mul_hi(typename Isa::V a, typename Isa::V b0, typename Isa::V b1) {
  using V = typename Isa::V;
  const V lo32 = Isa::set1(0xffffffffu);
  const V a1 = Isa::template srl<32>(a);
  const V p00 = Isa::mul_u32(a, b0), p01 = Isa::mul_u32(a, b1);
  const V p10 = Isa::mul_u32(a1, b0), p11 = Isa::mul_u32(a1, b1);
  const V mid =
      Isa::add(Isa::add(Isa::template srl<32>(p00), Isa::and_(p01, lo32)), Isa::and_(p10, lo32));
  return Isa::add(Isa::add(p11, Isa::template srl<32>(p01)),
                  Isa::add(Isa::template srl<32>(p10), Isa::template srl<32>(mid)));
}

// The states after words 1 .. 8 of a generator standing at state s, as lanes 0 .. 7.
template <class Isa>
void lanes_from(u128 s, u128 inc, typename Isa::V& lo, typename Isa::V& hi) {
  alignas(64) std::uint64_t l[8], h[8];
  for (int j = 0; j < 8; ++j) {
    s = s * Pcg64::kMultiplier + inc;
    l[j] = static_cast<std::uint64_t>(s);
    h[j] = static_cast<std::uint64_t>(s >> 64);
  }
  lo = Isa::load(l);
  hi = Isa::load(h);
}

// Decodes lane l's normals while eight whole words remain before its end (its head already
// recorded), a block of up to kBlockVectors vectors at a time; values stored when Keep (else
// only counted: locating needs no values).
template <class Isa, bool Keep>
void run(Lane& l) {
  using V = typename Isa::V;
  if (l.pos + 8 > l.end) return;
  const u128 inc = l.g.increment();
  u128 a8 = 1, c8 = 0;
  for (int j = 0; j < 8; ++j) {
    a8 *= Pcg64::kMultiplier;
    c8 = c8 * Pcg64::kMultiplier + inc;
  }
  const V alo = Isa::set1(static_cast<std::uint64_t>(a8));
  const V alo_hi32 = Isa::template srl<32>(alo);
  const V ahi = Isa::set1(static_cast<std::uint64_t>(a8 >> 64));
  const V clo = Isa::set1(static_cast<std::uint64_t>(c8));
  const V chi = Isa::set1(static_cast<std::uint64_t>(c8 >> 64));
  const V byte = Isa::set1(0xff), mant = Isa::set1(0x000fffffffffffffull);
  const V sign = Isa::set1(0x8000000000000000ull);
  const typename Isa::KTable ktable;
  Listed listed;

  u128 at = l.g.state();  // the generator standing at pos
  std::uint64_t pos = l.pos, n = l.n;
  V lo, hi, last_lo, last_hi;
  lanes_from<Isa>(at, inc, lo, hi);
  while (pos + 8 <= l.end) {
    const unsigned vectors =
        static_cast<unsigned>(std::min<std::uint64_t>(kBlockVectors, (l.end - pos) / 8));
    double* slot = Keep ? l.out + n : nullptr;
    unsigned m = 0;
    for (unsigned v = 0; v < vectors; ++v) {
      const V r = Isa::rotr(Isa::xor_(hi, lo), Isa::template srl<58>(hi));  // XSL-RR
      const V idx = Isa::and_(r, byte);
      const V rabs = Isa::and_(Isa::template srl<9>(r), mant);
      const auto layer = Isa::layer(ktable, idx);  // the lanes' layers' k and w
      const unsigned accepted = Isa::surely_accepted(layer, rabs);
      if constexpr (Keep)  // rabs * w[idx], the sign bit from bit 8 of r
        Isa::storeu(slot + 8 * v, Isa::xor_(Isa::mul(Isa::to_double(rabs), Isa::width(layer)),
                                            Isa::and_(Isa::template sll<55>(r), sign)));
      // Listed unconditionally; kept when a lane is not surely accepted.
      Isa::store(listed.los[m], lo);
      Isa::store(listed.his[m], hi);
      listed.accepted[m] = accepted;
      listed.vix[m] = v;
      m += accepted != 0xffu;
      // The next eight words' states: s -> A8 s + C8 (mod 2^128).
      const V mlo = Isa::mul_lo(lo, alo);
      const V mhi = Isa::add(mul_hi<Isa>(lo, alo, alo_hi32),
                             Isa::add(Isa::mul_lo(lo, ahi), Isa::mul_lo(hi, alo)));
      last_lo = lo;
      last_hi = hi;
      lo = Isa::add(mlo, clo);
      hi = Isa::add_carry(Isa::add(mhi, chi), lo, mlo);
    }
    const std::uint64_t words = 8 * std::uint64_t{vectors};
    const BlockEnd e = resolve_block(l.g, pos, words, m, listed, slot);
    n += e.n;
    if (e.next > pos + words) {  // a rare path drew past the block: the lanes start again there
      pos = e.next;
      at = e.state;
      lanes_from<Isa>(at, inc, lo, hi);
    } else {  // the state after the block's last word: lane 7 of its last vector
      pos += words;
      alignas(64) std::uint64_t los[8], his[8];
      Isa::store(los, last_lo);
      Isa::store(his, last_hi);
      at = (static_cast<u128>(his[7]) << 64) | los[7];
    }
  }
  l.g.set_state(at);
  l.pos = pos;
  l.n = n;
}

// Lane l decoded with the vector loop over Isa between its recorded head and its last eight
// words.
template <class Isa>
void decode_lane_vectors(Lane l) {
  while (l.n < static_cast<std::uint64_t>(l.head) && l.pos < l.end) step(l);
  if (l.out != nullptr)
    run<Isa, true>(l);
  else
    run<Isa, false>(l);
  while (l.pos < l.end) step(l);
  finish(l);
}

#endif

// Lane l decoded eight words at once at level L (scalar at the baseline, where decode() groups
// lanes by four instead and does not call it).
template <CpuLevel L>
ATTN_INLINE void decode_lane_simd_body(Lane l) {
#if ATTN_HAVE_CPU_LEVELS
  if constexpr (L == CpuLevel::v4)
    decode_lane_vectors<IsaV4>(l);
  else if constexpr (L == CpuLevel::v3)
    decode_lane_vectors<IsaV3>(l);
  else
#endif
    decode_lane(l);
}
ATTN_CPU_LEVELS_BY_LEVEL(void, decode_lane_simd, (Lane l), (l))

// One run of normals to decode: the next `count` from *g (standing at a normal's start; it then
// stands after them), values kept in *out, or only counted (q located) when out is null.
struct Job {
  Pcg64* g;
  std::uint64_t count;
  Normals* out;
};

// Items run by the first round's threads beside its pieces (the previous wave's dot products),
// so that one join serves both. They are handed out first: an item is several pieces' work, and
// one taken last would leave the other threads waiting at the join.
struct SideWork {
  std::size_t count = 0;
  std::function<void(std::size_t)> run;
};

// items 0 .. n-1 over the threads, one at a time as threads come free.
template <class F>
void parallel_items(int threads, std::size_t n, bool parallel, F&& f) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (parallel && n > 1)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    bind_this_thread();
    f(static_cast<std::size_t>(i));
  }
}

// Decodes the jobs, their pieces in one parallel loop per round. Rounds: the words
// [S, S + rest) hold at most `rest` normal starts (each normal takes at least one word), so each
// round decodes those words of every unfinished job in pieces, and the next round goes on from
// the first start past them (about 1.5% of words are rejections: rounds after the first are
// small, and run on one thread below kSerialWords); a job's last kFinishNormals or fewer are
// decoded one at a time, counted, instead of in further rounds.
void decode(std::initializer_list<Job> jobs_in, const StreamSplit& split,
            const SideWork& side = {}) {
  constexpr std::uint64_t kSerialWords = 2 * kMinPieceWords;
  constexpr std::uint64_t kFinishNormals = 256;
  const int threads = thread_count(split);
  const int head = std::clamp(split.head_starts, 1, kMaxHead);
  const CpuLevel level = cpu_level();
  struct Todo {
    Job job;
    std::uint64_t done = 0;
    std::size_t first = 0, n = 0;  // its pieces this round
    double* buf = nullptr;
  };
  std::vector<Todo> todo;
  for (const Job& j : jobs_in) todo.push_back(Todo{j});
  std::vector<Piece> pieces;
  std::vector<std::size_t> owner;  // the job of each piece
  std::size_t side_items = side.count;
  for (;;) {
    pieces.clear();
    owner.clear();
    std::uint64_t round_words = 0;
    for (std::size_t j = 0; j < todo.size(); ++j) {
      Todo& t = todo[j];
      t.first = pieces.size();
      t.n = 0;
      if (t.done == t.job.count) continue;
      const std::uint64_t rest = t.job.count - t.done;
      const std::uint64_t words =
          split.piece_words > 0
              ? split.piece_words
              : std::max(kMinPieceWords,
                         (rest + 8 * threads - 1) / (8 * static_cast<std::uint64_t>(threads)));
      for (std::uint64_t b = 0; b < rest; b += words) {
        Piece p;
        p.begin = b;
        p.end = std::min(rest, b + words);
        pieces.push_back(p);
        owner.push_back(j);
      }
      t.n = pieces.size() - t.first;
      // A piece's normals start at distinct words of its range: at most `words` of them.
      t.buf = t.job.out != nullptr ? t.job.out->buffer(rest) : nullptr;
      round_words += rest;
    }
    if (pieces.empty() && side_items == 0) return;
    auto lane = [&](std::size_t i) {
      Piece& p = pieces[i];
      const Todo& t = todo[owner[i]];
      return lane_at(*t.job.g, p.begin, p, head, t.buf != nullptr ? t.buf + p.begin : nullptr);
    };
    const bool parallel = side_items > 0 || round_words >= kSerialWords;
    const std::size_t n_pieces = pieces.size();
    if (split.decoder) {
      for (const Todo& t : todo)
        if (t.n > 0) split.decoder(*t.job.g, pieces.data() + t.first, t.n, head, t.buf);
      parallel_items(threads, side_items, true, side.run);
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
        pieces.resize(groups * 4, Piece{});  // begin = end = 0: nothing to decode
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
        double* out = job.job.out != nullptr ? job.job.out->buffer(left) : nullptr;
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

// Row values [i, i + d_k) of a run as one pointer: into the buffer that holds them when one
// span does, else copied into `scratch` (d_k values; rows cross spans at the pieces' joins).
// Rows are asked for in increasing order from value `first` on: the span of the last row asked
// is kept, not searched for per row (rows may be as short as d_k = 2).
class Rows {
 public:
  Rows(const Normals& v, std::uint64_t first)
      : it_(std::upper_bound(v.spans.begin(), v.spans.end(), first,
                             [](std::uint64_t x, const Span& s) { return x < s.first; }) -
            1) {}
  const double* values(std::uint64_t i, std::uint32_t d_k, double* scratch) {
    while (i >= it_->first + it_->n) ++it_;
    if (i + d_k <= it_->first + it_->n) return it_->p + (i - it_->first);
    auto it = it_;
    for (std::uint64_t j = 0; j < d_k; ++it) {
      const std::uint64_t from = i + j - it->first,
                          n = std::min<std::uint64_t>(d_k - j, it->n - from);
      std::copy(it->p + from, it->p + from + n, scratch + j);
      j += n;
    }
    return scratch;
  }

 private:
  std::vector<Span>::const_iterator it_;
};

// Eight rows' dot products a[i] . b[i] (d_k values each) into out[0 .. 8), each summed from
// j = 0 in order with a rounded product per term (as the sequential loop sums it): the products
// of eight j's are taken along each row, the 8 x 8 block is transposed, and its columns are added
// to the eight sums in order, one vector add per j. GCC's vector extensions: each level's copy
// is compiled for its ISA (one AVX-512 register, two AVX2 ones, four SSE2 ones).
using V8 = double __attribute__((vector_size(64)));
ATTN_INLINE V8 load8(const double* p) {
  V8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
ATTN_INLINE void dots8_body(const double* const* a, const double* const* b, std::uint32_t d_k,
                            double* out) {
  V8 d = {};
  std::uint32_t j = 0;
#if __has_builtin(__builtin_shufflevector)  // GCC 12 and later, clang; else the loop below
  for (; j + 8 <= d_k; j += 8) {
    V8 p[8], t[8], u[8], c[8];  // p[i][x]: row i's product at j + x; c[x][i] = p[i][x]
    for (int i = 0; i < 8; ++i) p[i] = load8(a[i] + j) * load8(b[i] + j);
    for (int i = 0; i < 8; i += 2) {  // t[i]: p[i], p[i+1] at even x; t[i+1]: at odd x
      t[i] = __builtin_shufflevector(p[i], p[i + 1], 0, 8, 2, 10, 4, 12, 6, 14);
      t[i + 1] = __builtin_shufflevector(p[i], p[i + 1], 1, 9, 3, 11, 5, 13, 7, 15);
    }
    for (int i : {0, 1, 4, 5}) {  // u[i]: rows i&~3 .. +3 at x = i&1 and 4 + (i&1); u[i+2]: +2
      u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 2] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    for (int x = 0; x < 4; ++x) {  // rows 0-3 from u[x], rows 4-7 from u[x + 4]
      c[x] = __builtin_shufflevector(u[x], u[x + 4], 0, 1, 2, 3, 8, 9, 10, 11);
      c[x + 4] = __builtin_shufflevector(u[x], u[x + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
    for (int x = 0; x < 8; ++x) d += c[x];
  }
#endif
  for (; j < d_k; ++j)
    for (int i = 0; i < 8; ++i) d[i] += a[i][j] * b[i][j];
  for (int i = 0; i < 8; ++i) out[i] = d[i];
}
ATTN_CPU_LEVELS(void, dots8,
                (const double* const* a, const double* const* b, std::uint32_t d_k, double* out),
                (a, b, d_k, out))

// Moments of `rows` rows: row r's dot is q[qrow0 + r] . k[krow0 + r], summed from j = 0 in order
// (as the sequential loop sums it), eight rows at once (dots8); q and k hold their waves' rows.
Moments chunk_dots(const Normals& q, std::uint64_t qrow0, const Normals& k, std::uint64_t krow0,
                   std::uint64_t rows, std::uint32_t d_k) {
  constexpr int kRows = 8;
  Moments m;
  std::vector<double> scratch(2 * kRows * static_cast<std::size_t>(d_k));
  Rows qr(q, qrow0 * d_k), kr(k, krow0 * d_k);
  const double *a[kRows], *b[kRows];
  std::uint64_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    for (int i = 0; i < kRows; ++i) {
      a[i] = qr.values((qrow0 + r + i) * d_k, d_k, scratch.data() + i * d_k);
      b[i] = kr.values((krow0 + r + i) * d_k, d_k, scratch.data() + (kRows + i) * d_k);
    }
    double d[kRows];
    dots8(a, b, d_k, d);
    for (int i = 0; i < kRows; ++i) m.push(d[i]);
  }
  for (; r < rows; ++r) {
    const double* x = qr.values((qrow0 + r) * d_k, d_k, scratch.data());
    const double* y = kr.values((krow0 + r) * d_k, d_k, scratch.data() + d_k);
    double dot = 0;
    for (std::uint32_t j = 0; j < d_k; ++j) dot += x[j] * y[j];
    m.push(dot);
  }
  return m;
}

}  // namespace

struct NumpyStream::Buffers {
  Normals q[2], k[2];  // two waves of each: one being decoded while the other's dots are taken
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
    bind_this_thread();
    Piece& p = pieces[i];
    decode_piece(g0, p.begin, p, head, values != nullptr ? values + p.begin : nullptr);
  }
}

std::vector<double> parallel_normals(Pcg64& g, std::uint64_t count, const StreamSplit& split) {
  Normals v;
  decode({Job{&g, count, &v}}, split);
  std::vector<double> out(count);
  for (const Span& s : v.spans)
    std::copy(s.p, s.p + s.n, out.begin() + static_cast<std::ptrdiff_t>(s.first));
  return out;
}

Moments NumpyStream::next_block(std::uint64_t samples, std::uint32_t d_k, Monitor& monitor) {
  const std::uint64_t rows_per_chunk = std::max<std::uint64_t>(1, 65536 / d_k);
  const std::uint64_t sized = auto_wave(samples * d_k);
  const std::uint64_t wave = split_.wave_normals > 0 ? split_.wave_normals : sized;
  const std::uint64_t wave_rows =
      std::max<std::uint64_t>(1, wave / (rows_per_chunk * d_k)) * rows_per_chunk;

  // Progress: the block's 2 N d_k normals used, reported in step with the normals decoded
  // (3 N d_k when q is located and decoded again), so that time estimates hold.
  const bool keep_q = samples <= wave_rows;
  const double used = 2.0 * static_cast<double>(samples) * d_k;
  const double per_decoded = 2.0 / (keep_q ? 2.0 : 3.0);
  double reported = 0;
  const auto decoded = [&](std::uint64_t normals) {
    const double u = per_decoded * static_cast<double>(normals);
    monitor.advance(u);
    reported += u;
  };

  Pcg64 gq = gen_, gk = gen_;
  Normals* q = bufs_->q;
  Normals* k = bufs_->k;
  q[0].clear();
  if (keep_q) {  // q fits: decode it once and keep it; k starts where it ends
    decode({Job{&gk, samples * d_k, &q[0]}}, split_);
    decoded(samples * d_k);
  } else {  // locate k's start (q is decoded again, a wave at a time, below)
    // Counting keeps no values: 16 waves a call (fewer rounds and joins), a few ms apiece.
    const std::uint64_t locate_rows = 16 * wave_rows;
    for (std::uint64_t r = 0; r < samples; r += locate_rows) {
      monitor.stop_point();
      const std::uint64_t rows = std::min(locate_rows, samples - r);
      decode({Job{&gk, rows * d_k, nullptr}}, split_);
      decoded(rows * d_k);
    }
  }

  // A k wave's dot products run beside the next wave's decode (SideWork): a chunk of rows per
  // item, merged left to right after it.
  const std::uint64_t k_wave = split_.k_wave_normals > 0 ? split_.k_wave_normals : sized;
  const std::uint64_t k_rows =
      std::max<std::uint64_t>(1, k_wave / (rows_per_chunk * d_k)) * rows_per_chunk;
  struct Dots {
    const Normals* q;
    const Normals* k;
    std::uint64_t k0, krows;  // k0: the k wave's first row in q's wave
  };
  std::vector<Moments> parts;
  auto dots = [&](const Dots& d) {
    parts.assign((d.krows + rows_per_chunk - 1) / rows_per_chunk, Moments{});
    return SideWork{parts.size(), [&parts, d, rows_per_chunk, d_k](std::size_t c) {
                      const std::uint64_t first = c * rows_per_chunk;
                      parts[c] = chunk_dots(*d.q, d.k0 + first, *d.k, first,
                                            std::min(rows_per_chunk, d.krows - first), d_k);
                    }};
  };
  Moments total;
  auto merge_parts = [&](const Dots& d) {
    for (const Moments& m : parts) total = merge(total, m);
    decoded(d.krows * d_k);
  };
  bool pending = false;
  Dots last{};
  std::uint64_t q_waves = 0, k_waves = 0;
  for (std::uint64_t r0 = 0; r0 < samples; r0 += wave_rows) {
    monitor.stop_point();
    const std::uint64_t rows = std::min(wave_rows, samples - r0);
    Normals& qw = keep_q ? q[0] : q[q_waves++ % 2];
    for (std::uint64_t k0 = 0; k0 < rows; k0 += k_rows) {
      monitor.stop_point();
      const std::uint64_t krows = std::min(k_rows, rows - k0);
      Normals& kw = k[k_waves++ % 2];
      kw.clear();
      const SideWork side = pending ? dots(last) : SideWork{};
      const Job kj{&gk, krows * d_k, &kw};
      if (!keep_q && k0 == 0) {  // q's wave and k's first wave in one go
        qw.clear();
        decode({Job{&gq, rows * d_k, &qw}, kj}, split_, side);
      } else {
        decode({kj}, split_, side);
      }
      if (pending) merge_parts(last);
      if (!keep_q && k0 == 0) decoded(rows * d_k);
      last = Dots{&qw, &kw, k0, krows};
      pending = true;
    }
  }
  if (pending) {
    decode({}, split_, dots(last));
    merge_parts(last);
  }
  monitor.advance(used - reported);  // rounding: the block's total exactly
  gen_ = gk;
  return total;
}

}  // namespace attn::dkstd
