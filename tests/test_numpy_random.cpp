// test_numpy_random.cpp: numpy_random.hpp against numpy's own draws.
//
// Two independent sources: the golden files tests/data/numpy_default_rng.json and
// numpy_integers.json (numpy 1.24.2, see tests/data/README.md) and, when Debian's python3-numpy is
// installed, fresh draws made at test time (those tests skip otherwise). The ziggurat tables
// (ziggurat_tables.inc) are numpy's exact tables, and the ziggurat follows numpy's code step for
// step, so every comparison of a double is exact (EXPECT_EQ on doubles, no tolerance): one
// differing bit is a failure.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "helpers.hpp"
#include "kernels/numpy_random/numpy_random.hpp"
#include "kernels/numpy_random/ziggurat_tables.hpp"

namespace attn {
namespace {

using numpy_rng::Pcg64;
using numpy_rng::SeedSequence;

std::uint64_t parse_u64(const std::string& s) { return std::stoull(s, nullptr, 10); }

// Decimal repr and float.hex() both round-trip exactly through strtod.
double parse_double(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  EXPECT_EQ(end, s.c_str() + s.size()) << "not a number: " << s;
  return v;
}

// Whitespace-separated tokens of a Python program's output.
std::vector<std::string> tokens(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

// A bit generator that counts what the ziggurat asks of it, to show which paths ran.
struct CountingPcg64 {
  Pcg64 g;
  long uint64_calls = 0, double_calls = 0;
  explicit CountingPcg64(std::uint64_t seed) : g(seed) {}
  std::uint64_t next_uint64() {
    ++uint64_calls;
    return g.next_uint64();
  }
  double next_double() {
    ++double_calls;
    return g.next_double();
  }
};

const nlohmann::json& golden() {
  static const nlohmann::json j = test::test_data("numpy_default_rng.json");
  return j;
}

// ---- Golden file ----------------------------------------------------------------------------

TEST(NumpyGolden, FileHasTheExpectedShape) {
  const auto& j = golden();
  ASSERT_TRUE(j.contains("raw_uint64"));
  ASSERT_TRUE(j.contains("standard_normal"));
  ASSERT_TRUE(j.contains("normal_2x2_x3"));
  EXPECT_GE(j["raw_uint64"].size(), 6u);
  EXPECT_TRUE(j["raw_uint64"].contains("4294967301"));
  EXPECT_TRUE(j["raw_uint64"].contains("18446744073709551615"));
  EXPECT_EQ(j["standard_normal"]["0"].size(), 2000u);
  EXPECT_EQ(j["standard_normal"]["1"].size(), 2000u);
}

// Every seed in the file, including 2^32 + 5 and 2^64 - 1, whose SeedSequence entropy has two
// 32-bit words.
TEST(NumpyPcg64, RawUint64MatchesGoldenForEverySeed) {
  const auto& raw = golden()["raw_uint64"];
  int seeds = 0, multiword = 0;
  for (const auto& [seed_text, values] : raw.items()) {
    const std::uint64_t seed = parse_u64(seed_text);
    if (seed >> 32) ++multiword;
    Pcg64 g(seed);
    ASSERT_FALSE(values.empty());
    for (std::size_t i = 0; i < values.size(); ++i)
      ASSERT_EQ(g.next_uint64(), parse_u64(values[i].get<std::string>()))
          << "seed " << seed_text << " draw " << i;
    ++seeds;
  }
  EXPECT_GE(seeds, 6);
  EXPECT_GE(multiword, 2);
}

TEST(NumpyPcg64, SameSeedSameStreamDifferentSeedDifferentStream) {
  Pcg64 a(12345), b(12345), c(12346);
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.next_uint64(), b.next_uint64());
  Pcg64 fresh(12345);
  EXPECT_FALSE(a == fresh);  // the state moved on
}

// Seeds 0 and 1, 2000 draws each, bit for bit. 2000 draws take the wedge path about 20 times;
// the counting generator shows that some did (more 64-bit draws than normals).
TEST(NumpyStandardNormal, MatchesGoldenExactlyForSeeds0And1) {
  for (const char* seed_text : {"0", "1"}) {
    const auto& values = golden()["standard_normal"][seed_text];
    ASSERT_EQ(values.size(), 2000u);
    CountingPcg64 g(parse_u64(seed_text));
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double expected = parse_double(values[i].get<std::string>());
      ASSERT_EQ(numpy_rng::standard_normal(g), expected) << "seed " << seed_text << " draw " << i;
    }
    EXPECT_GT(g.uint64_calls, 2000) << "no draw left the ziggurat's first comparison";
  }
}

// The lesson's draws: rng.normal(size=(2, 2)) three times on one generator, row-major.
TEST(NumpyNormal, Normal2x2ThreeTimesMatchesGoldenForSeeds0To3) {
  const auto& all = golden()["normal_2x2_x3"];
  for (int seed = 0; seed < 4; ++seed) {
    const auto& draws = all[std::to_string(seed)];
    ASSERT_EQ(draws.size(), 3u);
    Pcg64 g(static_cast<std::uint64_t>(seed));
    for (int call = 0; call < 3; ++call)
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c)
          EXPECT_EQ(numpy_rng::normal(g), parse_double(draws[call][r][c].get<std::string>()))
              << "seed " << seed << " call " << call << " [" << r << "][" << c << "]";
  }
}

