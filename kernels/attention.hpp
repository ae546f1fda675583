// attention.hpp: batched scaled dot-product attention for many small problems at once.
//
//   Q = X W_Q,  K = X W_K,  V = X W_V,  S = scale * Q K^T,  P = softmax_rows(S),  O = P V
//
// (Vaswani et al. 2017, eq. 1; the lesson's sections 2-3 and 6; scale = 1/sqrt(d_k) there.)
// All arrays are row-major and contiguous, batch outermost:
//   x        (batch, n, d_model)          the words, one row per word
//   w_q, w_k (batch or 1, d_model, d_k)   1: one set of weights shared by the whole batch
//   w_v      (batch or 1, d_model, d_v)
//   q, k     (batch, n, d_k)   v (batch, n, d_v)
//   scores   (batch, heads, n, n)   scaled scores S, masked entries -inf
//   weights  (batch, heads, n, n)   P; rows sum to 1 (all-masked rows are zero)
//   out      (batch, n, d_v)   O
// With causal = true, word i sees words 0..i only (Level 15's mask), else every word.
//
// One AttentionProblem describes an attention call of H = shape.heads heads (Vaswani et al.
// 2017, section 3.2.2): H divides d_k and d_v, head h uses columns [h d_k/H, (h+1) d_k/H) of
// W_Q and W_K and the same share of W_V, q, k, v and out are the heads' columns concatenated,
// and scores, weights (and mask, map) are (batch, H, n, n). The kernels here (and
// Backend::attention_forward) compute one head and refuse H != 1 with std::invalid_argument;
// host/attention_compute.hpp's attention_compute splits several heads into one-head calls.
// Two backends take the same Problem: attention_forward_cpu (OpenMP over the batch; each product
// entry one fused multiply-add per term, ascending, the same bits at every CPU level) and, in a
// CUDA build, attention_forward_cuda (cuBLAS strided-batched GEMM plus a softmax kernel).
//
// Non-finite numbers (softmax.hpp states the softmax half of the rule):
//   - Scores are scale * (q . k). Where that overflows (or is NaN) in T, the entry is computed
//     again by rescued_score below, which folds the scale in before the terms are summed (and
//     sums float terms in double), so a score is +-inf only where the scaled score itself is
//     beyond T's range (float: exactly; double: up to the rounding of scale * q_c * k_c).
//   - A masked key (j > i under causal) never enters the weighted sum: out_i = sum over the
//     visible j of weights_ij v_j, so NaN or +-inf in a masked key or value cannot reach a
//     visible output (no 0 * NaN). Its score is stored as -inf, its weight as 0.
//   - NaN in a visible input gives NaN in exactly the outputs that depend on it.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "hd.hpp"

namespace attn {

enum class CpuLevel;  // cpu_clones.hpp

struct AttentionShape {
  int batch = 1, n = 1, d_model = 1, d_k = 1, d_v = 1;
  bool shared_weights = false;  // w_q, w_k, w_v hold one matrix each, used by every problem
  bool causal = false;
  double scale = 0;  // > 0; 0 means 1/sqrt(d_k / heads)
  int heads = 1;     // H, dividing d_k and d_v; the kernels take 1

  double effective_scale() const {
    return scale != 0 ? scale : 1.0 / std::sqrt(double(d_k / heads));
  }

  // Throws std::invalid_argument naming the first non-positive dimension, for heads that do
  // not divide d_k and d_v, and for a scale that is negative, NaN or infinite.
  void validate() const {
    const struct {
      const char* name;
      int value;
    } dims[] = {{"batch", batch}, {"n", n}, {"d_model", d_model}, {"d_k", d_k}, {"d_v", d_v}};
    for (const auto& d : dims)
      if (d.value < 1)
        throw std::invalid_argument(std::string("attention: ") + d.name + " must be >= 1, got " +
                                    std::to_string(d.value));
    if (heads < 1 || d_k % heads != 0 || d_v % heads != 0)
      throw std::invalid_argument("attention: " + std::to_string(heads) +
                                  " heads do not divide d_k = " + std::to_string(d_k) +
                                  " and d_v = " + std::to_string(d_v));
    if (!(scale >= 0) || std::isinf(scale))
      throw std::invalid_argument("attention: scale must be positive (0 for 1/sqrt(d_k))");
  }

