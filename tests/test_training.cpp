// test_training.cpp: the tiny training model (kernels/tiny_model.hpp) against the lesson's table
// (spec/EXPERIMENTS.md, numpy 1.24 float64 values), against numpy for seeds beyond 0 and 1
// (tests/data/training_numpy.json, and live numpy where installed), and against its own maths.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <sstream>

#include "helpers.hpp"
#include "tiny_model.hpp"

namespace attn {
namespace {

using tiny::Config;
using tiny::TrainOptions;

tiny::TrainResult train_cpu(Config c, std::uint64_t seed, const TrainOptions& o) {
  tiny::TrainResult r;
  tiny::train_seeds_cpu<double>(c, &seed, 1, o, &r);
  return r;
}

TrainOptions analytic() {
  TrainOptions o;
  o.grad = tiny::Grad::analytic;
  return o;
}

// The lesson's table (EXPERIMENTS.md, training): weight on apple to 1e-9 relative.
TEST(TrainingLesson, NumericGradientsReproduceTheTable) {
  const TrainOptions o;  // 3000 steps, lr 0.5, numeric, h 1e-5, sequential
  const auto qk = train_cpu(Config::qk_identity, 0, o);
  EXPECT_NEAR(qk.weight_on_apple, 0.9971924306100606, 1e-9 * 0.9971924306100606);
  EXPECT_NEAR(qk.loss, 1.576e-05, 0.001e-05);
  EXPECT_NEAR(qk.out_x, 0.997, 0.0005);  // sweet's output [0.997, 0.003]
  EXPECT_NEAR(qk.out_y, 0.003, 0.0005);
  const auto all = train_cpu(Config::all_identity, 0, o);
  EXPECT_NEAR(all.weight_on_apple, 0.5222323347878286, 1e-9 * 0.5222323347878286);
  EXPECT_LT(all.loss, 1e-20);  // ~1e-27
  const auto r0 = train_cpu(Config::all_random, 0, o);
  EXPECT_NEAR(r0.weight_on_apple, 0.16210782312718855, 1e-9 * 0.16210782312718855);
  EXPECT_LT(r0.loss, 1e-20);  // ~1e-24
  const auto r1 = train_cpu(Config::all_random, 1, o);
  EXPECT_NEAR(r1.weight_on_apple, 0.7317287020936569, 1e-9 * 0.7317287020936569);
  EXPECT_LT(r1.loss, 1e-20);  // ~1e-25
  const auto qr = train_cpu(Config::qk_random, 0, o);
  EXPECT_NEAR(qr.weight_on_apple, 0.997, 0.001);
  EXPECT_NEAR(qr.loss, 1.6e-05, 0.1e-05);
}

// "The analytic gradient on the same schedule agrees to about 1e-6" and gives the same table.
TEST(TrainingLesson, AnalyticGradientsAgreeWithNumeric) {
  const TrainOptions num;
  for (Config c :
       {Config::qk_identity, Config::all_identity, Config::all_random, Config::qk_random})
    for (std::uint64_t seed : {0, 1}) {
      const auto a = train_cpu(c, seed, analytic());
      const auto n = train_cpu(c, seed, num);
      EXPECT_NEAR(a.weight_on_apple, n.weight_on_apple, 1e-5) << int(c) << " seed " << seed;
      EXPECT_NEAR(a.out_x, n.out_x, 1e-5);
    }
  EXPECT_EQ(std::lround(100 * train_cpu(Config::all_random, 0, analytic()).weight_on_apple), 16);
  EXPECT_EQ(std::lround(100 * train_cpu(Config::all_random, 1, analytic()).weight_on_apple), 73);
  EXPECT_EQ(std::lround(100 * train_cpu(Config::all_identity, 0, analytic()).weight_on_apple), 52);
}

// Simultaneous updates are a different experiment: seed 0 ends near 0.178 (EXPERIMENTS.md).
TEST(TrainingLesson, SimultaneousScheduleIsADifferentExperiment) {
  TrainOptions o;
  o.schedule = tiny::Schedule::simultaneous;
  EXPECT_NEAR(train_cpu(Config::all_random, 0, o).weight_on_apple, 0.178, 0.001);
}

// The analytic gradient is the derivative: compare with a high-accuracy central difference
// (Richardson extrapolation) at random parameters, every matrix, every element.
TEST(TinyModel, AnalyticGradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  for (int trial = 0; trial < 20; ++trial) {
    tiny::Params<double> p;
    for (auto& m : p.w)
      for (auto& r : m)
        for (double& x : r) x = normal(rng);
    for (int m = 0; m < 3; ++m) {
      double g[2][2];
      tiny::analytic_grad(p, m, g);
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) {
          auto d = [&](double h) {
            tiny::Params<double> a = p, b = p;
            a.w[m][r][c] += h;
            b.w[m][r][c] -= h;
            return (tiny::loss(a) - tiny::loss(b)) / (2 * h);
          };
          const double richardson = (4 * d(1e-4) - d(2e-4)) / 3;
          EXPECT_NEAR(g[r][c], richardson, 1e-8) << "matrix " << m << " (" << r << "," << c << ")";
        }
    }
  }
}

// Forward pass against the lesson's formulas written out by hand for one point.
TEST(TinyModel, ForwardIsTheLessonsFormula) {
  tiny::Params<double> p{};
  p.w[0][1][0] = 2.0;  // sweet's query [2, 0]
  for (int m = 1; m < 3; ++m) p.w[m][0][0] = p.w[m][1][1] = 1.0;
  const auto f = tiny::forward(p);
  const double s0 = 2.0 / std::sqrt(2.0), s1 = 0.0;  // scores over apple, sweet
  const double a0 = std::exp(s0) / (std::exp(s0) + std::exp(s1));
  EXPECT_NEAR(f.a[0], a0, 1e-15);
  EXPECT_NEAR(f.out[0], a0, 1e-15);
  EXPECT_NEAR(f.out[1], 1 - a0, 1e-15);
  EXPECT_NEAR(tiny::loss_of(f), 2 * (1 - a0) * (1 - a0), 1e-15);
}

// Initial weights are numpy's default_rng(seed).normal(size=(2, 2)) x3 (golden draws).
TEST(TinyModel, RandomStartIsNumpysNormalDraws) {
  const auto golden = test::test_data("numpy_default_rng.json")["normal_2x2_x3"];
  int checked = 0;
  for (const auto& [seed_text, draws] : golden.items()) {
    const std::uint64_t seed = std::stoull(seed_text);
    const auto p = tiny::initial_params<double>(Config::all_random, seed);
    const auto q = tiny::initial_params<double>(Config::qk_random, seed);
    for (int m = 0; m < 3; ++m)
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) {
          const double want = std::stod(draws[m][r][c].get<std::string>());
          EXPECT_EQ(p.w[m][r][c], want) << "seed " << seed << " matrix " << m;
          if (m < 2) {
            EXPECT_EQ(q.w[m][r][c], want);
          }
        }
    EXPECT_EQ(q.w[2][0][0], 1.0);
    EXPECT_EQ(q.w[2][0][1], 0.0);
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

// Seeds beyond 0 and 1, numpy-made (tools/make_training_data.py): 1e-9 relative.
TEST(TrainingNumpy, SeedsBeyondTheLessonMatchNumpy) {
  const auto data = test::test_data("training_numpy.json");
  int checked = 0;
  for (const auto& run : data["runs"]) {
    const Config c = run["config"] == "all-random" ? Config::all_random : Config::qk_random;
    const TrainOptions o = run["grad"] == "numeric" ? TrainOptions{} : analytic();
    const auto r = train_cpu(c, run["seed"].get<std::uint64_t>(), o);
    const auto& want = run["result"];
    const double got[4] = {r.weight_on_apple, r.out_x, r.out_y, r.loss};
    for (int i = 0; i < 3; ++i)  // weight, out_x, out_y
      EXPECT_NEAR(got[i], want[i].get<double>(),
                  1e-9 * std::fmax(1.0, std::fabs(want[i].get<double>())))
          << run.dump();
    // The loss is tiny (1e-20 .. 1e-5): compare where it is meaningful.
    if (want[3].get<double>() > 1e-12) {
      EXPECT_NEAR(got[3], want[3].get<double>(), 1e-7 * want[3].get<double>());
    } else {
      EXPECT_LT(got[3], 1e-12);
    }
    ++checked;
  }
  EXPECT_GE(checked, 32);
}

// Live numpy, for a few seeds drawn at random by this test: the lesson's program itself.
TEST(TrainingNumpy, LiveOracleForRandomSeeds) {
  if (!test::have_numpy()) GTEST_SKIP() << "python3-numpy not installed";
  std::random_device rd;
  std::mt19937_64 rng(rd());
  for (int i = 0; i < 2; ++i) {
    const std::uint64_t seed = rng() % 1000000000;
    const auto out =
        test::run_command("/usr/bin/python3 " + std::string(ATTN_SOURCE_DIR) +
                          "/tests/oracle/lesson_numpy.py train all-random " + std::to_string(seed));
    ASSERT_EQ(out.exit_code, 0) << out.err;
    std::istringstream in(out.out);
    double w, x, y, loss;
    in >> w >> x >> y >> loss;
    const auto r = train_cpu(Config::all_random, seed, TrainOptions{});
    EXPECT_NEAR(r.weight_on_apple, w, 1e-9 * std::fmax(1.0, std::fabs(w))) << "seed " << seed;
    EXPECT_NEAR(r.out_x, x, 1e-9) << "seed " << seed;
  }
}

// The CPU twin trains seeds in SIMD lane packs: every lane must give the scalar code's bits
// (the code the GPU runs per thread), for both gradients, both schedules and a short last pack.
TEST(TrainingSweepCpu, LanePacksEqualScalarCodeBitForBit) {
  std::vector<std::uint64_t> seeds;
  for (std::uint64_t s = 100; s < 173; ++s) seeds.push_back(s);  // 73 = 9 packs of 8 + 1
  for (tiny::Grad g : {tiny::Grad::analytic, tiny::Grad::numeric})
    for (tiny::Schedule sch : {tiny::Schedule::sequential, tiny::Schedule::simultaneous})
      for (Config c : {Config::all_random, Config::qk_random}) {
        TrainOptions o;
        o.grad = g;
        o.schedule = sch;
        o.steps = 150;
        std::vector<tiny::TrainResult> batch(seeds.size());
        tiny::train_seeds_cpu<double>(c, seeds.data(), seeds.size(), o, batch.data());
        for (std::size_t i = 0; i < seeds.size(); ++i) {
          const auto one = tiny::train_one<double>(c, seeds[i], o);
          ASSERT_EQ(batch[i].weight_on_apple, one.weight_on_apple) << "seed " << seeds[i];
          ASSERT_EQ(batch[i].out_x, one.out_x);
          ASSERT_EQ(batch[i].out_y, one.out_y);
          ASSERT_EQ(batch[i].loss, one.loss);
        }
      }
}

// Runs of mixed configs (the training table's list): each run gives train_one's bits, whether
// it lands in a pack (a stretch of 4 or more runs of one config) or runs alone (its numeric
// gradient's eight evaluations as a pack's lanes), on 1 or 2 threads, for both gradients, both
// schedules, float64 and float32.
template <class T>
void expect_mixed_runs_equal_train_one() {
  std::vector<Config> configs;
  std::vector<std::uint64_t> seeds;
  auto add = [&](Config c, int n) {
    for (int i = 0; i < n; ++i) {
      configs.push_back(c);
      seeds.push_back(200 + seeds.size());
    }
  };
  add(Config::qk_identity, 1);
  add(Config::all_random, 11);  // a pack of 8, then a pack of 3 run one by one
  add(Config::qk_random, 2);
  add(Config::all_identity, 1);
  add(Config::qk_random, 5);  // the same config again, after another: its own pack
  const int max_threads = omp_get_max_threads();
  for (tiny::Grad g : {tiny::Grad::numeric, tiny::Grad::analytic})
    for (tiny::Schedule sch : {tiny::Schedule::sequential, tiny::Schedule::simultaneous})
      for (int threads : {1, 2}) {
        TrainOptions o;
        o.steps = 150;
        o.grad = g;
        o.schedule = sch;
        omp_set_num_threads(threads);
        std::vector<tiny::TrainResult> got(seeds.size());
        tiny::train_runs_cpu<T>(configs.data(), seeds.data(), seeds.size(), o, got.data());
        for (std::size_t i = 0; i < seeds.size(); ++i) {
          const auto one = tiny::train_one<T>(configs[i], seeds[i], o);
          const std::string where = "run " + std::to_string(i) + ", grad " +
                                    std::to_string(static_cast<int>(g)) + ", schedule " +
                                    std::to_string(static_cast<int>(sch)) + ", " +
                                    std::to_string(threads) + " threads";
          ASSERT_EQ(got[i].weight_on_apple, one.weight_on_apple) << where;
          ASSERT_EQ(got[i].out_x, one.out_x) << where;
          ASSERT_EQ(got[i].out_y, one.out_y) << where;
          ASSERT_EQ(got[i].loss, one.loss) << where;
        }
      }
  omp_set_num_threads(max_threads);
}
TEST(TrainingSweepCpu, MixedConfigRunsEqualScalarCodeBitForBit) {
  expect_mixed_runs_equal_train_one<double>();
}
TEST(TrainingSweepCpu, MixedConfigRunsEqualScalarCodeBitForBitFloat32) {
  expect_mixed_runs_equal_train_one<float>();
}

// float32 training reaches the same attention pattern to float accuracy.
TEST(TrainingSweepCpu, Float32AgreesWithFloat64ToFloatAccuracy) {
  const std::uint64_t seed = 0;
  tiny::TrainResult f;
  tiny::train_seeds_cpu<float>(Config::qk_identity, &seed, 1, analytic(), &f);
  const auto d = train_cpu(Config::qk_identity, 0, analytic());
  EXPECT_NEAR(f.weight_on_apple, d.weight_on_apple, 1e-4);
}

}  // namespace
}  // namespace attn
