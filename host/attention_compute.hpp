// attention_compute.hpp: multi-head batched attention on arrays in host memory, the one
// computation behind `demo attention` (host/attention_command.hpp) and the Python module's
// attnlab.attention, so that both give the same bits.
//
// Shapes (row-major, contiguous, batch outermost; T float or double):
//   x                 (batch, n, d_model)
//   w_q, w_k          (count, d_model, d_k)   count = batch when per_entry, else 1 (shared)
//   w_v               (count, d_model, d_v)
//   q, k              (batch, n, d_k)      v, out (batch, n, d_v)
//   scores, weights   (batch, heads, n, n)      mask (batch, heads, n, n) when given
// heads H divides d_k and d_v: head h uses columns [h d_k/H, (h+1) d_k/H) of W_Q and W_K and
// the same share of W_V (Vaswani et al. 2017, section 3.2.2); q, k, v and out are the heads'
// columns concatenated. scale > 0 multiplies every score (the caller resolves the default
// 1/sqrt(d_k / H)). The non-finite rules are kernels/attention.hpp's.
#pragma once

#include <cstddef>

#include "host/backend.hpp"
#include "monitor.hpp"

namespace attn {

template <class T>
struct AttentionArrays {
  const T *x = nullptr, *w_q = nullptr, *w_k = nullptr, *w_v = nullptr;
  std::size_t batch = 1, n = 1, d_model = 1, d_k = 1, d_v = 1;
  bool per_entry = false;  // one set of weights per batch entry, else one shared set
  int heads = 1;
  bool causal = false;
  double scale = 1;
  // An optional mask (batch, heads, n, n), nonzero where query i may attend key j
  // (kernels/attention.hpp's AttentionProblem::mask, per head); nullptr: none.
  const unsigned char* mask = nullptr;
  // An optional map (batch, heads, n, n): each head's weights used instead of its softmax's
  // (kernels/attention.hpp's AttentionProblem::map, per head); nullptr: none.
  const T* map = nullptr;
  // Outputs, every entry written (the caller allocates them, shapes above).
  T *q = nullptr, *k = nullptr, *v = nullptr, *scores = nullptr, *weights = nullptr, *out = nullptr;
};

// Wall and CPU seconds spent in the kernels (added to by attention_compute).
struct KernelTime {
  double wall = 0, cpu = 0;
};

// Computes every output of a on the backend, in pieces with monitor.stop_point() between them
// (Backend::attention_forward) and stop_point() between heads: throws Interrupted when a stop
// was asked (the outputs are then partly written). Throws std::invalid_argument when a
// dimension is beyond 2^31 - 1 or the heads do not divide d_k and d_v.
template <class T>
void attention_compute(const AttentionArrays<T>& a, const Backend& backend, const Monitor& monitor,
                       KernelTime& time);

// Bytes attention_compute allocates itself for a problem of these sizes, beyond a's inputs and
// outputs, T of `word` bytes: with more than one head, a head's columns of the weights, its q, k,
// v, scores, weights and out, and its share of the mask (`masked`) and of the map (`mapped`);
// nothing with one head. For a memory check before any work.
double attention_compute_bytes(std::size_t batch, std::size_t n, std::size_t d_model,
                               std::size_t d_k, std::size_t d_v, bool per_entry, int heads,
                               bool masked, bool mapped, std::size_t word);

// CPU time of this process, all threads (user + system), in seconds.
double process_cpu_seconds();

}  // namespace attn