  // validate(), and one head: what the kernels take.
  void validate_one_head() const {
    validate();
    if (heads != 1)
      throw std::invalid_argument("attention: the kernels take one head, got heads = " +
                                  std::to_string(heads) + " (attention_compute splits heads)");
  }
};

template <class T>
struct AttentionProblem {
  AttentionShape shape;
  const T *x = nullptr, *w_q = nullptr, *w_k = nullptr, *w_v = nullptr;  // inputs
  T *q = nullptr, *k = nullptr, *v = nullptr;                            // outputs
  T *scores = nullptr, *weights = nullptr, *out = nullptr;
  // An optional mask (batch, heads, n, n): nonzero where query i may attend key j (PyTorch's
  // boolean attn_mask convention); with causal, key j also needs j <= i. A key it hides is masked
  // as causal masks one (score -inf, weight 0, never read by the weighted sum); a row with no key
  // left has zero weights and a zero output. The CPU twin alone takes one.
  const unsigned char* mask = nullptr;
  // An optional map (batch, heads, n, n): the weights used instead of the softmax's (a patched or
  // frozen map). The scores are computed as without it; weights holds the map on the visible
  // keys and 0 on the masked ones, and out_i = sum over the visible j of map_ij v_j in the
  // order the softmax's weights take, so that the computed weights given back as the map give
  // the same out, bit for bit. The CPU twin alone takes one.
  const T* map = nullptr;
};

// The score of query row q and key row k (d entries each), recomputed so that it overflows only
// where scale * (q . k) is beyond T's range: float terms are exact products summed in double
// then scaled; double terms are (scale * q_c) * k_c. Used for the (rare) entries whose plain
// scale * (q . k) came out non-finite, on the CPU and the GPU alike.
template <class T>
ATTN_HD T rescued_score(const T* q, const T* k, int d, double scale) {
  double acc = 0;
  if constexpr (sizeof(T) == sizeof(float)) {
    for (int c = 0; c < d; ++c) acc += double(q[c]) * double(k[c]);
    return static_cast<T>(scale * acc);
  } else {
    for (int c = 0; c < d; ++c) acc += (scale * q[c]) * k[c];
    return static_cast<T>(acc);
  }
}

// Whether a score needs rescued_score: +-inf or NaN.
template <class T>
ATTN_HD bool score_not_finite(T s) {
  return !(s - s == T(0));
}

// A forward pass in pieces, so that a caller can stop (Ctrl-C) or report progress between
// them. A piece is either whole problems [b0, b1) (step whole, rows [0, n)), or, for a problem
// whose work alone exceeds the budget, rows [r0, r1) of problem b0 in one of two steps: every
// row's project (its rows of q, k, v) comes before any row's attend (its rows of scores,
// weights, out; they read all of k and v). work: the piece's multiply-adds (attention_work).
enum class AttentionStep { whole, project, attend };
struct AttentionPiece {
  AttentionStep step = AttentionStep::whole;
  int b0 = 0, b1 = 1, r0 = 0, r1 = 1;
  double work = 0;
};

// Multiply-adds of one problem: n d_model (2 d_k + d_v) for the projections, n^2 (d_k + d_v) for
// the scores and the weighted sum, n^2 for the softmax (an exp counted as one).
double attention_work(const AttentionShape& s);
// The pieces of a forward pass over the whole batch, in the order they must run: each holds at
// most `budget` multiply-adds, except one row of one step when that alone holds more. Every
// pass over a piece list gives the bits of one whole call. Throws std::invalid_argument for an
// invalid shape or a budget that is not positive.
std::vector<AttentionPiece> attention_pieces(const AttentionShape& s, double budget);

// CPU twin. Inputs and outputs in host memory.
template <class T>
void attention_forward_cpu(const AttentionProblem<T>& p);
// One piece of it (attention_pieces); throws std::invalid_argument for a piece outside p.
template <class T>
void attention_forward_cpu(const AttentionProblem<T>& p, const AttentionPiece& piece);
// The whole call at a CPU level of the caller's choosing (cpu_clones.hpp), at most cpu_level()
// (else std::invalid_argument): every level gives the same bits, which the tests check.
template <class T>
void attention_forward_cpu(const AttentionProblem<T>& p, CpuLevel level);

// The score step alone: scores (batch, n_q, n_k) = scale * q (batch, n_q, d) k (batch, n_k, d)^T.
template <class T>
void batched_scores_cpu(const T* q, const T* k, T* scores, int batch, int n_q, int n_k, int d,
                        T scale);

// The row-softmax step alone, on host memory: weights = softmax(scale * scores) per row of
// length n; with causal, row r of each n x n block sees columns 0..(r mod n).
template <class T>
void softmax_rows_cpu(const T* scores, T* weights, long rows, int n, T scale, bool causal);

// The GPU's row-softmax kernels, side by side (llm.c's habit: keep the versions that matter):
//   v1 thread_per_row: one thread per row calling softmax.hpp's softmax_row, so its weights are
//      the CPU twin's bit for bit (given the same exp); reads are strided across a warp.
//   v2 warp_per_row: a warp per row, max and sum reduced with shuffles; coalesced reads, but the
//      sum is taken in another order than the CPU's (differences of a few ulps).
// The choice (`automatic`): v1 for rows of at most 32 keys, where v2 leaves most of each warp
// idle (softmax-saturation's rows have 3 keys), v2 for longer rows. bench/gpu_bench times both
// on the shapes of tests/gpu_cases.hpp, which is where this threshold is to be checked.
enum class SoftmaxKernel { automatic, thread_per_row, warp_per_row };

#if defined(ATTNLAB_WITH_CUDA)
// Device-resident GPU path: every pointer in the problem is device memory; nothing is
// allocated or copied. Runs on the default stream and returns when the work is queued; errors
// throw std::runtime_error with file and line.
template <class T>
void attention_forward_cuda(const AttentionProblem<T>& p);
// Host wrapper: every pointer in host memory; copies in, calls attention_forward_cuda, copies
// every output back, and returns when they are written. Its device buffers are kept from call
// to call (per host thread and element type, grown when a call needs more), and the copies go
// through page-locked memory.
template <class T>
void attention_forward_cuda_host(const AttentionProblem<T>& host);
// Device-resident steps (device pointers, shapes as the _cpu versions above).
template <class T>
void softmax_rows_cuda(const T* scores, T* weights, long rows, int n, T scale, bool causal,
                       SoftmaxKernel version = SoftmaxKernel::automatic);
template <class T>
void batched_scores_cuda(const T* q, const T* k, T* scores, int batch, int n_q, int n_k, int d,
                         T scale);
#endif

}  // namespace attn
