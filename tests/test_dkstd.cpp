// test_dkstd.cpp: the dk-std sampler. The CPU twin's SIMD lanes equal the scalar per-lane code
// the GPU runs (bit for bit); results do not depend on threads or on how chunks are grouped;
// the statistics match the theory (std sqrt(d_k), kurtosis 3 + 6/d_k) and the 95% interval
// covers the truth about 95% of the time.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>

#include "dkstd.hpp"
#include "dkstd_numpy.hpp"
#include "experiments/dk_std.hpp"
#include "experiments/registry.hpp"
#include "host/backend.hpp"

namespace attn {
namespace {

bool same_bits(const Moments& a, const Moments& b) {
  return std::memcmp(&a, &b, sizeof(Moments)) == 0;
}

// The reference: GPU semantics written as scalar host code (lane_moments + merge_lanes).
Moments scalar_chunk(const dkstd::Plan& p, std::uint64_t chunk) {
  Moments lanes[dkstd::kLanes];
  for (unsigned l = 0; l < dkstd::kLanes; ++l) lanes[l] = dkstd::lane_moments(p, chunk, l);
  return dkstd::merge_lanes(lanes);
}

TEST(DkStdSampler, SimdTwinEqualsScalarLanesBitForBit) {
  // Odd and even d_k, d_k above and below the lane width, and a partial last chunk.
  for (std::uint32_t d_k : {1u, 2u, 3u, 7u, 64u, 513u, 4096u}) {
    const dkstd::Plan p = dkstd::make_plan(3 * 256 + 37, d_k, 12345);
    std::vector<Moments> simd(p.chunks());
    dkstd::chunk_moments_cpu(p, 0, p.chunks(), simd.data());
    for (std::uint64_t c = 0; c < p.chunks(); ++c)
      EXPECT_TRUE(same_bits(simd[c], scalar_chunk(p, c))) << "d_k " << d_k << " chunk " << c;
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
    EXPECT_NEAR(dkstd::sample_dot(key, d_k, 42), dot, 1e-5 * (1 + std::fabs(dot))) << d_k;
  }
}

Moments fold(const dkstd::Plan& p, std::uint64_t wave) {
  std::vector<Moments> parts(p.chunks());
  for (std::uint64_t c0 = 0; c0 < p.chunks(); c0 += wave)
    dkstd::chunk_moments_cpu(p, c0, std::min(wave, p.chunks() - c0), parts.data() + c0);
  Moments total;
  for (const auto& m : parts) total = merge(total, m);
  return total;
}

TEST(DkStdSampler, ThreadsAndWavesDoNotChangeTheBits) {
  const dkstd::Plan p = dkstd::make_plan(200000, 16, 3);
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
  EXPECT_NE(dkstd::sample_dot(a, 8, 0), dkstd::sample_dot(b, 8, 0));
  EXPECT_NE(dkstd::sample_dot(a, 8, 0), dkstd::sample_dot(a, 8, 1));
}

// Theory: Var(q.k) = d_k, kurtosis 3 + 6/d_k. 2e5 samples: std within 5 standard errors.
TEST(DkStdSampler, MomentsMatchTheory) {
  for (std::uint32_t d_k : {1u, 4u, 64u}) {
    const dkstd::Plan p = dkstd::make_plan(200000, d_k, 99);
    const Moments m = fold(p, 64);
    const double kurt = 3.0 + 6.0 / d_k;
    const double se_std = std::sqrt(d_k) * std::sqrt((kurt - 1) / (4.0 * m.n));
    EXPECT_NEAR(m.stddev(), std::sqrt(double(d_k)), 5 * se_std) << d_k;
    EXPECT_NEAR(m.mean, 0.0, 5 * std::sqrt(d_k / m.n)) << d_k;
    EXPECT_NEAR(m.kurtosis(), kurt, 0.1 * kurt) << d_k;
  }
}

// The dk-std table with these flags (as on the command line), on the CPU, quietly.
Table dk_std(const std::map<std::string, std::string>& flags) {
  Options o;
  o.quiet = true;
  static const Backend cpu = Backend::select("cpu", 0);
  return run_experiment(*find_experiment("dk-std"), o, flags, cpu).at(0);
}

// Issue 2: `--rng philox --samples 1e6` gives std within 0.5% of sqrt(d_k) for 2, 64, 512.
TEST(DkStdTable, PhiloxMillionSamplesWithinHalfAPercent) {
  const Table t = dk_std({{"--rng", "philox"}, {"--samples", "1000000"}, {"--seed", "2024"}});
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
    const Table t = dk_std({{"--rng", "philox"},
                            {"--samples", "2000"},
                            {"--dk", "3"},
                            {"--seed", std::to_string(1000 + s)}});
    const double lo = std::get<double>(t.rows[0][t.column("std_ci95_low")]);
    const double hi = std::get<double>(t.rows[0][t.column("std_ci95_high")]);
    covered += lo <= std::sqrt(3.0) && std::sqrt(3.0) <= hi;
  }
  EXPECT_GE(covered, 360);
  EXPECT_LE(covered, 396);
}

// Progress counts what the table uses, 2 N d_k normals per d_k, so a run ends at 100%.
TEST(DkStdNumpy, ProgressCountsTheNormalsUsed) {
  struct Counter : Monitor {
    double units = 0;
    void advance(double u) override { units += u; }
  } counter;
  dkstd::NumpyStream stream(0);
  for (std::uint32_t d_k : {3u, 200u}) {
    counter.units = 0;
    (void)stream.next_block(1000, d_k, counter);
    EXPECT_DOUBLE_EQ(counter.units, 2.0 * 1000 * d_k) << d_k;
  }
}

// auto picks the lesson's numpy stream up to 1e8 normals and Philox above.
TEST(DkStdTable, AutoPicksNumpyUpTo1e8Normals) {
  EXPECT_TRUE(dkstd_uses_numpy("auto", 2.0 * 10000 * (2 + 64 + 512)));  // the lesson
  EXPECT_TRUE(dkstd_uses_numpy("auto", 1e8));
  EXPECT_FALSE(dkstd_uses_numpy("auto", 1e8 + 2));
  EXPECT_TRUE(dkstd_uses_numpy("numpy", 1e12));
  EXPECT_FALSE(dkstd_uses_numpy("philox", 10));
  const Table t = dk_std({{"--samples", "1000"}, {"--dk", "4"}});
  EXPECT_EQ(std::get<std::string>(t.rows[0][t.column("rng")]), "numpy");
  EXPECT_NE(t.run["generator"].get<std::string>().find("numpy"), std::string::npos);
}

}  // namespace
}  // namespace attn
