// gpu_cases.hpp: the one list of GPU cases, used by the `gpu` tests (tests/test_gpu.cpp: each
// case against its CPU twin, at the tolerance below) and by the GPU benchmark (bench/gpu_bench.cu:
// each case timed, rates from the FLOPs and bytes below), as ggml's test-backend-ops cases serve
// both its test and perf modes. Sizes are chosen so that a case takes well under a second on a
// data-centre GPU and its CPU twin a few seconds on a many-core CPU.
//
// Tolerances: where the GPU runs the CPU twin's very arithmetic (dk-std) it is 0, bit for bit.
// Elsewhere they come from the standard rounding-error bound for a sum of n products (Higham,
// Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.5 and Lemma 3.1):
//   |fl(x . y) - x . y| <= gamma_n |x| . |y|,   gamma_n = n u / (1 - n u),
// u = 2^-24 (float) or 2^-53 (double). It holds for any summation order, blocking and use of
// fused multiply-adds, so the GPU (cuBLAS) and the CPU twin each satisfy it and differ by at most
// twice it. The bound grows with the reduction length n; it is a worst case, so it never cries
// wolf, and is still far below the O(1) errors that a wrong index or a missed row gives.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "attention.hpp"
#include "head.hpp"
#include "tiny_model.hpp"

namespace attn::gpu_cases {

enum class DType { f32, f64 };

inline const char* name(DType t) { return t == DType::f32 ? "f32" : "f64"; }
inline double unit_roundoff(DType t) { return t == DType::f32 ? 0x1p-24 : 0x1p-53; }
// gamma_n of Higham's Lemma 3.1.
inline double gamma(double n, DType t) {
  const double nu = n * unit_roundoff(t);
  return nu / (1 - nu);
}

// ---- Batched attention forward (attention.hpp) ----------------------------------------------
// Inputs: x ~ N(0, 1), W_Q, W_K, W_V ~ N(0, 1/d_model), so that Q, K, V entries are O(1) and the
// scaled scores are O(1) (no saturated softmax hides or inflates errors).
// Tolerance, per output element, first order in u. |A| is the elementwise absolute value; Q, K,
// V, P are the CPU twin's results and A_Q = |X||W_Q| (likewise A_K, A_V) come from a run of the
// CPU twin on |x| and |W| (the bound matrices of the projection GEMMs); c is the score scale.
//   Q, K, V:  2 gamma_{d_model} A_Q                         (one GEMM on each side)
//   S:        c (2 gamma_{d_model} (A_Q |K|^T + |Q| A_K^T) + 2 gamma_{d_k} |Q||K|^T)
//             (the errors of Q and K carried through Q K^T, then the score GEMM's own)
//   P:        p_j (2 max_i dS_i + 2 gamma_{n + 4})          (softmax's derivative
//             dp_j = p_j (ds_j - sum_i p_i ds_i); its own exp, sum and division rounding)
//   O:        dP |V| + P (2 gamma_{d_model} A_V) + 2 gamma_n P |V|   (the P V GEMM)
// Each term keeps the true magnitudes where first order allows. tests/test_gpu_cases.cpp checks
// both sides of that on the CPU: the float twin's rounding (against double) uses 1% to 92% of
// one side's share on the five smaller cases (the worst case grows like n, typical rounding
// like sqrt(n)), and a 1e-2 error in one output is caught.
struct AttentionCase {
  const char* name;
  AttentionShape shape;
};

inline const std::vector<AttentionCase>& attention_cases() {
  static const std::vector<AttentionCase> cases = {
      {"lesson-sized", {1024, 3, 2, 2, 2, false, false, 0}},
      {"small-shared", {1024, 16, 64, 64, 64, true, false, 0}},
      {"causal", {64, 128, 128, 64, 64, true, true, 0}},
      {"wide-d_model", {4, 128, 512, 512, 64, false, false, 0}},
      {"odd-causal-scale", {3, 7, 5, 3, 9, false, true, 0.5}},
      {"many-short", {16384, 16, 64, 64, 64, true, false, 0}},
      {"medium", {4096, 64, 64, 64, 64, true, false, 0}},
      {"square-128", {1024, 128, 128, 128, 128, true, false, 0}},
      {"long-512", {64, 512, 64, 64, 64, true, false, 0}},
  };
  return cases;
}

// Multiply-adds counted twice: three projections, the scores and the weighted sum.
inline double attention_flops(const AttentionShape& s) {
  const double rows = double(s.batch) * s.n;
  return 2 * rows * s.d_model * (2.0 * s.d_k + s.d_v) + 2 * rows * s.n * (s.d_k + s.d_v);
}
// A lower bound on memory traffic: every array written once and read once by the next step.
inline double attention_bytes(const AttentionShape& s, DType t) {
  const double e = t == DType::f32 ? 4 : 8;
  const double rows = double(s.batch) * s.n, w = s.shared_weights ? 1 : s.batch;
  return e * (rows * s.d_model + w * s.d_model * (2.0 * s.d_k + s.d_v) +
              2 * rows * (2.0 * s.d_k + s.d_v) + 3 * rows * s.n + 2 * rows * s.d_v);
}

// Per-element allowances for GPU minus CPU of one attention case, from the bound matrices
// (abs_q = |X||W_Q|, abs_k, abs_v: the CPU twin run on |x| and |W|) and the CPU twin's q, k, v
// and weights p on the real inputs. Masked scores (-inf on both sides) need no allowance.
struct AttentionAllowance {
  std::vector<double> q, k, v, scores, weights, out;
};

template <class T>
AttentionAllowance attention_allowance(const AttentionShape& s, DType t,
                                       const std::vector<T>& abs_q, const std::vector<T>& abs_k,
                                       const std::vector<T>& abs_v, const std::vector<T>& q,
                                       const std::vector<T>& k, const std::vector<T>& v,
                                       const std::vector<T>& p) {
  AttentionAllowance a;
  const double g_dm = gamma(s.d_model, t), g_dk = gamma(s.d_k, t), g_n = gamma(s.n, t);
  const double g_sm = gamma(s.n + 4, t), c = s.effective_scale();
  for (T x : abs_q) a.q.push_back(2 * g_dm * x);
  for (T x : abs_k) a.k.push_back(2 * g_dm * x);
  for (T x : abs_v) a.v.push_back(2 * g_dm * x);
  auto absolute = [](const std::vector<T>& x) {
    std::vector<T> r(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) r[i] = std::fabs(x[i]);
    return r;
  };
  const auto mq = absolute(q), mk = absolute(k), mv = absolute(v);
  const std::size_t rows = std::size_t(s.batch) * s.n;
  std::vector<T> s1(rows * s.n), s2(s1.size()), s3(s1.size());  // A_Q|K|^T, |Q|A_K^T, |Q||K|^T
  batched_scores_cpu<T>(abs_q.data(), mk.data(), s1.data(), s.batch, s.n, s.n, s.d_k, T(1));
  batched_scores_cpu<T>(mq.data(), abs_k.data(), s2.data(), s.batch, s.n, s.n, s.d_k, T(1));
  batched_scores_cpu<T>(mq.data(), mk.data(), s3.data(), s.batch, s.n, s.n, s.d_k, T(1));
  a.scores.resize(s1.size());
  for (std::size_t i = 0; i < s1.size(); ++i)
    a.scores[i] = c * (2 * g_dm * (double(s1[i]) + s2[i]) + 2 * g_dk * double(s3[i]));
  a.weights.resize(p.size());
  a.out.assign(rows * s.d_v, 0);
  for (std::size_t r = 0; r < rows; ++r) {
    double ds = 0;
    for (int j = 0; j < s.n; ++j) ds = std::fmax(ds, a.scores[r * s.n + j]);
    const std::size_t b = r / s.n;
    for (int j = 0; j < s.n; ++j) {
      const double pj = p[r * s.n + j];
      const double dp = pj * (2 * ds + 2 * g_sm);
      a.weights[r * s.n + j] = dp;
      // O row r = sum_j P_rj V_j: this term's share of every output column's allowance.
      const std::size_t vrow = (b * s.n + j) * s.d_v;
      for (int col = 0; col < s.d_v; ++col)
        a.out[r * s.d_v + col] += (dp + 2 * g_n * pj) * double(mv[vrow + col]) +
                                  pj * 2 * g_dm * double(abs_v[vrow + col]);
    }
  }
  return a;
}

// ---- Row softmax kernels v1 and v2 (attention.hpp) -------------------------------------------
// Scores ~ N(0, 4) (some rows with -inf masked keys via causal). Tolerance, relative to each
// weight p_j: v1 runs softmax_row itself, so only the exp differs: CUDA's expf is within 2 ulp
// and exp within 1 ulp, glibc's within 1 ulp (1 ulp <= 2u relative), so each term differs by at
// most 6u, the sum too, and p = term / sum by 12u plus the division's rounding on each side:
// |dp_j| <= 16 u p_j. v2 also sums in another order: |dp_j| <= (16 u + 2 gamma_n) p_j. No
// weight underflows at these scores (max - min < 40 before the 0.75 scale).
struct SoftmaxCase {
  const char* name;
  long rows;
  int n;
  bool causal;
};

inline const std::vector<SoftmaxCase>& softmax_cases() {
  static const std::vector<SoftmaxCase> cases = {
      {"keys-3", 1 << 20, 3, false},
      {"keys-16", 1 << 18, 16, false},
      {"keys-128-causal", 1 << 15, 128, true},
      {"keys-512", 1 << 13, 512, false},
  };
  return cases;
}
inline double softmax_rel_tolerance(const SoftmaxCase& c, DType t, bool warp_per_row) {
  return 16 * unit_roundoff(t) + (warp_per_row ? 2 * gamma(c.n, t) : 0);
}
// Bytes: every score read once, every weight written once.
inline double softmax_bytes(const SoftmaxCase& c, DType t) {
  return (t == DType::f32 ? 4 : 8) * 2.0 * c.rows * c.n;
}

// ---- dk-std sampler (dk_std.hpp) --------------------------------------------------------------
// Same arithmetic in the same merge tree on both sides: tolerance 0 (memcmp of every chunk's
// summary). Work: 2 d_k normals and d_k multiply-adds per sample; no memory traffic to speak of.
struct DkStdCase {
  std::uint32_t d_k;
  std::uint64_t samples;  // the test's size; the benchmark scales it up to >= 1 s
};

inline const std::vector<DkStdCase>& dk_std_cases() {
  static const std::vector<DkStdCase> cases = {
      {1, 5 * 256 * 9 + 11}, {2, 5 * 256 * 9 + 11},   {3, 5 * 256 * 9 + 11},
      {64, 1 << 16},         {512, 5 * 256 * 9 + 11}, {4096, 5 * 256 * 9 + 11},
  };
  return cases;
}
inline double dk_std_normals(std::uint32_t d_k, std::uint64_t samples) {
  return 2.0 * d_k * samples;
}

// ---- Training sweep (tiny_model.hpp) ---------------------------------------------------------
// f64: the sweep's promise, |weight_on_apple GPU - CPU| <= 1e-9 for every seed (the device's exp
// may differ from glibc's in the last bit, and a one-ulp change of exp moves the result far
// less than 1e-9).
// f32: no a-priori bound holds over 3000 non-linear steps, so the allowance is measured on the
// CPU: per seed, 4 |CPU f32 - CPU f64| + 1e-4, i.e. the GPU's float rounding may move a run as
// far as float rounding itself moves it (four times over), plus about 1700 float ulps of 1.
// Float runs use the analytic gradient only: a float central difference with h = 1e-5 is
// rounding noise (u / h ~ 1e-2 of the gradient), so an ulp of exp would send GPU and CPU apart
// by chance, not by fault.
struct TrainingCase {
  const char* name;
  tiny::Config config;
  tiny::Grad grad;
  DType dtype;
  int steps;
  std::int64_t seeds;  // the test's size; the benchmark uses 10^6
};

inline const std::vector<TrainingCase>& training_cases() {
  using tiny::Config, tiny::Grad;
  static const std::vector<TrainingCase> cases = {
      {"numeric-all-random", Config::all_random, Grad::numeric, DType::f64, 500, 2000},
      {"numeric-qk-random", Config::qk_random, Grad::numeric, DType::f64, 500, 2000},
      {"analytic-all-random", Config::all_random, Grad::analytic, DType::f64, 3000, 2000},
      {"analytic-qk-random", Config::qk_random, Grad::analytic, DType::f64, 3000, 2000},
      {"analytic-all-random-f32", Config::all_random, Grad::analytic, DType::f32, 3000, 2000},
      {"analytic-qk-random-f32", Config::qk_random, Grad::analytic, DType::f32, 3000, 2000},
  };
  return cases;
}
inline constexpr double kTrainingF64Tolerance = 1e-9;
inline double training_f32_allowance(double cpu_f32, double cpu_f64) {
  return 4 * std::fabs(cpu_f32 - cpu_f64) + 1e-4;
}

// ---- General head (head.hpp) -----------------------------------------------------------------
// One seed per thread against the CPU's lane packs: the same arithmetic in the same order (the
// same fused multiply-adds) except exp (CUDA's vs glibc's, each within an ulp or two), so every
// training result (final loss, start loss, final weights) agrees as numpy's allclose does,
// |gpu - cpu| <= 1e-12 + 1e-8 |cpu|, after 3000 steps of the lesson's task and 300 of random
// ones (at the peers' stable lr 0.01 and init 0.25), on one input or many (the mean over inputs;
// from a loss row r0 > 0 the sums over the stacked inputs' rows of R), with the maps learned or
// frozen (uniform, or a given map: W_V and W_O alone trained). The absolute floor is for
// final losses near 1e-27, where one ulp of a device exp is a large relative difference.
// Slicing a training across launches changes no arithmetic: slices and one whole launch agree
// bit for bit (tolerance 0).
struct HeadCase {
  const char* name;
  int n, d_model, d_k, d_v;
  // The loss rows from r0; with one input and r0 > 0 the lesson's task (x = I, y = e_0 on the
  // last row), else random x, y ~ N(0, 1) for every input.
  int r0;
  int steps;
  bool train_values;
  head::Schedule schedule;
  std::int64_t seeds;  // the test's size
  // Version 2 (spec "Version 2"): heads, a causal mask, the scale, W_O (qkvo), the optimizer.
  int heads = 1;
  bool causal = false;
  head::Scale scale = head::Scale::sqrt;
  double scale_factor = 1;
  bool train_output = false;
  head::Optimizer optimizer = head::Optimizer::sgd;
  // Version 3 (spec "Many inputs"): the training inputs.
  int inputs = 1;
  // Version 3's frozen maps (--map): uniform, or known (head_task draws a map of the visible
  // keys for each input, head and loss row); W_V (and W_O) alone trained.
  head::MapMode map = head::MapMode::learned;
  bool lesson() const { return r0 > 0 && inputs == 1; }
};

inline const std::vector<HeadCase>& head_cases() {
  using head::Schedule;
  static const std::vector<HeadCase> cases = {
      {"lesson-qkv", 2, 2, 2, 2, 1, 3000, true, Schedule::sequential, 3001},
      {"lesson-qk", 2, 2, 2, 2, 1, 3000, false, Schedule::sequential, 3001},
      {"random-8x16", 8, 16, 16, 16, 0, 300, true, Schedule::sequential, 3001},
      {"random-odd-simultaneous", 5, 7, 3, 4, 0, 300, true, Schedule::simultaneous, 3001},
      {"random-4-heads-causal", 8, 16, 16, 16, 0, 300, true, Schedule::sequential, 3001, 4, true},
      {"random-scale-none-qkvo", 6, 8, 4, 6, 0, 300, true, Schedule::sequential, 3001, 1, false,
       head::Scale::none, 1, true},
      {"random-adam-2-heads-qkvo-causal-scale-0.5", 8, 8, 8, 8, 0, 300, true, Schedule::sequential,
       3001, 2, true, head::Scale::factor, 0.5, true, head::Optimizer::adam},
      {"random-adam-simultaneous", 5, 7, 3, 4, 0, 300, true, Schedule::simultaneous, 3001, 1, false,
       head::Scale::sqrt, 1, false, head::Optimizer::adam},
      {"random-4-inputs-8x16", 8, 16, 16, 16, 0, 300, true, Schedule::sequential, 3001, 1, false,
       head::Scale::sqrt, 1, false, head::Optimizer::sgd, 4},
      {"random-3-inputs-rows-from-1-adam-qkvo-causal", 6, 8, 4, 6, 1, 300, true,
       Schedule::sequential, 3001, 2, true, head::Scale::sqrt, 1, true, head::Optimizer::adam, 3},
      {"random-5-inputs-rows-from-2-simultaneous", 5, 7, 3, 4, 2, 300, true, Schedule::simultaneous,
       3001, 1, false, head::Scale::none, 1, false, head::Optimizer::sgd, 5},
      {"random-frozen-uniform-2-heads-causal", 8, 16, 16, 16, 0, 300, true, Schedule::sequential,
       3001, 2, true, head::Scale::sqrt, 1, false, head::Optimizer::sgd, 1, head::MapMode::uniform},
      {"random-frozen-uniform-4-inputs-qkvo-simultaneous", 6, 8, 4, 6, 0, 300, true,
       Schedule::simultaneous, 3001, 1, false, head::Scale::sqrt, 1, true, head::Optimizer::sgd, 4,
       head::MapMode::uniform},
      {"random-frozen-known-3-inputs-rows-from-1-adam-qkvo-causal", 6, 8, 4, 6, 1, 300, true,
       Schedule::sequential, 3001, 2, true, head::Scale::sqrt, 1, true, head::Optimizer::adam, 3,
       head::MapMode::known},
      {"random-frozen-known-2-inputs-adam-simultaneous", 5, 7, 3, 4, 0, 300, true,
       Schedule::simultaneous, 3001, 1, false, head::Scale::sqrt, 1, false, head::Optimizer::adam,
       2, head::MapMode::known},
  };
  return cases;
}

// The case's model over x, y and the known maps (head_task fills them); they must outlive the
// model.
inline head::Model head_model(const HeadCase& c, const std::vector<double>& x,
                              const std::vector<double>& y, const std::vector<double>& known) {
  head::Model m;
  m.n = c.n;
  m.d_model = c.d_model;
  m.d_k = c.d_k;
  m.d_v = c.d_v;
  m.r0 = c.r0;
  m.steps = c.steps;
  m.train_values = c.train_values;
  m.schedule = c.schedule;
  m.heads = c.heads;
  m.causal = c.causal;
  m.scale = c.scale;
  m.scale_factor = c.scale_factor;
  m.train_output = c.train_output;
  m.optimizer = c.optimizer;
  m.inputs = c.inputs;
  if (!c.lesson()) {
    m.lr = 0.01;
    m.init_scale = 0.25;
  }
  m.x = x.data();
  m.y = y.data();
  m.map = c.map;
  m.known = known.empty() ? nullptr : known.data();
  return m;
}

// The case's task: x (inputs n, d_model), y (inputs n, d_out: d_v, or d_model with W_O), the
// inputs stacked, and with a known map its maps (inputs, H, |R|, n; each visible row a random
// distribution, 0 at the masked keys; else empty); normals come from `normal` (random cases
// only).
template <class Normal>
void head_task(const HeadCase& c, std::vector<double>& x, std::vector<double>& y,
               std::vector<double>& known, Normal normal) {
  const std::size_t rows = static_cast<std::size_t>(c.inputs) * c.n;
  x.assign(rows * c.d_model, 0.0);
  y.assign(rows * (c.train_output ? c.d_model : c.d_v), 0.0);
  known.clear();
  if (c.lesson()) {  // the lesson's task
    for (int i = 0; i < c.n; ++i) x[static_cast<std::size_t>(i) * c.d_model + i] = 1;
    y[static_cast<std::size_t>(c.n - 1) * c.d_v] = 1;
    return;
  }
  for (double& v : x) v = normal();
  for (double& v : y) v = normal();
  if (c.map != head::MapMode::known) return;
  const int loss_rows = c.n - c.r0;
  known.assign(static_cast<std::size_t>(c.inputs) * c.heads * loss_rows * c.n, 0.0);
  for (std::size_t row = 0; row < known.size() / c.n; ++row) {
    const int keys = c.causal ? c.r0 + static_cast<int>(row % loss_rows) + 1 : c.n;
    double sum = 0;
    for (int j = 0; j < keys; ++j) sum += known[row * c.n + j] = std::fabs(normal()) + 0.1;
    for (int j = 0; j < keys; ++j) known[row * c.n + j] /= sum;
  }
}

// numpy's allclose, the rule above: |gpu - cpu| <= 1e-12 + 1e-8 |cpu|; NaN on both sides (both
// diverged) agrees, NaN on one side does not.
inline bool head_close(double gpu, double cpu) {
  if (std::isnan(gpu) && std::isnan(cpu)) return true;
  return std::fabs(gpu - cpu) <= 1e-12 + 1e-8 * std::fabs(cpu);
}

#if defined(ATTNLAB_WITH_CUDA)
// The head trained on the device (by `kernel`) and on the CPU twin (the case's task, drawn with
// `normal`, at `steps` steps) for the given seeds: how many results disagree, and the first five.
// Agreement is head_close, or with `bits` the same bits (NaN on both sides agrees): where the
// device's exp is the CPU's (the SIMT emulation), the twins compute the same numbers.
struct HeadTwins {
  std::size_t outside = 0;
  std::vector<std::string> first_outside;
};
template <class Normal>
HeadTwins head_twins(const HeadCase& c, const std::vector<std::uint64_t>& seeds, int steps,
                     Normal normal, head::GpuKernel kernel = head::GpuKernel::automatic,
                     bool bits = false) {
  std::vector<double> x, y, known;
  head_task(c, x, y, known, normal);
  head::Model m = head_model(c, x, y, known);
  m.steps = steps;
  std::vector<double> cpu(seeds.size() * head::result_size(m)), gpu(cpu.size());
  head::train_seeds_cpu(m, seeds.data(), seeds.size(), cpu.data());
  head::train_seeds_cuda(m, seeds.data(), seeds.size(), gpu.data(), 0, silent_monitor(), kernel);
  HeadTwins r;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const bool same = bits ? (gpu[i] == cpu[i] && std::signbit(gpu[i]) == std::signbit(cpu[i])) ||
                                 (std::isnan(gpu[i]) && std::isnan(cpu[i]))
                           : head_close(gpu[i], cpu[i]);
    if (!same && r.outside++ < 5)
      r.first_outside.push_back("seed " + std::to_string(seeds[i / head::result_size(m)]) +
                                ", result " + std::to_string(i % head::result_size(m)) + ": gpu " +
                                std::to_string(gpu[i]) + " cpu " + std::to_string(cpu[i]));
  }
  return r;
}
#endif

