// test_dk_std.cpp: the dk-std sampler. The CPU twin's SIMD lanes equal the scalar per-lane code
// the GPU runs (bit for bit); results do not depend on threads or on how chunks are grouped;
// the statistics match the theory (std sqrt(d_k), kurtosis 3 + 6/d_k) and the 95% interval
// covers the truth at least 93% of the time wherever it is printed (none below 1000 samples).
// numpy's stream decoded in parallel equals the sequential stream (and numpy's own draws) bit for
// bit at every split, and the table's blocks equal the sequential procedure for any thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "experiments/dk_std.hpp"
#include "helpers.hpp"
#include "kernels/dk_std.hpp"
#include "kernels/dk_std_numpy.hpp"
#include "table_helpers.hpp"

namespace attn {
namespace {

using test::same_bits;

// The reference: GPU semantics written as scalar host code (lane_moments + merge_lanes).
Moments scalar_chunk(const dk_std::Plan& p, std::uint64_t chunk) {
  Moments lanes[dk_std::kLanes];
  for (unsigned l = 0; l < dk_std::kLanes; ++l) lanes[l] = dk_std::lane_moments(p, chunk, l);
  return dk_std::merge_lanes(lanes);
}

TEST(DkStdSampler, SimdTwinEqualsScalarLanesBitForBit) {
  // Odd and even d_k, d_k above and below the lane width, and a partial last chunk.
  for (std::uint32_t d_k : {1u, 2u, 3u, 7u, 64u, 513u, 4096u}) {
    const dk_std::Plan p = dk_std::make_plan(3 * 256 + 37, d_k, 12345);
    std::vector<Moments> simd(p.chunks());
    dk_std::chunk_moments_cpu(p, 0, p.chunks(), simd.data());
    for (std::uint64_t c = 0; c < p.chunks(); ++c)
      EXPECT_TRUE(same_bits(simd[c], scalar_chunk(p, c))) << "d_k " << d_k << " chunk " << c;
  }
}

// Samples past 2^32: the counter's high word is 1 in some lanes of a chunk and 0 in others
// (the AVX2 copy builds each lane's counter words itself), and the last chunk of a run of
// 2^32 + 300 samples is partial.
TEST(DkStdSampler, SimdTwinEqualsScalarLanesPastTwoTo32Samples) {
  constexpr std::uint64_t kTwo32 = std::uint64_t{1} << 32;
  for (std::uint32_t d_k : {3u, 64u}) {
    const dk_std::Plan p = dk_std::make_plan(kTwo32 + 300, d_k, 77);
    const std::uint64_t across = (kTwo32 - 5) / p.chunk_samples();  // holds samples 2^32 - 5 ..
    for (const std::uint64_t c : {across, p.chunks() - 1}) {
      ASSERT_LT(p.chunk_first(c), kTwo32 + 300);
      Moments simd;
      dk_std::chunk_moments_cpu(p, c, 1, &simd);
      EXPECT_TRUE(same_bits(simd, scalar_chunk(p, c))) << "d_k " << d_k << " chunk " << c;
      EXPECT_GT(simd.n, 0.0);
    }
  }
}

TEST(DkStdSampler, SampleDotIsTheDotOfItsNormals) {
  // q[2j], q[2j+1], k[2j], k[2j+1] come from block j: recompute the dot in double.
  const philox::Key key = philox::key_from_seed(7);
  for (std::uint32_t d_k : {1u, 2u, 5u, 16u}) {
    double dot = 0;
    for (std::uint32_t j = 0; j < (d_k + 1) / 2; ++j) {
      float n[4];
      philox::normals4(key, d_k, 42, j, n);
      dot += double(n[0]) * n[2];
      if (2 * j + 1 < d_k) dot += double(n[1]) * n[3];
    }
    EXPECT_NEAR(dk_std::sample_dot(key, d_k, 42), dot, 1e-5 * (1 + std::fabs(dot))) << d_k;
  }
}

Moments fold(const dk_std::Plan& p, std::uint64_t wave) {
  std::vector<Moments> parts(p.chunks());
  for (std::uint64_t c0 = 0; c0 < p.chunks(); c0 += wave)
    dk_std::chunk_moments_cpu(p, c0, std::min(wave, p.chunks() - c0), parts.data() + c0);
  Moments total;
  for (const auto& m : parts) total = merge(total, m);
  return total;
}

TEST(DkStdSampler, ThreadsAndWavesDoNotChangeTheBits) {
  const dk_std::Plan p = dk_std::make_plan(200000, 16, 3);
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const Moments one = fold(p, 1000);
  omp_set_num_threads(2);
  const Moments two = fold(p, 1000);
  const Moments small_waves = fold(p, 3);
  omp_set_num_threads(before);
  EXPECT_TRUE(same_bits(one, two));
  EXPECT_TRUE(same_bits(one, small_waves));
  EXPECT_EQ(one.n, 200000.0);
}

TEST(DkStdSampler, DifferentSeedsAndDkGiveDifferentStreams) {
  const philox::Key a = philox::key_from_seed(1), b = philox::key_from_seed(2);
  EXPECT_NE(dk_std::sample_dot(a, 8, 0), dk_std::sample_dot(b, 8, 0));
  EXPECT_NE(dk_std::sample_dot(a, 8, 0), dk_std::sample_dot(a, 8, 1));
}

// Theory: Var(q.k) = d_k, kurtosis 3 + 6/d_k. 2e5 samples: std within 5 standard errors.
TEST(DkStdSampler, MomentsMatchTheory) {
  for (std::uint32_t d_k : {1u, 4u, 64u}) {
    const dk_std::Plan p = dk_std::make_plan(200000, d_k, 99);
    const Moments m = fold(p, 64);
    const double kurt = 3.0 + 6.0 / d_k;
    const double se_std = std::sqrt(d_k) * std::sqrt((kurt - 1) / (4.0 * m.n));
    EXPECT_NEAR(m.stddev(), std::sqrt(double(d_k)), 5 * se_std) << d_k;
    EXPECT_NEAR(m.mean, 0.0, 5 * std::sqrt(d_k / m.n)) << d_k;
    EXPECT_NEAR(m.kurtosis(), kurt, 0.1 * kurt) << d_k;
  }
}

// `--rng philox --samples 1e6` gives std within 0.5% of sqrt(d_k) for 2, 64, 512.
TEST(DkStdTable, PhiloxMillionSamplesWithinHalfAPercent) {
  const Table t = test::run_table(
      "dk-std", {{"--rng", "philox"}, {"--samples", "1000000"}, {"--seed", "2024"}});
  ASSERT_EQ(t.rows.size(), 3u);
  for (const auto& r : t.rows) {
    const double d = double(std::get<std::int64_t>(r[t.column("d_k")]));
    const double sd = std::get<double>(r[t.column("std")]);
    EXPECT_LT(std::fabs(sd / std::sqrt(d) - 1), 0.005) << "d_k " << d;
    EXPECT_EQ(std::get<std::string>(r[t.column("rng")]), "philox");
    EXPECT_NEAR(std::get<double>(r[t.column("theory")]), std::sqrt(d), 1e-15);
  }
}

// The 95% interval covers sqrt(d_k) in about 95% of independent runs (binomial: 400 runs,
// expected 380, standard deviation 4.4; accept 360..396).
TEST(DkStdTable, ConfidenceIntervalCoversAbout95Percent) {
  int covered = 0;
  const int runs = 400;
  for (int s = 0; s < runs; ++s) {
    const Table t = test::run_table("dk-std", {{"--rng", "philox"},
                                               {"--samples", "2000"},
                                               {"--d-k", "3"},
                                               {"--seed", std::to_string(1000 + s)}});
    const double lo = std::get<double>(t.rows[0][t.column("std_ci95_low")]);
    const double hi = std::get<double>(t.rows[0][t.column("std_ci95_high")]);
    covered += lo <= std::sqrt(3.0) && std::sqrt(3.0) <= hi;
  }
  EXPECT_GE(covered, 360);
  EXPECT_LE(covered, 396);
}

// The printed 95% interval covers sqrt(d_k) at least 93% of the time wherever
// it is printed, measured over many seeds (Philox) at N = 10, 30, 100, 1000, 10^4 for d_k = 1
// (q.k = a product of two normals, kurtosis 9: the heaviest tail this table has) and d_k = 512.
// Below kMinSamplesForInterval samples no interval is printed.
struct CoverageCase {
  std::uint32_t d_k;
  std::uint64_t n;
  int seeds;
};
double coverage(const CoverageCase& c, double min_samples, int& printed) {
  int covered = 0;
  printed = 0;
  for (int s = 0; s < c.seeds; ++s) {
    const Moments m = fold(dk_std::make_plan(c.n, c.d_k, 700000 + s), 64);
    const auto ci = std_interval(m, min_samples);
    if (!ci) continue;
    ++printed;
    const double truth = std::sqrt(double(c.d_k));
    covered += ci->first <= truth && truth <= ci->second;
  }
  return printed > 0 ? double(covered) / printed : NAN;
}

TEST(DkStdInterval, CoversAtLeast93PercentWhereverPrinted) {
  const CoverageCase cases[] = {{1, 10, 2000},   {1, 30, 2000},    {1, 100, 2000},
                                {1, 1000, 2000}, {1, 10000, 1000}, {512, 10, 1000},
                                {512, 30, 1000}, {512, 100, 1000}, {512, 10000, 200}};
  for (const CoverageCase& c : cases) {
    SCOPED_TRACE("d_k " + std::to_string(c.d_k) + ", N " + std::to_string(c.n));
    int printed = 0;
    const double cov = coverage(c, kMinSamplesForInterval, printed);
    std::printf("d_k %u, N %llu: interval printed in %d of %d runs, coverage %.4f\n", c.d_k,
                static_cast<unsigned long long>(c.n), printed, c.seeds, cov);
    if (c.n < kMinSamplesForInterval) {
      EXPECT_EQ(printed, 0);
    } else {
      EXPECT_EQ(printed, c.seeds);
      EXPECT_GE(cov, 0.93);
      EXPECT_LE(cov, 0.975);  // an interval, not the whole line
    }
  }
}

// Why none is printed below 1000 samples: at d_k = 1 the same interval, printed anyway, covers
// well under 93% at N = 10, 30, 100.
TEST(DkStdInterval, BelowTheThresholdItWouldNotCover) {
  for (std::uint64_t n : {10u, 30u, 100u}) {
    int printed = 0;
    const double cov = coverage({1, n, 2000}, 0, printed);
    std::printf("d_k 1, N %llu: Bonett's interval printed anyway covers %.4f\n",
                static_cast<unsigned long long>(n), cov);
    EXPECT_EQ(printed, 2000) << n;
    EXPECT_LT(cov, 0.93) << n;
  }
}

// 2, 3 and 999 samples: no interval (never a zero-width or a far-off one), and a note saying
// why.
TEST(DkStdInterval, NoneForFewSamplesWithANote) {
  for (const char* n : {"2", "3", "999"}) {
    const Table t =
        test::run_table("dk-std", {{"--rng", "philox"}, {"--samples", n}, {"--d-k", "1"}});
    ASSERT_EQ(t.rows.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<std::monostate>(t.rows[0][t.column("std_ci95_low")])) << n;
    EXPECT_TRUE(std::holds_alternative<std::monostate>(t.rows[0][t.column("std_ci95_high")])) << n;
    bool noted = false;
    for (const auto& note : t.notes)
      noted = noted || note.find("none below 1000") != std::string::npos;
    EXPECT_TRUE(noted) << n;
  }
  const Table t =
      test::run_table("dk-std", {{"--rng", "philox"}, {"--samples", "1000"}, {"--d-k", "1"}});
  const double lo = std::get<double>(t.rows[0][t.column("std_ci95_low")]);
  const double hi = std::get<double>(t.rows[0][t.column("std_ci95_high")]);
  EXPECT_GT(lo, 0);
  EXPECT_LT(lo, hi);
}

// Bonett's interval, by hand from its formula for a small sample with known moments:
// x = 1, 2, 3, 4, 10 (n 5, mean 4, M2 50, M4 1394).
TEST(DkStdInterval, BonettFormulaByHand) {
  Moments m;
  for (double x : {1.0, 2.0, 3.0, 4.0, 10.0}) m.push(x);
  const auto ci = std_interval(m, 0);
  ASSERT_TRUE(ci);
  const double z = 1.959963984540054, n = 5, s2 = 50.0 / 4, g = 5 * 1394.0 / (50.0 * 50.0);
  const double c = n / (n - z), se = c * std::sqrt((g - (n - 3) / n) / (n - 1));
  EXPECT_NEAR(ci->first, std::sqrt(c * s2 * std::exp(-z * se)), 1e-12);
  EXPECT_NEAR(ci->second, std::sqrt(c * s2 * std::exp(z * se)), 1e-12);
}

// Progress counts what the table uses, 2 N d_k normals per d_k, so a run ends at 100%.
TEST(DkStdNumpy, ProgressCountsTheNormalsUsed) {
  struct Counter : Monitor {
    double units = 0;
    void advance(double u) override { units += u; }
  } counter;
  dk_std::NumpyStream stream(0);
  for (std::uint32_t d_k : {3u, 200u}) {
    counter.units = 0;
    (void)stream.next_block(1000, d_k, counter);
    EXPECT_DOUBLE_EQ(counter.units, 2.0 * 1000 * d_k) << d_k;
  }
}

// When q is located (counted) and decoded again, progress moves during the locating too, in
// step with the normals decoded (a third of the work), so that time estimates hold: the
// locating pass's waves report a third of the block's total.
TEST(DkStdNumpy, ProgressMovesWhileLocatingQ) {
  struct Recorder : Monitor {
    std::vector<double> steps;
    void advance(double u) override { steps.push_back(u); }
  } rec;
  dk_std::StreamSplit s;
  s.wave_normals = 4096;  // d_k 200: waves of 327 rows (65536 / 200 rows per chunk)
  dk_std::NumpyStream stream(0, s);
  const std::uint64_t n = 20000, d_k = 200, wave_rows = 327;
  (void)stream.next_block(n, d_k, rec);
  const std::size_t locate_waves = (n + 16 * wave_rows - 1) / (16 * wave_rows);  // 16 a call
  ASSERT_GT(locate_waves, 3u);
  ASSERT_GT(rec.steps.size(), locate_waves);
  double located = 0, total = 0;
  for (std::size_t i = 0; i < rec.steps.size(); ++i) {
    total += rec.steps[i];
    if (i < locate_waves) located += rec.steps[i];
  }
  EXPECT_DOUBLE_EQ(total, 2.0 * n * d_k);
  EXPECT_NEAR(located, total / 3, 1e-9 * total);
}

// ---- numpy's stream in parallel --------------------------------------------------------------

std::vector<double> sequential_normals(numpy_rng::Pcg64& g, std::uint64_t count) {
  std::vector<double> v(count);
  for (double& x : v) x = numpy_rng::standard_normal(g);
  return v;
}

// The same bits as count sequential calls, and the generator left at the same place.
void expect_parallel_equals_sequential(std::uint64_t seed, std::uint64_t count,
                                       const dk_std::StreamSplit& split) {
  numpy_rng::Pcg64 a(seed), b(seed);
  const std::vector<double> want = sequential_normals(a, count);
  const std::vector<double> got = dk_std::parallel_normals(b, count, split);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(count == 0 || std::memcmp(got.data(), want.data(), count * sizeof(double)) == 0)
      << "seed " << seed << " pieces of " << split.piece_words << " words, " << split.threads
      << " threads, head " << split.head_starts;
  EXPECT_TRUE(a == b) << "the stream should stand after the last normal";
}

// Tens of thousands of normals (hundreds of wedge and tail rejections), cut every way: pieces
// of 1 word (every word a split point), a few words, thousands; 1 to 4 threads; a resync that
// gives up after 1 or 2 recorded starts (the decode-again path) or after 64.
TEST(DkStdNumpy, ParallelNormalsEqualTheSequentialStreamForEverySplit) {
  for (std::uint64_t piece_words : {1ull, 2ull, 3ull, 7ull, 100ull, 4096ull, 0ull})
    for (int head : {1, 2, 64})
      for (int threads : {1, 2, 3, 4}) {
        dk_std::StreamSplit s;
        s.piece_words = piece_words;
        s.head_starts = head;
        s.threads = threads;
        expect_parallel_equals_sequential(7, piece_words != 0 && piece_words < 8 ? 20000 : 100000,
                                          s);
      }
  expect_parallel_equals_sequential(0, 1, {});
  expect_parallel_equals_sequential(0, 0, {});
  expect_parallel_equals_sequential(99, 1000003, {});  // several rounds of automatic pieces
}

// A piece that begins inside a rejected normal (a normal that took more than one word): the
// speculative decode starts mid-normal and must resync with the previous piece.
TEST(DkStdNumpy, SplitInsideARejectionResyncs) {
  dk_std::CountedPcg64 c{numpy_rng::Pcg64(7), 0};  // counts words: a normal starts at one
  std::vector<std::pair<std::uint64_t, std::uint64_t>> multi;  // (start word, words taken)
  for (int i = 0; i < 20000 && multi.size() < 8; ++i) {
    const std::uint64_t start = c.pos;
    (void)numpy_rng::standard_normal(c);
    if (c.pos - start > 1) multi.emplace_back(start, c.pos - start);
  }
  ASSERT_GE(multi.size(), 8u) << "expected about 1% of normals to take more than one word";
  for (const auto& [start, words] : multi)
    for (std::uint64_t inside = 1; inside < words; ++inside)
      for (int head : {1, 64}) {
        dk_std::StreamSplit s;
        s.piece_words = start + inside;  // piece 1 begins `inside` words into that normal
        s.head_starts = head;
        s.threads = 2;
        expect_parallel_equals_sequential(7, 3 * (start + words) + 100, s);
      }
}

// The AVX-512 decoder accepts a lane at once only when rabs >> 36 < kZigguratK[idx] >> 36; a
// word whose top bits tie (p = 2^-16) goes to the exact test, accepted or not. Such words, both
// ways, inside the stretch decoded (at every level: the ctest variants run this at v4, v3 and
// baseline).
TEST(DkStdNumpy, WordsAtTheAcceptanceThresholdTakeTheExactTest) {
  numpy_rng::Pcg64 g(99);
  std::uint64_t tie_accepted = 0, tie_rejected = 0, words = 0;
  while ((tie_accepted < 3 || tie_rejected < 3) && words < (std::uint64_t{1} << 23)) {
    const std::uint64_t r = g.next_uint64();
    ++words;
    const int idx = static_cast<int>(r & 0xff);
    const std::uint64_t rabs = (r >> 9) & 0x000fffffffffffffull;
    const std::uint64_t k = zig::kZigguratK[idx];
    if ((rabs >> 36) != (k >> 36)) continue;
    ++(rabs < k ? tie_accepted : tie_rejected);
  }
  ASSERT_GE(tie_accepted, 3u) << "expected about one tie in 65536 words";
  ASSERT_GE(tie_rejected, 3u);
  dk_std::StreamSplit s;
  s.threads = 2;
  expect_parallel_equals_sequential(99, words, s);  // normals <= words: covers them all
}

// numpy's own draws, decoded in parallel: standard_normal(300000) of default_rng(2024).
TEST(DkStdNumpy, ParallelNormalsMatchFreshNumpy) {
  if (!test::have_numpy()) GTEST_SKIP() << "python3-numpy is not installed";
  constexpr int kDraws = 300000;
  const std::string hex = test::run_python(
      "import numpy as np\n"
      "print(np.random.default_rng(2024).standard_normal(" +
      std::to_string(kDraws) + ").astype('<f8').tobytes().hex())\n");
  ASSERT_GE(hex.size(), std::size_t(kDraws) * 16);
  numpy_rng::Pcg64 g(2024);
  dk_std::StreamSplit s;
  s.threads = 2;
  s.piece_words = 10007;
  const std::vector<double> got = dk_std::parallel_normals(g, kDraws, s);
  int mismatches = 0;
  for (int k = 0; k < kDraws; ++k) {
    const double expected = test::f64_from_hex(hex, std::size_t(k));
    if (got[k] != expected && ++mismatches <= 5)
      ADD_FAILURE() << "draw " << k << ": " << got[k] << " != numpy " << expected;
  }
  EXPECT_EQ(mismatches, 0);
}

// The decoder hook (StreamSplit::decoder, how the GPU takes a round's pieces), served here by
// the plain CPU loop over decode_piece: the same bits, at the GPU's piece size and head, at
// small pieces where many begin inside a rejected normal, and with every piece decoded again
// (head 1).
TEST(DkStdNumpy, PieceDecoderHookGivesTheSameBits) {
  for (const auto& [words, head] :
       std::vector<std::pair<std::uint64_t, int>>{{256, 16}, {3, 1}, {1000, 1}, {0, 64}}) {
    dk_std::StreamSplit s;
    s.piece_words = words;
    s.head_starts = head;
    s.decoder = [](const numpy_rng::Pcg64& g0, dk_std::Piece* p, std::size_t n, int h, double* v) {
      dk_std::decode_pieces_cpu(g0, p, n, h, v, 2);
    };
    expect_parallel_equals_sequential(11, words == 3 ? 20000 : 300000, s);
  }
}

// A decoder whose pieces cannot be true (what a device's decoder gives when its results are read
// before the device wrote them: the NaN bytes of fresh device memory, or another call's pieces)
// is refused with an error naming the piece; joined, its counts would run the stream on without
// end.
TEST(DkStdNumpy, ImpossiblePiecesFromADecoderAreRefused) {
  // Never written (the NaN bytes), more normals than words, the next start inside the piece,
  // another piece's range.
  const std::vector<std::function<void(dk_std::Piece&)>> corrupt = {
      [](dk_std::Piece& p) { std::memset(static_cast<void*>(&p), 0xff, sizeof p); },
      [](dk_std::Piece& p) { p.n = p.end - p.begin + 1; },
      [](dk_std::Piece& p) { p.next = p.end - 1; },
      [](dk_std::Piece& p) { p.begin += 7, p.end += 7; },
  };
  for (std::size_t c = 0; c < corrupt.size(); ++c) {
    dk_std::StreamSplit s;
    s.piece_words = 256;
    s.decoder = [&](const numpy_rng::Pcg64& g0, dk_std::Piece* p, std::size_t n, int h, double* v) {
      dk_std::decode_pieces_cpu(g0, p, n, h, v, 1);
      corrupt[c](p[n / 2]);
    };
    numpy_rng::Pcg64 g(5);
    try {
      (void)dk_std::parallel_normals(g, 5000, s);
      ADD_FAILURE() << "corruption " << c << " was joined";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("impossible piece"), std::string::npos) << e.what();
    }
  }
}

// The table's blocks against the sequential procedure they replace (q's N d_k normals, then
// k's, rows in order, Moments per chunk of max(1, 65536 / d_k) rows merged left to right), bit
// for bit, for several blocks of one stream, any thread count, kept or re-decoded q.
Moments sequential_block(numpy_rng::Pcg64& g, std::uint64_t n, std::uint32_t d_k) {
  const std::vector<double> q = sequential_normals(g, n * d_k);
  const std::uint64_t rows_per_chunk = std::max<std::uint64_t>(1, 65536 / d_k);
  Moments total, m;
  for (std::uint64_t r = 0; r < n; ++r) {
    double dot = 0;
    for (std::uint32_t j = 0; j < d_k; ++j) dot += q[r * d_k + j] * numpy_rng::standard_normal(g);
    m.push(dot);
    if ((r + 1) % rows_per_chunk == 0 || r + 1 == n) {
      total = merge(total, m);
      m = Moments{};
    }
  }
  return total;
}

TEST(DkStdNumpy, BlocksEqualTheSequentialProcedureForAnyThreadsAndWaves) {
  const std::vector<std::pair<std::uint64_t, std::uint32_t>> blocks = {
      {3000, 2}, {700, 64}, {301, 512}, {50, 3}, {2000, 33}};
  numpy_rng::Pcg64 ref(5);
  std::vector<Moments> want;
  for (const auto& [n, d_k] : blocks) want.push_back(sequential_block(ref, n, d_k));
  for (int threads : {1, 2, 3})
    for (std::uint64_t wave : {0ull, 4096ull, 70000ull})     // 0: q kept whole
      for (std::uint64_t k_wave : {0ull, 1ull, 20000ull}) {  // 1: one chunk of rows per k wave
        dk_std::StreamSplit s;
        s.threads = threads;
        s.wave_normals = wave;
        s.k_wave_normals = k_wave;
        s.piece_words = wave == 4096 ? 1000 : 0;
        dk_std::NumpyStream stream(5, s);
        for (std::size_t b = 0; b < blocks.size(); ++b)
          EXPECT_TRUE(same_bits(
              stream.next_block(blocks[b].first, blocks[b].second, silent_monitor()), want[b]))
              << "block " << b << ", " << threads << " threads, wave " << wave << ", k wave "
              << k_wave;
      }
}

// The lesson's own blocks with the default split (waves sized by the block, q located and
// decoded again), after a first block that keeps q.
TEST(DkStdNumpy, TheLessonsBlocksEqualTheSequentialProcedure) {
  const std::vector<std::pair<std::uint64_t, std::uint32_t>> blocks = {
      {10000, 2}, {10000, 64}, {10000, 512}};
  numpy_rng::Pcg64 ref(0);
  dk_std::NumpyStream stream(0);
  for (const auto& [n, d_k] : blocks)
    EXPECT_TRUE(
        same_bits(stream.next_block(n, d_k, silent_monitor()), sequential_block(ref, n, d_k)))
        << "d_k " << d_k;
}

// The blocks with the GPU's split (dk_std::device_split, what a CUDA backend uses), its pieces
// decoded here by the CPU loop.
TEST(DkStdNumpy, BlocksWithTheGpuSplitOnTheCpuLoop) {
  const std::vector<std::pair<std::uint64_t, std::uint32_t>> blocks = {{3000, 2}, {301, 512}};
  numpy_rng::Pcg64 ref(5);
  std::vector<Moments> want;
  for (const auto& [n, d_k] : blocks) want.push_back(sequential_block(ref, n, d_k));
  dk_std::NumpyStream stream(
      5, dk_std::device_split([](const numpy_rng::Pcg64& g0, dk_std::Piece* p, std::size_t n, int h,
                                 double* v) { dk_std::decode_pieces_cpu(g0, p, n, h, v); }));
  for (std::size_t b = 0; b < blocks.size(); ++b)
    EXPECT_TRUE(
        same_bits(stream.next_block(blocks[b].first, blocks[b].second, silent_monitor()), want[b]))
        << "block " << b;
}

// auto picks the lesson's numpy stream up to 1e8 normals and Philox above.
TEST(DkStdTable, AutoPicksNumpyUpTo1e8Normals) {
  EXPECT_TRUE(dk_std_uses_numpy("auto", 2.0 * 10000 * (2 + 64 + 512)));  // the lesson
  EXPECT_TRUE(dk_std_uses_numpy("auto", 1e8));
  EXPECT_FALSE(dk_std_uses_numpy("auto", 1e8 + 2));
  EXPECT_TRUE(dk_std_uses_numpy("numpy", 1e12));
  EXPECT_FALSE(dk_std_uses_numpy("philox", 10));
  const Table t = test::run_table("dk-std", {{"--samples", "1000"}, {"--d-k", "4"}});
  EXPECT_EQ(std::get<std::string>(t.rows[0][t.column("rng")]), "numpy");
  EXPECT_NE(t.run["generator"].get<std::string>().find("numpy"), std::string::npos);
}

}  // namespace
}  // namespace attn
