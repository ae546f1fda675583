// attention_compute.cpp: see attention_compute.hpp.
#include "host/attention_compute.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/progress.hpp"

namespace attn {
namespace {

// Columns [h w, (h + 1) w) of each (rows, cols) matrix of a (count, rows, cols) array.
template <class T>
std::vector<T> columns(const T* a, std::size_t count, std::size_t rows, std::size_t cols,
                       std::size_t h, std::size_t w) {
  std::vector<T> out(count * rows * w);
  for (std::size_t m = 0; m < count * rows; ++m)
    for (std::size_t c = 0; c < w; ++c) out[m * w + c] = a[m * cols + h * w + c];
  return out;
}

}  // namespace

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double attention_compute_bytes(std::size_t batch, std::size_t n, std::size_t d_model,
                               std::size_t d_k, std::size_t d_v, bool per_entry, int heads,
                               bool masked, bool mapped, std::size_t word) {
  if (heads <= 1) return 0;
  const double B = double(batch), N = double(n), H = double(heads);
  const double dkh = double(d_k) / H, dvh = double(d_v) / H, wc = per_entry ? B : 1;
  const double words = wc * double(d_model) * (2 * dkh + dvh) + B * N * (2 * dkh + 2 * dvh) +
                       (mapped ? 3 : 2) * B * N * N;
  return double(word) * words + (masked ? B * N * N : 0);
}

template <class T>
void attention_compute(const AttentionArrays<T>& a, const Backend& backend, const Monitor& monitor,
                       KernelTime& time) {
  const std::size_t int_max = 0x7fffffff;
  if (a.batch > int_max || a.n > int_max || a.d_model > int_max || a.d_k > int_max ||
      a.d_v > int_max)
    throw std::invalid_argument("attention: a dimension beyond 2^31 - 1");
  if (a.heads < 1 || a.d_k % a.heads != 0 || a.d_v % a.heads != 0)
    throw std::invalid_argument("attention: " + std::to_string(a.heads) +
                                " heads do not divide d_k = " + std::to_string(a.d_k) +
                                " and d_v = " + std::to_string(a.d_v));
  const std::size_t B = a.batch, n = a.n, H = a.heads, dkh = a.d_k / H, dvh = a.d_v / H;
  const std::size_t wc = a.per_entry ? B : 1;
  AttentionShape sh;
  sh.batch = static_cast<int>(B);
  sh.n = static_cast<int>(n);
  sh.d_model = static_cast<int>(a.d_model);
  sh.d_k = static_cast<int>(dkh);
  sh.d_v = static_cast<int>(dvh);
  sh.shared_weights = !a.per_entry;
  sh.causal = a.causal;
  sh.scale = a.scale;
  // In pieces with a stop point between them (Ctrl-C, SIGTERM): Backend::attention_forward.
  const auto forward = [&backend, &time, &monitor](const AttentionProblem<T>& prob) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = process_cpu_seconds();
    backend.attention_forward(prob, monitor);
    time.cpu += process_cpu_seconds() - c0;
    time.wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  spdlog::debug(
      "attention: computing {} problem(s) of {} head(s), pieces of at most {} "
      "multiply-adds on the CPU",
      B, H, Backend::kAttentionPieceWork);
  if (H == 1) {  // one head: the kernels write the results in place
    forward(AttentionProblem<T>{sh, a.x, a.w_q, a.w_k, a.w_v, a.q, a.k, a.v, a.scores, a.weights,
                                a.out, a.mask, a.map});
    return;
  }
  for (std::size_t h = 0; h < H; ++h) {  // one batched call per head; x is shared by all
    monitor.stop_point();
    const std::vector<T> hq = columns(a.w_q, wc, a.d_model, a.d_k, h, dkh),
                         hk = columns(a.w_k, wc, a.d_model, a.d_k, h, dkh),
                         hv = columns(a.w_v, wc, a.d_model, a.d_v, h, dvh);
    std::vector<T> q(B * n * dkh), k(B * n * dkh), v(B * n * dvh), s(B * n * n), w(B * n * n),
        o(B * n * dvh);
    std::vector<unsigned char> mask;  // this head's (batch, n, n) of the mask
    if (a.mask) {
      mask.resize(B * n * n);
      for (std::size_t b = 0; b < B; ++b)
        std::copy_n(a.mask + (b * H + h) * n * n, n * n, mask.data() + b * n * n);
    }
    std::vector<T> map;  // this head's (batch, n, n) of the map
    if (a.map) {
      map.resize(B * n * n);
      for (std::size_t b = 0; b < B; ++b)
        std::copy_n(a.map + (b * H + h) * n * n, n * n, map.data() + b * n * n);
    }
    forward(AttentionProblem<T>{sh, a.x, hq.data(), hk.data(), hv.data(), q.data(), k.data(),
                                v.data(), s.data(), w.data(), o.data(),
                                a.mask ? mask.data() : nullptr, a.map ? map.data() : nullptr});
    double done = 0;  // units since the last stop point: copied elements
    const auto count = [&done, &monitor](double units) {
      if ((done += units) < double(1 << 24)) return;
      done = 0;
      monitor.stop_point();
    };
    for (std::size_t row = 0; row < B * n; ++row) {  // concatenate the heads
      count(double(dkh + dvh));
      for (std::size_t c = 0; c < dkh; ++c) {
        a.q[row * a.d_k + h * dkh + c] = q[row * dkh + c];
        a.k[row * a.d_k + h * dkh + c] = k[row * dkh + c];
      }
      for (std::size_t c = 0; c < dvh; ++c) {
        a.v[row * a.d_v + h * dvh + c] = v[row * dvh + c];
        a.out[row * a.d_v + h * dvh + c] = o[row * dvh + c];
      }
    }
    for (std::size_t b = 0; b < B; ++b) {
      count(double(n * n));
      for (std::size_t e = 0; e < n * n; ++e) {
        a.scores[(b * H + h) * n * n + e] = s[b * n * n + e];
        a.weights[(b * H + h) * n * n + e] = w[b * n * n + e];
      }
    }
  }
}

template void attention_compute<float>(const AttentionArrays<float>&, const Backend&,
                                       const Monitor&, KernelTime&);
template void attention_compute<double>(const AttentionArrays<double>&, const Backend&,
                                        const Monitor&, KernelTime&);

}  // namespace attn