// The golden normals of seed 0 begin with its 2x2 draws: one Generator, one stream.
TEST(NumpyNormal, Normal2x2DrawsAreTheStandardNormalStream) {
  const auto& n = golden()["standard_normal"]["0"];
  const auto& d = golden()["normal_2x2_x3"]["0"];
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(parse_double(d[i / 4][(i / 2) % 2][i % 2].get<std::string>()),
              parse_double(n[i].get<std::string>()));
}

// ---- Fresh numpy draws ----------------------------------------------------------------------

#define REQUIRE_NUMPY() \
  if (!test::have_numpy()) GTEST_SKIP() << "Debian's python3-numpy is not installed"

const std::vector<std::uint64_t> kFreshSeeds = {7ull, 99ull, (1ull << 40) + 3, (1ull << 63) + 5};

// SeedSequence's pool and generate_state(4, uint64), against numpy's SeedSequence.
TEST(NumpySeedSequence, PoolAndStateMatchNumpy) {
  REQUIRE_NUMPY();
  std::vector<std::uint64_t> seeds = kFreshSeeds;
  seeds.insert(seeds.end(), {0ull, 1ull, 0xffffffffull, 0x100000000ull, ~0ull});
  std::string program = "import numpy as np\n";
  for (std::uint64_t s : seeds)
    program += "ss = np.random.SeedSequence(" + std::to_string(s) +
               ")\nprint(*[int(v) for v in ss.pool], *[int(v) for v in "
               "ss.generate_state(4, np.uint64)])\n";
  const auto t = tokens(test::run_python(program));
  ASSERT_EQ(t.size(), seeds.size() * 8);
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const SeedSequence ss(seeds[i]);
    std::uint64_t state[4];
    ss.generate_state(state, 4);
    for (int w = 0; w < 4; ++w) {
      EXPECT_EQ(ss.pool(w), parse_u64(t[8 * i + w])) << "seed " << seeds[i] << " pool " << w;
      EXPECT_EQ(state[w], parse_u64(t[8 * i + 4 + w])) << "seed " << seeds[i] << " state " << w;
    }
  }
}

TEST(NumpyPcg64, RawUint64MatchesFreshNumpy) {
  REQUIRE_NUMPY();
  constexpr int kDraws = 1000;
  std::string program = "import numpy as np\n";
  for (std::uint64_t s : kFreshSeeds)
    program += "print(*[int(v) for v in np.random.default_rng(" + std::to_string(s) +
               ").bit_generator.random_raw(" + std::to_string(kDraws) + ")])\n";
  const auto t = tokens(test::run_python(program));
  ASSERT_EQ(t.size(), kFreshSeeds.size() * kDraws);
  for (std::size_t i = 0; i < kFreshSeeds.size(); ++i) {
    Pcg64 g(kFreshSeeds[i]);
    for (int k = 0; k < kDraws; ++k)
      ASSERT_EQ(g.next_uint64(), parse_u64(t[i * kDraws + k]))
          << "seed " << kFreshSeeds[i] << " draw " << k;
  }
}

// advance(n) is n steps: checked against stepping one word at a time.
TEST(NumpyPcg64, AdvanceEqualsStepping) {
  for (std::uint64_t seed : {0ull, 7ull, (1ull << 63) + 5}) {
    Pcg64 stepped(seed);
    for (std::uint64_t n : {0ull, 1ull, 2ull, 3ull, 64ull, 1000ull}) {
      Pcg64 jumped(seed);
      jumped.advance(n);
      Pcg64 s(seed);
      for (std::uint64_t i = 0; i < n; ++i) (void)s.next_uint64();
      EXPECT_TRUE(jumped == s) << "seed " << seed << " n " << n;
      EXPECT_EQ(jumped.next_uint64(), s.next_uint64());
    }
  }
}

