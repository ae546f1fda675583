// interventions.hpp: does the head use its map? Spec: docs/spec/VARIABILITY.md, version 3, "Does
// the head use its map?". With a seed's final weights, on the measured inputs, nothing retrained:
//
// - Interventions: every head's map P_h replaced, the outputs and the loss recomputed
//   (head::evaluate_seeds_cpu with its `replace`): `uniform` (1/k on the k visible keys of each
//   row), `permuted` (each row's visible weights permuted by permute_row's generator), `patched`
//   (the pair partner's maps, heads matched by min_assignment over the heads' JSDs) and `known`
//   (M*'s one-hot rows, or the teacher's maps with heads matched likewise). For each, ΔL = L′ − L
//   (L the seed's loss on the measured inputs, its test loss) and the output distance
//   √(mean over measured inputs and loss rows of ‖F′_r − F_r‖²) (rms_distance).
// - The adversarial map (Jain and Wallace 2019, section 4): per head, measured input and loss
//   row, the largest JSD(p′, p) with ‖(p′ − p) V_h‖₂ ≤ ε (adversarial_row; docs/spec/
//   VARIABILITY.md, "The adversarial map's method", says how); per seed the mean over rows of
//   the JSD reached and the fraction of rows where it is above kNotUniqueJsd ("not unique").
// - Importance (Jain and Wallace, section 3): per head, measured input and loss row with k >= 2
//   visible keys, the leave-one-out importance I_j = ‖p V_h − p⁽⁻ʲ⁾ V_h‖₂ (p⁽⁻ʲ⁾: the row without
//   key j, renormalised; keys with p_j = 1 skipped), and Kendall's τ_b between the p_j and the
//   I_j; per seed the mean τ_b over the rows where it is defined.
#pragma once

#include <cstdint>
#include <vector>

#include "experiments/map_measures.hpp"
#include "kernels/head.hpp"
#include "kernels/monitor.hpp"

namespace attn {

// Kendall's τ_b of the pairs (x_i, y_i), i < k, ties counted (Kendall 1945): (n_c − n_d) /
// √((n_0 − n_1)(n_0 − n_2)), n_0 = k(k−1)/2, n_1 and n_2 the pairs tied in x and in y. Computed
// by Knight's O(k log k) method (JASA 61, 1966): sort by (x, y), count the ties, count the
// discordant pairs as the exchanges of a merge sort of y. NaN when k < 2 or either variable is
// constant. Values compare exactly (==).
double kendall_tau_b(const double* x, const double* y, int k);

// The leave-one-out importance of each of the k visible keys of a row: I_j = ‖p V − p⁽⁻ʲ⁾ V‖₂,
// p⁽⁻ʲ⁾ = p without key j divided by 1 − p_j; NaN where p_j = 1. v: the keys' values, row j at
// v + j * stride, d of them.
void leave_one_out(const double* p, const double* v, int k, int d, int stride, double* importance);

// Row i's visible weights (k of them, p) permuted uniformly at random into out: Fisher-Yates
// (out = p; for j = k−1 down to 1 swap out[j] with out[u], u uniform in [0, j]) with u from
// Philox4x32-10 (kernels/philox.hpp) keyed by the seed (its low, then high 32 bits), counter
// (head, input, row, block) for the block-th four words, one word a draw taken in order; u =
// Lemire's multiply-shift of a word by j + 1 with rejection (Lemire 2019: exact). `row` is the
// row's index in R (0 for the first loss row), `input` the measured input's.
void permute_row(std::uint64_t seed, int head, int input, int row, const double* p, int k,
                 double* out);

// The adversarial row (see the top): for the k visible weights p of a row and their values v (row
// j at v + j * stride, d of them), the p′ on the simplex with ‖(p′ − p) V‖₂ ≤ epsilon that the
// method finds (docs/spec/VARIABILITY.md, "The adversarial map's method"), written to out (k
// values) when not nullptr; returns JSD(p′, p). k = 1: p′ = p, 0. A value not finite, or epsilon
// NaN or negative: NaN (out NaN). No allocation once the thread has searched a row of k keys.
// The search asks monitor for a stop at each of its steps (a row of many keys takes long): when
// one is asked for it ends there, with NaN.
double adversarial_row(const double* p, const double* v, int k, int d, int stride, double epsilon,
                       double* out = nullptr, const Monitor& monitor = silent_monitor());

// What measure_interventions needs beside the seeds: the model, the measured inputs (x, y:
// `inputs` of them, as evaluate_seeds_cpu takes them), the measured shape, the known maps (every
// head's on every measured input, inputs x H x |R| x n; empty: no known map), ε, and with a map
// frozen to the known one (m.map known) the frozen maps on the measured inputs.
struct InterventionTask {
  head::Model m;
  const double* x = nullptr;
  const double* y = nullptr;
  int inputs = 1;
  SeedResults shape;
  std::vector<double> known;  // inputs x H x |R| x n, or empty
  double epsilon = kDefaultEpsilon;
  bool adversary = true;  // false: the adversarial measures are NaN (not searched)
  // m.map known: the measured inputs' frozen maps (evaluate_seeds_cpu's known).
  const double* frozen_known = nullptr;
};

// The intervention measures of `count` seeds (pairs (0, 1), (2, 3), ... of them, the pairwise
// JSD's: count even but at the end of the seeds), out + i * kInterventionFields for seed i:
// weights at weights + i * stride (weights_size values), results at results + i *
// shape.size() (SeedResults), seeds[i] the seed (permute_row's key). Throws Interrupted when
// monitor says stop.
void measure_interventions(const InterventionTask& task, const double* weights, std::int64_t stride,
                           const double* results, const std::uint64_t* seeds, std::int64_t count,
                           double* out, const Monitor& monitor = silent_monitor());

// The heads' assignment that patched and known use: column[h] = the head of b matched to head
// h of a, minimising the sum over heads of the JSD of their maps (each the mean over the
// measured inputs and loss rows; maps in SeedResults' layout).
std::vector<int> matched_heads(const SeedResults& shape, const double* a_maps,
                               const double* b_maps);

}  // namespace attn