// FLOPs of a case: every seed's steps (head::flops_per_step). Bytes: each seed's workspace read
// and written once per step, a lower bound.
inline double head_flops(const HeadCase& c, const head::Model& m) {
  return static_cast<double>(c.seeds) * c.steps * head::flops_per_step(m);
}
inline double head_bytes(const HeadCase& c, const head::Model& m) {
  return 16.0 * static_cast<double>(c.seeds) * c.steps * static_cast<double>(head::layout(m).total);
}

// ---- Softmax saturation (saturation.hpp) -----------------------------------------------------
// One query per problem, `rows` problems per call (the score GEMM's batch), as the table runs it.
// Scores s = q . k in double: |ds| <= 2 gamma_{d_k} |q| . |k| <= 2 gamma_{d_k} ||q|| ||k||, with
// ||q||^2 ~ chi^2_{d_k} bounded by d_k + 10 sqrt(2 d_k) + 50 (a bound no row of these sizes
// exceeds). Statistics of the weights: max weight and ||J||_F move by at most 4 |ds|, the entropy
// by at most 2 |ds| (1 + ln n + 1); plus row_stats' own rounding with the device's log (64 n u).
// The scaled half divides ds by sqrt(d_k), so the unscaled allowance covers both.
struct SaturationCase {
  std::uint32_t d_k;
  int keys;
  std::int64_t rows;
};

inline const std::vector<SaturationCase>& saturation_cases() {
  static const std::vector<SaturationCase> cases = {
      {1, 3, 3000},
      {64, 3, 3000},
      {1024, 3, 3000},
      // The README's example: 100,000 problems of one query in one call.
      {64, 8, 100000},
      {1024, 3, 100000},
  };
  return cases;
}
inline double saturation_tolerance(const SaturationCase& c) {
  const double norm2 = c.d_k + 10 * std::sqrt(2.0 * c.d_k) + 50;
  const double ds = 2 * gamma(c.d_k, DType::f64) * norm2;
  return 2 * ds * (2 + std::log(double(c.keys))) + 4 * ds + 64 * c.keys * 0x1p-53;
}
// Bytes moved by the normals (Philox), the score GEMM and two softmaxes: q, k written and read,
// scores and weights twice, stats.
inline double saturation_bytes(const SaturationCase& c) {
  return 8.0 * c.rows * (2.0 * c.d_k * (1 + c.keys) + 6.0 * c.keys + 6);
}

}  // namespace attn::gpu_cases