// advance(n) against numpy's own PCG64.advance, far beyond what stepping can check.
TEST(NumpyPcg64, AdvanceMatchesFreshNumpy) {
  REQUIRE_NUMPY();
  const std::vector<std::pair<std::string, numpy_rng::u128>> jumps = {
      {"12345", 12345},
      {"2**40 + 3", (numpy_rng::u128{1} << 40) + 3},
      {"2**64 + 5", (numpy_rng::u128{1} << 64) + 5},
      {"2**127 + 11", (numpy_rng::u128{1} << 127) + 11}};
  std::string program = "import numpy as np\n";
  for (std::uint64_t s : kFreshSeeds)
    for (const auto& j : jumps)
      program += "g = np.random.default_rng(" + std::to_string(s) + ").bit_generator\ng.advance(" +
                 j.first + ")\nprint(*[int(v) for v in g.random_raw(2)])\n";
  const auto t = tokens(test::run_python(program));
  ASSERT_EQ(t.size(), kFreshSeeds.size() * jumps.size() * 2);
  std::size_t i = 0;
  for (std::uint64_t s : kFreshSeeds)
    for (const auto& j : jumps) {
      Pcg64 g(s);
      g.advance(j.second);
      EXPECT_EQ(g.next_uint64(), parse_u64(t[i++])) << "seed " << s << " advance " << j.first;
      EXPECT_EQ(g.next_uint64(), parse_u64(t[i++])) << "seed " << s << " advance " << j.first;
    }
}

// next_double against rng.random(): (next_uint64 >> 11) 2^-53, exactly.
TEST(NumpyPcg64, NextDoubleMatchesNumpyRandom) {
  REQUIRE_NUMPY();
  constexpr int kDraws = 2000;
  std::string program = "import numpy as np\n";
  for (std::uint64_t s : kFreshSeeds)
    program += "print(*[float(v).hex() for v in np.random.default_rng(" + std::to_string(s) +
               ").random(" + std::to_string(kDraws) + ")])\n";
  const auto t = tokens(test::run_python(program));
  ASSERT_EQ(t.size(), kFreshSeeds.size() * kDraws);
  for (std::size_t i = 0; i < kFreshSeeds.size(); ++i) {
    Pcg64 g(kFreshSeeds[i]);
    for (int k = 0; k < kDraws; ++k) {
      const double x = g.next_double();
      ASSERT_EQ(x, parse_double(t[i * kDraws + k])) << "seed " << kFreshSeeds[i] << " draw " << k;
      ASSERT_GE(x, 0.0);
      ASSERT_LT(x, 1.0);
    }
  }
}

// 5000 standard normals for each of four further seeds (one above 2^32, one above 2^63),
// exactly. About 50 of each 5000 take the wedge path, and seeds 7 and 2^40 + 3 reach the tail
// (|x| > R = 3.654) within their first 5000 draws (numpy says so; the test checks it).
TEST(NumpyStandardNormal, FiveThousandMatchFreshNumpyExactly) {
  REQUIRE_NUMPY();
  constexpr int kDraws = 5000;
  std::string program = "import numpy as np\n";
  for (std::uint64_t s : kFreshSeeds)
    program += "print(*[float(v).hex() for v in np.random.default_rng(" + std::to_string(s) +
               ").standard_normal(" + std::to_string(kDraws) + ")])\n";
  const auto t = tokens(test::run_python(program));
  ASSERT_EQ(t.size(), kFreshSeeds.size() * kDraws);
  int tail = 0;
  for (std::size_t i = 0; i < kFreshSeeds.size(); ++i) {
    CountingPcg64 g(kFreshSeeds[i]);
    for (int k = 0; k < kDraws; ++k) {
      const double expected = parse_double(t[i * kDraws + k]);
      ASSERT_EQ(numpy_rng::standard_normal(g), expected)
          << "seed " << kFreshSeeds[i] << " draw " << k;
      if (std::fabs(expected) > zig::kR) ++tail;
    }
    EXPECT_GT(g.uint64_calls, kDraws) << "seed " << kFreshSeeds[i] << ": no wedge or tail draw";
    EXPECT_GT(g.double_calls, 0) << "seed " << kFreshSeeds[i] << ": no wedge or tail draw";
  }
  EXPECT_GT(tail, 0) << "no tail draw among the compared values";
}

