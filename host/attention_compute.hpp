// attention_compute.hpp: multi-head batched attention on arrays in host memory, the one
// computation behind `demo attention` (host/attention_command.hpp) and the Python module's
// attnlab.attention, so that both give the same bits.
//
// The problem is kernels/attention.hpp's AttentionProblem, of any number of heads (shapes
// there; row-major, contiguous, batch outermost; T float or double):
//   x                 (batch, n, d_model)
//   w_q, w_k          (count, d_model, d_k)   count = 1 with shared_weights, else batch
//   w_v               (count, d_model, d_v)
//   q, k              (batch, n, d_k)      v, out (batch, n, d_v)
//   scores, weights   (batch, heads, n, n)      mask, map (batch, heads, n, n) when given
// heads H divides d_k and d_v: head h uses columns [h d_k/H, (h+1) d_k/H) of W_Q and W_K and
// the same share of W_V (Vaswani et al. 2017, section 3.2.2); q, k, v and out are the heads'
// columns concatenated. The non-finite rules are kernels/attention.hpp's.
#pragma once

#include <cstddef>

#include "attention.hpp"
#include "host/backend.hpp"
#include "monitor.hpp"

namespace attn {

// The shape of a problem of these sizes (scale: kernels/attention.hpp's AttentionShape::scale).
// Throws std::invalid_argument "attention: a dimension beyond 2^31 - 1" when a size does not fit
// the kernels' int, and AttentionShape::validate's errors for the rest.
AttentionShape attention_shape(std::size_t batch, std::size_t n, std::size_t d_model,
                               std::size_t d_k, std::size_t d_v, int heads, bool shared_weights,
                               bool causal, double scale);

// Wall and CPU seconds spent in the kernels (added to by attention_compute).
struct KernelTime {
  double wall = 0, cpu = 0;
};

// Computes every output of p (every pointer in host memory, every output entry written) on the
// backend: one head as one Backend::attention_forward call, several as one call per head on
// that head's columns and its share of the mask and map. In pieces with monitor.stop_point()
// between them (Backend::attention_forward) and stop_point() between heads: throws Interrupted
// when a stop was asked (the outputs are then partly written). Throws std::invalid_argument for
// a shape AttentionShape::validate refuses.
template <class T>
void attention_compute(const AttentionProblem<T>& p, const Backend& backend, const Monitor& monitor,
                       KernelTime& time);

// Bytes attention_compute allocates itself for a problem of these sizes, beyond p's inputs and
// outputs, T of `word` bytes: with more than one head, a head's columns of the weights, its q, k,
// v, scores, weights and out, and its share of the mask (`masked`) and of the map (`mapped`);
// nothing with one head. For a memory check before any work.
double attention_compute_bytes(std::size_t batch, std::size_t n, std::size_t d_model,
                               std::size_t d_k, std::size_t d_v, bool shared_weights, int heads,
                               bool masked, bool mapped, std::size_t word);

// CPU time of this process, all threads (user + system), in seconds.
double process_cpu_seconds();

}  // namespace attn
