// attention_command.cpp: see attention_command.hpp.
#include "host/attention_command.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "attention.hpp"
#include "host/array_io.hpp"
#include "host/attention_compute.hpp"
#include "host/backend.hpp"
#include "host/format.hpp"
#include "host/memory.hpp"
#include "host/output.hpp"
#include "host/parse.hpp"
#include "host/plots.hpp"
#include "host/progress.hpp"
#include "host/provenance.hpp"
#include "moments.hpp"
#include "softmax.hpp"

namespace attn {
namespace {

// Bad input: one line, exit 2, before any work.
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* const kOutputs[] = {"q", "k", "v", "scores", "weights", "out"};

// The most words a heatmap figure draws (n^2 cells of entry 0).
constexpr std::size_t kFigureWords = 1024;

// The stop test of a run without a Progress: a signal (Ctrl-C, SIGTERM), as stop_point() asks.
struct SignalMonitor : Monitor {
  bool stop_requested() const override { return stop_requested_by_signal(); }
};

// The parsed, checked request.
struct Plan {
  Array x, wq, wk, wv;
  std::size_t batch = 1, n = 1, d_model = 1, d_k = 1, d_v = 1;
  bool x_batched = false;  // x had 3 axes (outputs keep a batch axis)
  bool per_entry = false;  // some weight had a batch axis: every weight is per entry
  int heads = 1;
  bool causal = false, f32 = false;
  double scale = 0;
  // --mask and --lengths, as one (batch, heads, n, n) mask (AttentionProblem::mask): 1 where
  // query i may attend key j; empty when neither is given.
  std::vector<unsigned char> mask;
  std::vector<std::size_t> mask_shape, lengths_shape;  // as read, for the provenance
  double device_bytes = 0;  // what the GPU path needs at once: inputs and one head's outputs
};

// A weight's (d_model, cols) and whether it is per entry, checked against x.
std::size_t check_weight(const std::string& label, const std::string& path, const Array& w,
                         const Plan& p, const std::string& x_path) {
  const std::size_t rows = w.shape[w.shape.size() - 2], cols = w.shape.back();
  if (w.shape.size() == 3 && w.shape[0] != p.batch)
    throw BadInput(label + " " + path + ": a batch of " + std::to_string(w.shape[0]) +
                   " weight matrices, shape " + w.shape_text() + ", but --x " + x_path +
                   " holds a batch of " + std::to_string(p.batch) + ", shape " + p.x.shape_text());
  if (rows != p.d_model)
    throw BadInput(label + " " + path + ": shape " + w.shape_text() + " does not fit --x " +
                   x_path + " shape " + p.x.shape_text() +
                   ": it needs d_model = " + std::to_string(p.d_model) + " rows");
  return cols;
}

// Whether shape `from` broadcasts to `to` (numpy's rule: aligned on the right, each axis equal
// or 1).
bool broadcasts(const std::vector<std::size_t>& from, const std::vector<std::size_t>& to) {
  if (from.size() > to.size()) return false;
  for (std::size_t i = 0; i < from.size(); ++i) {
    const std::size_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

// --mask and --lengths into p.mask, refused before any work when they do not fit x. The mask
// broadcasts to (batch, heads, n, n), or to (heads, n, n) for an x of 2 axes, as PyTorch's
// scaled_dot_product_attention and attnlab.attention read it; lengths has x's batch shape ((),
// (1,) for an x of 2 axes), each from 0 to n: key j of entry b is kept while j < lengths[b].
void plan_mask(const AttentionRequest& r, Plan& p, std::size_t budget) {
  if (r.mask.empty() && r.lengths.empty()) return;
  Bools m;
  Integers len;
  try {
    if (!r.mask.empty()) m = load_npy_bools("--mask", r.mask, budget);
    if (!r.lengths.empty()) len = load_npy_integers("--lengths", r.lengths, budget);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw BadInput(e.what());
  }
  stop_point();
  const std::size_t B = p.batch, H = std::size_t(p.heads), n = p.n;
  std::vector<std::size_t> target = {H, n, n};
  if (p.x_batched) target.insert(target.begin(), B);
  if (!r.mask.empty()) {
    if (!broadcasts(m.shape, target))
      throw BadInput("--mask " + r.mask + ": shape " + shape_text(m.shape) +
                     " does not broadcast to (" + std::string(p.x_batched ? "batch, " : "") +
                     "heads, n, n) = " + shape_text(target));
    p.mask_shape = m.shape;
  }
  if (!r.lengths.empty()) {
    const bool fits = p.x_batched ? len.shape == std::vector<std::size_t>{B}
                                  : len.shape.empty() || len.shape == std::vector<std::size_t>{1};
    if (!fits)
      throw BadInput("--lengths " + r.lengths + ": shape " + shape_text(len.shape) +
                     ", expected x's batch shape " +
                     (p.x_batched ? shape_text({B}) : std::string("() or (1,)")) + " (--x " + r.x +
                     " shape " + p.x.shape_text() + ")");
    for (std::size_t b = 0; b < len.data.size(); ++b)
      if (len.data[b] < 0 || std::size_t(len.data[b]) > n)
        throw BadInput("--lengths " + r.lengths + ": entry " + std::to_string(b) + " is " +
                       len.text(b) + ", outside 0 to n = " + std::to_string(n));
    p.lengths_shape = len.shape;
  }
  // Expanded to (B, H, n, n): the mask's element for each index (stride 0 along an axis of 1).
  std::vector<std::size_t> stride(4, 0);
  if (!r.mask.empty()) {
    std::vector<std::size_t> shape4(4 - m.shape.size(), 1);
    shape4.insert(shape4.end(), m.shape.begin(), m.shape.end());
    std::size_t s = 1;
    for (std::size_t d = 4; d-- > 0;) {
      stride[d] = shape4[d] == 1 ? 0 : s;
      s *= shape4[d];
    }
  }
  p.mask.resize(B * H * n * n);
  StopEvery stops(double(1 << 24));
  for (std::size_t b = 0; b < B; ++b) {
    const std::size_t keys = r.lengths.empty() ? n : std::size_t(len.data[b]);
    for (std::size_t h = 0; h < H; ++h) {
      stops.add(double(n * n));
      for (std::size_t i = 0; i < n; ++i) {
        unsigned char* row = p.mask.data() + ((b * H + h) * n + i) * n;
        for (std::size_t j = 0; j < n; ++j) {
          const bool kept = r.mask.empty() ||
                            m.data[b * stride[0] + h * stride[1] + i * stride[2] + j * stride[3]];
          row[j] = kept && j < keys;
        }
      }
    }
  }
}

// The first entry of a (C order) for which bad(value) holds: its index ("[i, j]") in where and
// its value in value; false when there is none.
template <class Bad>
bool first_entry(const Array& a, Bad bad, std::string& where, double& value) {
  StopEvery stops(double(1 << 24));
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    stops.add(1);
    if (!bad(a.data[i])) continue;
    std::vector<std::size_t> idx(a.shape.size());
    std::size_t r = i;
    for (std::size_t d = a.shape.size(); d-- > 0;) {
      idx[d] = r % a.shape[d];
      r /= a.shape[d];
    }
    where = "[";
    for (std::size_t d = 0; d < idx.size(); ++d) where += (d ? ", " : "") + std::to_string(idx[d]);
    where += "]";
    value = a.data[i];
    return true;
  }
  return false;
}

// The first non-finite entry of an input, for the warning.
bool first_non_finite(const Array& a, std::string& where, double& value) {
  return first_entry(
      a, [](double v) { return !std::isfinite(v); }, where, value);
}

// The four inputs as messages name them: the option, the array read, its file.
struct NamedInput {
  const char* option;
  const Array* array;
  const std::string* path;
};
std::array<NamedInput, 4> named_inputs(const Plan& p, const AttentionRequest& r) {
  return {{{"--x", &p.x, &r.x},
           {"--w-q", &p.wq, &r.w_q},
           {"--w-k", &p.wk, &r.w_k},
           {"--w-v", &p.wv, &r.w_v}}};
}

// Under --dtype f32, a finite input or scale that float32 cannot hold (it would become +-inf, or
// the scale 0) is refused: the outputs would be NaN or uniform with nothing said.
void refuse_beyond_float32(const Plan& p, const AttentionRequest& r) {
  if (!p.f32) return;
  const auto inputs = named_inputs(p, r);
  for (const auto& [label, array, path] : inputs) {
    std::string where;
    double value;
    if (!array->float32 &&
        first_entry(
            *array, [](double v) { return std::isfinite(v) && std::isinf(static_cast<float>(v)); },
            where, value))
      throw BadInput(std::string(label) + " " + *path + ": " + round_trip(value) + " at " + where +
                     " is beyond float32's range (--dtype f32; f64 holds it)");
  }
  const auto scale = static_cast<float>(p.scale);
  if (scale == 0 || std::isinf(scale))
    throw BadInput("--scale " + r.scale + " is " + (scale == 0 ? "0" : "inf") +
                   " in float32 (--dtype f32; f64 holds it)");
}

Plan plan_request(const AttentionRequest& r) {
  Plan p;
  const std::pair<const char*, const std::string*> given[] = {
      {"--x", &r.x}, {"--w-q", &r.w_q}, {"--w-k", &r.w_k}, {"--w-v", &r.w_v}};
  for (const auto& [label, path] : given)
    if (path->empty()) throw BadInput(std::string(label) + ": a file is required");
  try {
    p.heads = static_cast<int>(parse_int("--heads", r.heads, 1, 1 << 20));
    if (!r.scale.empty()) p.scale = parse_real("--scale", r.scale, 0, 1e300, true);
    if (!r.dtype.empty()) parse_choice("--dtype", r.dtype, {"f32", "f64"});
    parse_choice("--device", r.device, {"auto", "cpu", "cuda"});
    parse_format("--format", r.format);
    if (!r.threads.empty()) parse_threads("--threads", r.threads);
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  const std::size_t budget =
      static_cast<std::size_t>(std::fmax(0.0, std::fmin(memory_available(), 0x1p62)));
  try {
    p.x = load_array("--x", r.x, budget);
    p.wq = load_array("--w-q", r.w_q, budget);
    p.wk = load_array("--w-k", r.w_k, budget);
    p.wv = load_array("--w-v", r.w_v, budget);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw BadInput(e.what());
  }
  // A stop asked for while the inputs were read is honoured before they are checked: a
  // refusal that follows (their shapes, the memory they need) must not answer a signal.
  stop_point();
  p.x_batched = p.x.shape.size() == 3;
  p.batch = p.x_batched ? p.x.shape[0] : 1;
  p.n = p.x.shape[p.x.shape.size() - 2];
  p.d_model = p.x.shape.back();
  p.d_k = check_weight("--w-q", r.w_q, p.wq, p, r.x);
  const std::size_t dk2 = check_weight("--w-k", r.w_k, p.wk, p, r.x);
  if (dk2 != p.d_k)
    throw BadInput("--w-k " + r.w_k + ": shape " + p.wk.shape_text() +
                   " gives d_k = " + std::to_string(dk2) + ", but --w-q " + r.w_q + " shape " +
                   p.wq.shape_text() + " gives d_k = " + std::to_string(p.d_k));
  p.d_v = check_weight("--w-v", r.w_v, p.wv, p, r.x);
  p.per_entry = p.wq.shape.size() == 3 || p.wk.shape.size() == 3 || p.wv.shape.size() == 3;
  if (p.d_k % p.heads != 0)
    throw BadInput("--heads " + std::to_string(p.heads) + ": d_k = " + std::to_string(p.d_k) +
                   " (--w-q " + r.w_q + ") is not divisible by it");
  if (p.d_v % p.heads != 0)
    throw BadInput("--heads " + std::to_string(p.heads) + ": d_v = " + std::to_string(p.d_v) +
                   " (--w-v " + r.w_v + ") is not divisible by it");
  const std::size_t int_max = 0x7fffffff;
  if (p.batch > int_max || p.n > int_max || p.d_model > int_max || p.d_k > int_max ||
      p.d_v > int_max)
    throw BadInput("--x " + r.x + ": shape " + p.x.shape_text() + " has a dimension beyond 2^31");
  p.causal = r.causal;
  if ((!r.mask.empty() || !r.lengths.empty()) && r.device == "cuda")
    throw BadInput(std::string(r.mask.empty() ? "--lengths" : "--mask") +
                   ": the CUDA path takes no mask (--device cpu or auto)");
  p.f32 = r.dtype.empty() ? (p.x.float32 && p.wq.float32 && p.wk.float32 && p.wv.float32)
                          : r.dtype == "f32";
  if (p.scale == 0) p.scale = 1.0 / std::sqrt(double(p.d_k / p.heads));
  refuse_beyond_float32(p, r);

  // Memory: inputs as loaded (double) and converted, outputs, and one head's working set.
  const double word = p.f32 ? 4 : 8, B = double(p.batch), n = double(p.n);
  const double w_count = p.per_entry ? B : 1;
  const double inputs = B * n * p.d_model + w_count * p.d_model * (2.0 * p.d_k + p.d_v);
  const double outputs = B * n * (2.0 * p.d_k + 2.0 * p.d_v) + 2.0 * B * p.heads * n * n;
  const double per_head = outputs / p.heads + inputs;
  // The mask: one byte a query-key pair, and one head's copy with several heads.
  const double mask_bytes =
      !r.mask.empty() || !r.lengths.empty() ? B * n * n * (p.heads + (p.heads > 1 ? 1.0 : 0.0)) : 0;
  const double need =
      8 * inputs + word * (inputs + outputs + (p.heads > 1 ? per_head : 0)) + mask_bytes;
  p.device_bytes = word * (inputs + per_head);
  if (need > double(budget))
    throw BadInput("--x " + r.x + " shape " + p.x.shape_text() + ": the problem needs about " +
                   human_bytes(need) + " of memory (scores and weights alone " +
                   human_bytes(word * 2.0 * B * p.heads * n * n) + "), this machine has " +
                   human_bytes(double(budget)) + " available");
  plan_mask(r, p, budget);
  return p;
}

// An allocator that leaves new elements uninitialized: the kernels write every output entry, so
// zero-filling gigabytes first would only cost time.
template <class T>
struct UninitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) {}
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    if constexpr (sizeof...(A) == 0)
      ::new (static_cast<void*>(p)) U;
    else
      ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};
template <class T>
using Buffer = std::vector<T, UninitAllocator<T>>;

// The outputs, assembled across heads, in the compute type.
template <class T>
struct Result {
  Buffer<T> q, k, v, scores, weights, out;  // (B, n, d_k) ... (B, H, n, n) ... (B, n, d_v)
};

template <class T>
std::vector<T> convert(const std::vector<double>& a) {
  return std::vector<T>(a.begin(), a.end());
}

// Weights as `count` matrices: the shared one, or one per batch entry (copied for a shared
// one when another weight is per entry).
template <class T>
std::vector<T> per_entry(const Array& w, std::size_t batch, bool want_per_entry) {
  std::vector<T> a = convert<T>(w.data);
  if (!want_per_entry || w.shape.size() == 3) return a;
  std::vector<T> out;
  out.reserve(a.size() * batch);
  for (std::size_t b = 0; b < batch; ++b) out.insert(out.end(), a.begin(), a.end());
  return out;
}

template <class T>
Result<T> compute(const Plan& p, const Backend& backend, KernelTime& time) {
  const std::size_t B = p.batch, n = p.n, H = p.heads;
  const std::vector<T> x = convert<T>(p.x.data);
  const std::vector<T> wq = per_entry<T>(p.wq, B, p.per_entry),
                       wk = per_entry<T>(p.wk, B, p.per_entry),
                       wv = per_entry<T>(p.wv, B, p.per_entry);
  Result<T> r;
  r.q.resize(B * n * p.d_k);
  r.k.resize(B * n * p.d_k);
  r.v.resize(B * n * p.d_v);
  r.out.resize(B * n * p.d_v);
  r.scores.resize(B * H * n * n);
  r.weights.resize(B * H * n * n);
  AttentionProblem<T> a;
  a.shape =
      attention_shape(B, n, p.d_model, p.d_k, p.d_v, p.heads, !p.per_entry, p.causal, p.scale);
  a.x = x.data();
  a.w_q = wq.data();
  a.w_k = wk.data();
  a.w_v = wv.data();
  a.mask = p.mask.empty() ? nullptr : p.mask.data();
  a.q = r.q.data();
  a.k = r.k.data();
  a.v = r.v.data();
  a.scores = r.scores.data();
  a.weights = r.weights.data();
  a.out = r.out.data();
  attention_compute(a, backend, SignalMonitor(), time);
  return r;
}

bool is_small(const Plan& p) {
  return p.batch == 1 && p.n <= 16 && p.d_model <= 16 && p.d_k <= 16 && p.d_v <= 16;
}

template <class T>
std::vector<double> as_double(const T* a, std::size_t count) {
  return std::vector<double>(a, a + count);
}

// The lesson's view: every matrix of the one problem, rows labelled by position.
template <class T>
Table lesson_view(const Plan& p, const Result<T>& r) {
  Table t;
  t.name = "attention";
  t.title = "attention on your matrices: softmax(scale Q K^T) V, scale " + fixed(p.scale, 4) +
            (p.causal ? ", causal" : "") + (p.mask.empty() ? "" : ", masked") +
            (p.heads > 1 ? ", " + std::to_string(p.heads) + " heads" : "");
  t.columns = matrix_columns();
  std::vector<std::string> names;
  for (std::size_t i = 0; i < p.n; ++i) names.push_back(std::to_string(i));
  const int n = static_cast<int>(p.n);
  const std::string all = p.heads > 1 ? "all heads" : "attention";
  add_matrix_rows(t, all, "Q", as_double(r.q.data(), r.q.size()).data(), n, static_cast<int>(p.d_k),
                  names);
  add_matrix_rows(t, all, "K", as_double(r.k.data(), r.k.size()).data(), n, static_cast<int>(p.d_k),
                  names);
  add_matrix_rows(t, all, "V", as_double(r.v.data(), r.v.size()).data(), n, static_cast<int>(p.d_v),
                  names);
  for (int h = 0; h < p.heads; ++h) {
    const std::string c = p.heads > 1 ? "head " + std::to_string(h) : all;
    add_matrix_rows(t, c, "scores", as_double(r.scores.data() + h * p.n * p.n, p.n * p.n).data(), n,
                    n, names);
    add_matrix_rows(t, c, "weights", as_double(r.weights.data() + h * p.n * p.n, p.n * p.n).data(),
                    n, n, names);
  }
  add_matrix_rows(t, all, "output", as_double(r.out.data(), r.out.size()).data(), n,
                  static_cast<int>(p.d_v), names);
  t.notes.push_back("scores are scale * q_i . k_j (row i = query i, column j = key j)" +
                    std::string(p.causal || !p.mask.empty()
                                    ? "; masked keys show -inf and weight 0 (a row with no key "
                                      "left: zero weights and output)"
                                    : ""));
  return t;
}

// Per-row statistics of the weights over every row of every entry and head.
template <class T>
Table summary_view(const Plan& p, const Result<T>& r) {
  Table t;
  t.name = "attention";
  t.title = "attention on your matrices: " + human_count(p.batch, "problem", "problems") + ", n " +
            std::to_string(p.n) + ", d_model " + std::to_string(p.d_model) + ", d_k " +
            std::to_string(p.d_k) + ", d_v " + std::to_string(p.d_v) + ", " +
            human_count(p.heads, "head", "heads") + ", scale " + fixed(p.scale, 4) +
            (p.causal ? ", causal" : "") + (p.mask.empty() ? "" : ", masked") +
            "; statistics of each row of weights";
  t.columns = {{"statistic"},   {"rows", ""},    {"mean", "%.4g"},  {"std", "%.4g"},
               {"min", "%.4g"}, {"max", "%.4g"}, {"non_finite", ""}};
  const std::size_t rows = p.batch * p.heads * p.n;
  // Mean and std from Moments (Welford's update): no sum of squares to cancel or overflow.
  struct Acc {
    Moments moments;
    double lo = INFINITY, hi = -INFINITY;
    std::int64_t count = 0, bad = 0;
  } acc[3];
  std::vector<double> row(p.n);
  std::int64_t empty_rows = 0;
  StopEvery stops(double(1 << 22));  // units: weights, each an exp or a log in row_stats
  for (std::size_t i = 0; i < rows; ++i) {
    stops.add(double(p.n));
    // The row's keys that are not masked (causal: 0..i; the mask's), in order.
    const std::size_t causal_end = p.causal ? i % p.n + 1 : p.n;
    std::size_t visible = 0;
    for (std::size_t j = 0; j < causal_end; ++j)
      if (p.mask.empty() || p.mask[i * p.n + j]) row[visible++] = r.weights[i * p.n + j];
    if (visible == 0) {  // no key left: zero weights, no distribution to describe
      ++empty_rows;
      continue;
    }
    const RowStats st = row_stats(row.data(), static_cast<int>(visible));
    const double v[3] = {st.max_weight, st.entropy, st.jacobian_norm};
    for (int s = 0; s < 3; ++s) {
      if (!std::isfinite(v[s])) {
        ++acc[s].bad;
        continue;
      }
      acc[s].moments.push(v[s]);
      acc[s].lo = std::fmin(acc[s].lo, v[s]);
      acc[s].hi = std::fmax(acc[s].hi, v[s]);
      ++acc[s].count;
    }
  }
  const char* names[3] = {"max_weight", "entropy", "jacobian_norm"};
  for (int s = 0; s < 3; ++s) {
    const bool any = acc[s].count > 0;
    t.add_row({std::string(names[s]), acc[s].count, any ? acc[s].moments.mean : NAN,
               acc[s].moments.stddev(1), any ? acc[s].lo : NAN, any ? acc[s].hi : NAN, acc[s].bad});
  }
  t.notes.push_back(
      "per row of weights (query), over every entry and head: the largest weight, "
      "the entropy in nats, ||J||_F of the softmax Jacobian (softmax.hpp); rows "
      "with a NaN weight are counted as non_finite and left out");
  if (!p.mask.empty())
    t.notes.push_back("over each row's keys that are not masked; " +
                      human_count(empty_rows, "row", "rows") +
                      " with no key left (zero weights) are left out");
  return t;
}

// The heatmap's panels (one per head, up to 8) in rows of up to 4: {rows, columns}.
std::pair<int, int> heatmap_layout(int heads) {
  const int panels = std::min(heads, 8), columns = std::min(panels, 4);
  return {(panels + columns - 1) / columns, columns};
}

// Heatmap of entry 0's weights, one panel per head (up to 8, heatmap_layout). The title names
// the inputs (x's file and shape), the entry where x holds a batch, the sizes, heads, scale,
// causal, mask and lengths, and the dtype.
template <class T>
std::string heatmap_script(const AttentionRequest& q, const Plan& p, const Result<T>& r) {
  const auto [rows, columns] = heatmap_layout(p.heads);
  const std::size_t n = p.n, panels = std::min<std::size_t>(p.heads, 8);
  std::string config = "--x " + std::filesystem::path(q.x).filename().string() + ", shape " +
                       p.x.shape_text() + ": n " + std::to_string(p.n) + ", d_model " +
                       std::to_string(p.d_model) + ", d_k " + std::to_string(p.d_k) + ", d_v " +
                       std::to_string(p.d_v) + ", " + human_count(p.heads, "head", "heads") +
                       ", scale " + human_number(p.scale);
  if (p.causal) config += ", causal";
  if (!q.mask.empty()) config += ", mask " + std::filesystem::path(q.mask).filename().string();
  if (!q.lengths.empty())
    config += ", lengths " + std::filesystem::path(q.lengths).filename().string();
  config += p.f32 ? ", float32" : ", float64";
  // A key the mask hides from a query (causal, --mask, --lengths): grey (and "-" where cells are
  // labelled), not the white of a weight of 0 (index into entry 0's (heads, n, n) weights).
  const auto masked = [&](std::size_t at) {
    return (p.causal && at % n > (at / n) % n) || (!p.mask.empty() && !p.mask[at]);
  };
  const bool any_masked = p.causal || !p.mask.empty();
  std::string s =
      "set multiplot layout " + std::to_string(rows) + "," + std::to_string(columns) + " title " +
      plot::title_lines(
          {"attention weights" +
               (p.batch > 1 ? " of entry 0 of " + std::to_string(p.batch) : std::string()) +
               " (row = query, column = key)",
           config,
           std::string(p.heads > 8 ? "heads 0 to 7 of " + std::to_string(p.heads) + " drawn" : "") +
               (any_masked ? std::string(p.heads > 8 ? "; " : "") + "grey: a masked key" : "")},
          std::max<std::size_t>(60, static_cast<std::size_t>(columns) * 70)) +
      " noenhanced\n"
      "set palette defined (0 '#ffffff', 1 '#6f9fd8')\nset cbrange [0:1]\n"
      "set xlabel 'key'\nset ylabel 'query'\nset size ratio 1\n"
      "set xrange [-0.5:" +
      std::to_string(n - 0.5) + "]\nset yrange [" + std::to_string(n - 0.5) + ":-0.5]\n";
  const std::size_t step = n <= 16 ? 1 : (n + 15) / 16;
  s += "set xtics 0," + std::to_string(step) + "\nset ytics 0," + std::to_string(step) + "\n";
  for (std::size_t h = 0; h < panels; ++h) {
    s += "$M" + std::to_string(h) + " << EOD\n";
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        const std::size_t at = h * n * n + i * n + j;
        const double w = r.weights[at];
        char value[32];
        std::snprintf(value, sizeof value, "%.3f", w);
        const bool hidden = masked(at);
        // x y weight label masked: the weight NaN (not filled) where masked or not finite.
        s += std::to_string(j) + " " + std::to_string(i) + " " +
             (std::isfinite(w) && !hidden ? round_trip(w) : std::string("NaN")) + " " +
             (hidden             ? "-"
              : std::isfinite(w) ? value
                                 : "NaN") +
             (hidden ? " 1" : " 0") + "\n";
      }
    s += "EOD\nset title '" + (p.heads > 1 ? "head " + std::to_string(h) : std::string("")) +
         "'\nplot " + plot::cells("$M" + std::to_string(h), "1", "2", "3");
    if (any_masked)
      s += ", $M" + std::to_string(h) +
           " using 1:($5>0?$2:NaN):(0.5):(0.5) with boxxyerror fill solid 1.0 noborder lc rgb "
           "'#d9d9d9' notitle";
    if (n <= 12) s += ", $M" + std::to_string(h) + " using 1:2:4 with labels notitle";
    s += "\n";
  }
  return s + "unset multiplot\n";
}

template <class T>
std::vector<std::size_t> out_shape(const Plan& p, std::size_t cols) {
  if (p.x_batched) return {p.batch, p.n, cols};
  return {p.n, cols};
}

template <class T>
std::vector<std::size_t> square_shape(const Plan& p) {
  std::vector<std::size_t> s;
  if (p.x_batched) s.push_back(p.batch);
  if (p.heads > 1) s.push_back(std::size_t(p.heads));
  s.push_back(p.n);
  s.push_back(p.n);
  return s;
}

// Warnings: the first non-finite input, and scores that are +-inf.
template <class T>
void warn_non_finite(const Plan& p, const AttentionRequest& r, const Result<T>& res) {
  const auto inputs = named_inputs(p, r);
  for (const auto& [label, array, path] : inputs) {
    std::string where;
    double value;
    if (first_non_finite(*array, where, value)) {
      spdlog::warn(
          "warning: {} {} holds {} at {} (the first non-finite input); the outputs that "
          "depend on it are non-finite, masked keys excepted",
          label, *path, round_trip(value), where);
      break;
    }
  }
  std::size_t inf_scores = 0;
  StopEvery stops(double(1 << 24));
  for (std::size_t i = 0; i < res.scores.size(); ++i) {
    stops.add(1);
    const bool masked =
        (p.causal && (i % p.n) > (i / p.n) % p.n) || (!p.mask.empty() && !p.mask[i]);
    if (!masked && std::isinf(res.scores[i])) ++inf_scores;
  }
  if (inf_scores > 0)
    spdlog::warn(
        "warning: {} beyond {}'s range (+-inf); tied infinite scores "
        "share the weight equally (softmax.hpp)",
        human_count(inf_scores, "visible score", "visible scores"), p.f32 ? "float32" : "float64");
}

// Removes the folders a failed run made for --out and left empty (a successful run leaves its
// files there).
struct OutDirCleanup {
  CreatedFolders created;
  ~OutDirCleanup() { created.remove_if_empty(); }
};

template <class T>
int run_typed(const AttentionRequest& r, const Plan& p, const std::string& command_line) {
  Provenance prov;
  prov.command_line = command_line;
  prov.start_utc = utc_now_iso8601();
  const auto t0 = std::chrono::steady_clock::now();

  // Destinations before the work, checked and locked as the tables' --out (app/main.cpp): a
  // read-only or full file system is refused here, before anything is computed or printed.
  // The figure draws entry 0's n x n weights cell by cell: up to kFigureWords words.
  const bool figure_fits = p.n <= kFigureWords;
  const bool plots = !r.no_plots && !r.out_dir.empty() && figure_fits && gnuplot_available();
  if (!r.no_plots && !r.out_dir.empty() && !figure_fits)
    spdlog::info("no figure: n = {} words, more than the {} a heatmap draws", p.n, kFigureWords);
  OutDirCleanup cleanup;  // declared first: runs after the lock and the temporaries are gone
  std::unique_ptr<DirLock> lock;
  if (!r.out_dir.empty()) {
    lock = lock_out_dir("--out", r.out_dir, cleanup.created);
    // A killed run's temporaries go first, whether or not this run is refused below.
    note_removed_temporaries(remove_stale_temporaries(r.out_dir));
    std::vector<std::string> files;
    for (const char* name : kOutputs) files.push_back(r.out_dir + "/" + name + ".npy");
    files.push_back(r.out_dir + "/attention.json");
    // The figure whether or not this run draws it: one it does not draw is removed below.
    for (const char* ext : {".png", ".svg"})
      files.push_back(r.out_dir + "/attention-weights" + ext);
    for (const std::string& file : files) {
      // An input is never replaced, --force or not: the run would read what it then overwrites.
      for (const auto& [flag, input] : {std::pair<const char*, const std::string&>{"--x", r.x},
                                        {"--w-q", r.w_q},
                                        {"--w-k", r.w_k},
                                        {"--w-v", r.w_v},
                                        {"--mask", r.mask},
                                        {"--lengths", r.lengths}}) {
        std::error_code ec;
        if (!input.empty() && std::filesystem::equivalent(file, input, ec))
          throw std::runtime_error("--out " + r.out_dir + ": its " +
                                   std::filesystem::path(file).filename().string() +
                                   " is the input " + flag + " " + input +
                                   ", which the run would replace; choose another folder");
      }
      refuse_existing(file, r.force);
    }
  }
  OutputSet outputs;  // after the lock: its temporaries go before the lock is released
  // A mask runs on the CPU twin alone (the CUDA path takes none): auto picks the CPU.
  const Backend backend = Backend::select(p.mask.empty() ? r.device : std::string("cpu"),
                                          r.threads.empty() ? 0 : std::stoi(r.threads));
  if (backend.kind() == DeviceKind::cuda && backend.gpu().memory_gib > 0 &&
      p.device_bytes > backend.gpu().memory_gib * 1024.0 * 1024 * 1024)
    throw BadInput("--x " + r.x + " shape " + p.x.shape_text() + ": the GPU path needs about " +
                   human_bytes(p.device_bytes) + " of device memory, " + backend.gpu().name +
                   " has " + human_bytes(backend.gpu().memory_gib * 1024.0 * 1024 * 1024) +
                   " (--device cpu, or a smaller batch)");
  announce_backend();  // after the last refusal
  KernelTime kt;
  const Result<T> res = compute<T>(p, backend, kt);
  const double kernel_seconds = kt.wall, kernel_cpu_seconds = kt.cpu;
  spdlog::debug("attention: {} problems in {:.3f} s ({:.3f} CPU s) in the kernels", p.batch,
                kernel_seconds, kernel_cpu_seconds);
  warn_non_finite(p, r, res);

  Table t = is_small(p) ? lesson_view(p, res) : summary_view(p, res);
  nlohmann::json inputs = {{"x", {{"path", r.x}, {"shape", p.x.shape}}},
                           {"w_q", {{"path", r.w_q}, {"shape", p.wq.shape}}},
                           {"w_k", {{"path", r.w_k}, {"shape", p.wk.shape}}},
                           {"w_v", {{"path", r.w_v}, {"shape", p.wv.shape}}}};
  if (!r.mask.empty()) inputs["mask"] = {{"path", r.mask}, {"shape", p.mask_shape}};
  if (!r.lengths.empty()) inputs["lengths"] = {{"path", r.lengths}, {"shape", p.lengths_shape}};
  t.run = {{"backend", backend.name()},
           {"dtype", p.f32 ? "float32" : "float64"},
           {"inputs", inputs},
           {"heads", p.heads},
           {"causal", p.causal},
           {"masked", !p.mask.empty()},
           {"scale", p.scale},
           {"kernel_seconds", kernel_seconds},
           {"kernel_cpu_seconds", kernel_cpu_seconds}};
  prov.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json provenance = prov.to_json(backend);
  for (const auto& [k, v] : t.run.items()) provenance[k] = v;
  const Format f = parse_format("--format", r.format);
  const std::string printed = render({t}, f, provenance);

  // As the tables do: every file under a temporary name, then stdout, then all renamed.
  if (!r.out_dir.empty()) {
    const std::string d = r.out_dir + "/";
    const std::pair<const char*, std::pair<const Buffer<T>*, std::vector<std::size_t>>> arrays[] = {
        {"q", {&res.q, out_shape<T>(p, p.d_k)}},
        {"k", {&res.k, out_shape<T>(p, p.d_k)}},
        {"v", {&res.v, out_shape<T>(p, p.d_v)}},
        {"scores", {&res.scores, square_shape<T>(p)}},
        {"weights", {&res.weights, square_shape<T>(p)}},
        {"out", {&res.out, out_shape<T>(p, p.d_v)}}};
    for (const auto& [name, a] : arrays)
      write_file_atomic(d + name + ".npy", npy_bytes(a.first->data(), a.second), r.force);
    write_file_atomic(d + "attention.json", render({t}, Format::json, provenance), r.force);
    if (plots) {
      const std::string body = heatmap_script(r, p, res);
      const auto [rows, columns] = heatmap_layout(p.heads);
      const std::string size =
          std::to_string(columns * 560 + 40) + "," + std::to_string(rows * 520 + 40);
      for (const char* ext : {".png", ".svg"})
        write_gnuplot_figure(body, d + "attention-weights" + ext, size, r.force);
    } else {
      if (!r.no_plots && figure_fits)
        spdlog::warn("warning: gnuplot not found: no figures (apt-get install gnuplot-nox)");
      for (const char* ext : {".png", ".svg"})  // an earlier run's figure is not this data's
        retire_file(d + "attention-weights" + ext, r.force);
    }
  }
  write_stdout(printed);
  outputs.commit_all();
  if (!r.out_dir.empty())
    spdlog::info("wrote q, k, v, scores, weights, out (.npy) and attention.json to {}", r.out_dir);
  return 0;
}

}  // namespace