// 200000 draws of seed 7 (about 50 of them in the tail, about 2000 through the wedge), all
// compared exactly; numpy sends them as raw little-endian bytes in hex.
TEST(NumpyStandardNormal, TwoHundredThousandIncludingTailMatchFreshNumpyExactly) {
  REQUIRE_NUMPY();
  constexpr int kDraws = 200000;
  const std::string out = test::run_python(
      "import numpy as np\n"
      "x = np.random.default_rng(7).standard_normal(" +
      std::to_string(kDraws) +
      ")\n"
      "print(x.astype('<f8').tobytes().hex())\n");
  const auto t = tokens(out);
  ASSERT_EQ(t.size(), 1u);
  const std::string& hex = t[0];
  ASSERT_EQ(hex.size(), std::size_t(kDraws) * 16);
  CountingPcg64 g(7);
  int tail = 0, mismatches = 0;
  double largest = 0;
  for (int k = 0; k < kDraws; ++k) {
    const double expected = test::f64_from_hex(hex, std::size_t(k));
    const double got = numpy_rng::standard_normal(g);
    if (got != expected && ++mismatches <= 5)
      ADD_FAILURE() << "draw " << k << ": " << got << " != numpy " << expected;
    if (std::fabs(expected) > zig::kR) ++tail;
    largest = std::fmax(largest, std::fabs(expected));
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GE(tail, 20) << "expected about 2 * 200000 * P(Z > 3.654) = 52 tail draws";
  EXPECT_GT(largest, zig::kR);
  EXPECT_GT(g.double_calls, 1000) << "the wedge path should run about 2000 times";
}

// normal(loc, scale) = loc + scale * standard_normal, as numpy's Generator.normal computes it;
// and one Generator is one stream across calls of different kinds.
TEST(NumpyNormal, LocScaleAndMixedCallsMatchFreshNumpy) {
  REQUIRE_NUMPY();
  const std::string out = test::run_python(
      "import numpy as np\n"
      "r = np.random.default_rng(2024)\n"
      "v = list(r.normal(2.5, 0.3, 50)) + list(r.random(7)) + list(r.standard_normal(20))\n"
      "v += list(r.normal(-1.0, 4.0, size=(3, 3)).ravel())\n"
      "print(*[float(x).hex() for x in v])\n");
  const auto t = tokens(out);
  ASSERT_EQ(t.size(), 50u + 7 + 20 + 9);
  Pcg64 g(2024);
  std::size_t i = 0;
  for (int k = 0; k < 50; ++k, ++i) EXPECT_EQ(numpy_rng::normal(g, 2.5, 0.3), parse_double(t[i]));
  for (int k = 0; k < 7; ++k, ++i) EXPECT_EQ(g.next_double(), parse_double(t[i]));
  for (int k = 0; k < 20; ++k, ++i) EXPECT_EQ(numpy_rng::standard_normal(g), parse_double(t[i]));
  for (int k = 0; k < 9; ++k, ++i) EXPECT_EQ(numpy_rng::normal(g, -1.0, 4.0), parse_double(t[i]));
}

// ---- Generator.integers(0, high, size=n) ----------------------------------------------------

// One call of a case: integers(0, high, size=n), or normal(size=n).
struct Call {
  bool integers;
  std::uint64_t high;
  int n;
};

// The values numpy_random.hpp gives for the calls on one generator, as text: each integer in
// decimal, each normal as the double's exact value (compared exactly below).
std::vector<std::vector<double>> draw_calls(std::uint64_t seed, const std::vector<Call>& calls) {
  Pcg64 g(seed);
  std::vector<std::vector<double>> out;
  for (const Call& c : calls) {
    std::vector<double> v;
    for (int k = 0; k < c.n; ++k)
      v.push_back(c.integers ? static_cast<double>(numpy_rng::integer_below(g, c.high))
                             : numpy_rng::normal(g));
    out.push_back(v);
  }
  return out;
}

// The golden cases: every value, odd sizes whose last word's high half the next call takes,
// high = 1 (no draw), 2^32 (a word a value), ranges with frequent rejections, normals between.
TEST(NumpyIntegers, MatchGoldenDraws) {
  const nlohmann::json j = test::test_data("numpy_integers.json");
  ASSERT_GE(j.at("cases").size(), 50u);
  int values = 0, carried = 0;
  for (const auto& c : j.at("cases")) {
    std::vector<Call> calls;
    for (const auto& call : c.at("calls"))
      calls.push_back(call[0] == "integers" ? Call{true, call[1].get<std::uint64_t>(), call[2]}
                                            : Call{false, 0, call[1]});
    const std::uint64_t seed = parse_u64(c.at("seed").get<std::string>());
    const auto got = draw_calls(seed, calls);
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const auto& want = c.at("results")[k];
      ASSERT_EQ(want.size(), got[k].size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        const double expected = calls[k].integers ? static_cast<double>(want[i].get<std::int64_t>())
                                                  : parse_double(want[i].get<std::string>());
        EXPECT_EQ(got[k][i], expected) << "seed " << seed << " call " << k << " value " << i;
        ++values;
      }
      // An odd number of 32-bit words (2^32: one a value) leaves a kept half to a later call.
      carried += calls[k].integers && calls[k].high == (1ull << 32) && calls[k].n % 2 == 1 &&
                 k + 1 < calls.size();
    }
  }
  EXPECT_GT(values, 500);
  EXPECT_GT(carried, 0) << "no case leaves a kept half word to a later call";
}

