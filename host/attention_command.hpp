// attention_command.hpp: `demo attention`, the batched attention kernels on the user's own
// matrices.
//
//   demo attention --x X --w-q WQ --w-k WK --w-v WV [--heads H] [--causal] [--mask M]
//                  [--lengths L] [--scale S]
//                  [--dtype f32|f64] [--device auto|cpu|cuda] [--format table|csv|json|markdown]
//                  [--out DIR [--force] [--no-plots]] [--threads N]
//
// Inputs (.npy, .csv or .json; host/array_io.hpp): x (n, d_model) or (batch, n, d_model);
// W_Q, W_K (d_model, d_k) and W_V (d_model, d_v), each shared by the batch or one per batch
// entry (batch, d_model, ...). --heads H splits d_k and d_v into H heads (Vaswani et al. 2017,
// section 3.2.2: head h uses columns [h d_k/H, (h+1) d_k/H) of W_Q and W_K and the same share
// of W_V), and the heads' outputs are concatenated. The scale defaults to 1/sqrt(d_k / H), the
// head's own d_k (1/sqrt(d_k) with one head, the lesson's). --dtype defaults to float32 when
// every input file is float32 .npy, else float64.
// --mask M (.npy booleans) broadcasts to (batch, heads, n, n), (heads, n, n) for an x of 2 axes:
// True where query i may attend key j (PyTorch's scaled_dot_product_attention convention);
// --lengths L (.npy integers, x's batch shape, each 0 to n) masks keys at or past an entry's
// length. A masked key has score -inf and weight 0 (kernels/attention.hpp); a row with no key
// left has zero weights and output. Masks run on the CPU (--device cuda is refused with one).
//
// Output: a small problem (one entry, n <= 16, every d <= 16) prints the lesson's view (Q, K,
// V, scores, weights, output, rows labelled by position); anything larger prints per-row
// statistics of the weights (max weight, entropy, softmax Jacobian norm; softmax.hpp's
// row_stats). --out DIR writes q.npy, k.npy, v.npy, scores.npy, weights.npy, out.npy (x's batch
// shape; scores and weights (batch, H, n, n) with H > 1), attention.json (provenance and the
// table) and attention-weights.png/.svg (the first entry's weights, for n <= 1024). As the tables'
// --out (host/output.hpp): DIR is checked and locked before any work, and the files appear together
// once stdout is written, or not at all.
//
// Ctrl-C and SIGTERM are honoured within a bounded amount of work: the kernels run in pieces
// (attention.hpp's attention_pieces) with a stop point between them, and every later loop over
// the results asks too; an interrupted run exits with 130 or 143 and writes no file.
//
// Every bad input is refused before any work with one line naming the file and what is wrong
// (exit 2); the non-finite rules of attention.hpp and softmax.hpp apply, with a warning naming
// the first non-finite input.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace attn {

struct AttentionRequest {
  bool chosen = false;  // set when the subcommand was given
  std::string x, w_q, w_k, w_v;
  std::string heads = "1", scale, dtype, device = "auto", format = "table", threads;
  std::string mask, lengths;  // .npy files, empty: none
  bool causal = false, force = false, no_plots = false, quiet = false, verbose = false;
  std::string out_dir;
};

// Registers the `attention` subcommand and its options on app; parsing fills req.
void add_attention_command(CLI::App& app, AttentionRequest& req);

// Runs it: 0 success, 1 a run error, 2 bad input (one line on stderr). command_line: for the
// provenance.
int run_attention_command(const AttentionRequest& req, const std::string& command_line);

}  // namespace attn