void add_attention_command(CLI::App& app, AttentionRequest& r) {
  auto* sub = app.add_subcommand(
      "attention",
      "Attention on your own matrices: --x, --w-q, --w-k, --w-v from .npy, .csv or .json");
  sub->add_option("--x", r.x, "Words x: (n, d_model) or (batch, n, d_model)")->type_name("FILE");
  sub->add_option("--w-q", r.w_q, "W_Q: (d_model, d_k), or (batch, d_model, d_k) per entry")
      ->type_name("FILE");
  sub->add_option("--w-k", r.w_k, "W_K: (d_model, d_k), or per entry")->type_name("FILE");
  sub->add_option("--w-v", r.w_v, "W_V: (d_model, d_v), or per entry")->type_name("FILE");
  sub->add_option("--heads", r.heads, "Heads: split d_k and d_v into H, concatenate outputs")
      ->type_name("H")
      ->capture_default_str();
  // on|off as the tables' --causal (and Python's causal=True); alone: on.
  sub->add_option_function<std::string>(
         "--causal",
         [&r](const std::string& v) {
           if (v != "on" && v != "off")
             throw CLI::ValidationError("--causal", "on or off (alone: on); got '" + v + "'");
           r.causal = v == "on";
         },
         "Word i sees words 0..i only: on or off (--causal alone: on) [off]")
      ->expected(0, 1)
      ->default_str("on")
      ->option_text("on|off");
  sub->add_option("--mask", r.mask,
                  "Booleans (.npy), True where query i may attend key j, broadcastable to "
                  "(batch, heads, n, n)")
      ->type_name("FILE");
  sub->add_option("--lengths", r.lengths,
                  "Whole numbers (.npy), one per batch entry: keys at or past it are masked")
      ->type_name("FILE");
  sub->add_option("--scale", r.scale, "Score scale (default 1/sqrt(d_k per head))")->type_name("X");
  sub->add_option("--dtype", r.dtype, "f32 | f64 (default: f32 when every input is float32)")
      ->type_name("DTYPE");
  sub->add_option("--device", r.device, "auto | cpu | cuda")
      ->type_name("DEVICE")
      ->capture_default_str();
  sub->add_option("--format", r.format, "table | csv | json | markdown")
      ->type_name("FORMAT")
      ->capture_default_str();
  sub->add_option("--threads", r.threads, "CPU threads (default: all cores)")->type_name("N");
  sub->add_option("--out", r.out_dir, "Write q, k, v, scores, weights, out (.npy), JSON, figure")
      ->type_name("DIR");
  sub->add_flag("--force", r.force, "Replace existing files under --out");
  sub->add_flag("--no-plots", r.no_plots, "With --out: no figure");
  sub->add_flag("--quiet,-q", r.quiet, "No notices on stderr")
      ->excludes(sub->add_flag("--verbose,-v", r.verbose, "More log lines on stderr"));
  // An empty value is refused by every option alike (else --scale '' would mean the default).
  const CLI::Validator non_empty(
      [](const std::string& v) {
        return v.empty() ? std::string("an empty value") : std::string();
      },
      "", "non-empty");
  for (CLI::Option* opt : sub->get_options())
    if (opt->get_expected_min() > 0) opt->check(non_empty);
  sub->allow_extras();  // refused after parsing (cli.cpp's subcommand_refusal), as one line
  sub->callback([&r] { r.chosen = true; });
  // Its own examples (a subcommand would show the tables' otherwise).
  sub->footer(
      "Examples:\n"
      "  demo attention --x x.csv --w-q i.csv --w-k wk.csv --w-v i.csv   the lesson's matrices\n"
      "  demo attention --x x.npy --w-q wq.npy --w-k wk.npy --w-v wv.npy --heads 2 --causal\n"
      "  demo attention --x x.npy --w-q wq.npy --w-k wk.npy --w-v wv.npy --format json\n"
      "  demo attention --x x.npy --w-q wq.npy --w-k wk.npy --w-v wv.npy --out result   "
      "q, k, v, scores, weights, out (.npy), JSON and a figure\n"
      "Shapes, masks and the rounding: docs/ATTENTION.md; from Python: attnlab.attention");
}

int run_attention_command(const AttentionRequest& r, const std::string& command_line) {
  if (r.quiet) spdlog::set_level(spdlog::level::warn);
  if (r.verbose) spdlog::set_level(spdlog::level::debug);
  try {
    const Plan p = plan_request(r);
    // Flags that write nothing without --out, said as a run's are (cli.cpp's notices).
    if (r.out_dir.empty()) {
      if (r.no_plots) spdlog::warn("warning: --no-plots has no effect without --out");
      if (r.force) spdlog::warn("warning: --force has no effect without --out");
    }
    return p.f32 ? run_typed<float>(r, p, command_line) : run_typed<double>(r, p, command_line);
  } catch (const BadInput& e) {
    print_error(e.what(), "demo attention");
    return 2;
  } catch (const Interrupted&) {
    const int sig = stop_signal() != 0 ? stop_signal() : SIGINT;
    print_interrupted(sig, "demo attention");
    return 128 + sig;
  } catch (const std::exception& e) {
    print_error(e.what(), "demo attention");
    return 1;
  }
}

}  // namespace attn