// Fresh numpy: random seeds, highs and sizes, integer and normal calls interleaved.
TEST(NumpyIntegers, MatchFreshNumpy) {
  REQUIRE_NUMPY();
  std::mt19937_64 rng(42);
  const std::uint64_t highs[] = {1,          2,
                                 3,          4,
                                 6,          9,
                                 17,         31,
                                 100,        1022,
                                 1u << 20,   (1ull << 31) + 1,
                                 3ull << 30, (1ull << 32) - 1,
                                 1ull << 32};
  std::string program = "import numpy as np\n";
  std::vector<std::pair<std::uint64_t, std::vector<Call>>> cases;
  for (int k = 0; k < 40; ++k) {
    const std::uint64_t seed = k % 2 ? rng() : rng() % 1000;
    std::vector<Call> calls;
    const int count = 1 + static_cast<int>(rng() % 8);
    program += "g = np.random.default_rng(" + std::to_string(seed) + ")\n";
    for (int c = 0; c < count; ++c) {
      const int n = 1 + static_cast<int>(rng() % 11);
      if (rng() % 4 == 0) {
        calls.push_back({false, 0, n});
        program += "print(*[float(v).hex() for v in g.normal(size=" + std::to_string(n) + ")])\n";
      } else {
        const std::uint64_t high = highs[rng() % std::size(highs)];
        calls.push_back({true, high, n});
        program +=
            "print(*g.integers(0, " + std::to_string(high) + ", size=" + std::to_string(n) + "))\n";
      }
    }
    cases.emplace_back(seed, calls);
  }
  const auto t = tokens(test::run_python(program));
  std::size_t at = 0;
  for (const auto& [seed, calls] : cases) {
    const auto got = draw_calls(seed, calls);
    for (const auto& values : got)
      for (double v : values) {
        ASSERT_LT(at, t.size());
        EXPECT_EQ(v, parse_double(t[at])) << "seed " << seed << " token " << at;
        ++at;
      }
  }
  EXPECT_EQ(at, t.size());
}

// ---- The tables themselves ------------------------------------------------------------------

// Facts about numpy's tables that follow from the ziggurat's construction, independently of
// their exact digits: f is the unnormalized density exp(-x^2/2) at the layer edges, so f[0] = 1
// and f decreases; the last edge is R, so f[255] = exp(-R^2/2); w grows outward.
TEST(NumpyZigguratTables, ShapeFollowsTheConstruction) {
  EXPECT_EQ(zig::f(0), 1.0);
  EXPECT_NEAR(zig::f(255), std::exp(-0.5 * zig::kR * zig::kR), 1e-15);
  for (int i = 1; i < 256; ++i) {
    EXPECT_LT(zig::f(i), zig::f(i - 1)) << i;
    EXPECT_GT(zig::w(i), 0.0) << i;
  }
  for (int i = 2; i < 256; ++i) EXPECT_GT(zig::w(i), zig::w(i - 1)) << i;
  // Layer i >= 1 has right edge x_i = w[i] 2^52; the density there is f[i].
  for (int i = 1; i < 256; ++i) {
    const double x = zig::w(i) * 0x1p52;
    EXPECT_NEAR(std::exp(-0.5 * x * x), zig::f(i), 1e-12) << i;
  }
  EXPECT_NEAR(zig::w(255) * 0x1p52, zig::kR, 1e-12);
  EXPECT_DOUBLE_EQ(zig::kInvR, 1.0 / zig::kR);
}

}  // namespace
}  // namespace attn
