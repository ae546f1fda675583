// attention_compute.cpp: see attention_compute.hpp.
#include "host/attention_compute.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/format.hpp"
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

AttentionShape attention_shape(std::size_t batch, std::size_t n, std::size_t d_model,
                               std::size_t d_k, std::size_t d_v, int heads, bool shared_weights,
                               bool causal, double scale) {
  const std::size_t int_max = 0x7fffffff;
  if (batch > int_max || n > int_max || d_model > int_max || d_k > int_max || d_v > int_max)
    throw std::invalid_argument("attention: a dimension beyond 2^31 - 1");
  AttentionShape s;
  s.batch = static_cast<int>(batch);
  s.n = static_cast<int>(n);
  s.d_model = static_cast<int>(d_model);
  s.d_k = static_cast<int>(d_k);
  s.d_v = static_cast<int>(d_v);
  s.heads = heads;
  s.shared_weights = shared_weights;
  s.causal = causal;
  s.scale = scale;
  s.validate();
  return s;
}

double attention_compute_bytes(std::size_t batch, std::size_t n, std::size_t d_model,
                               std::size_t d_k, std::size_t d_v, bool shared_weights, int heads,
                               bool masked, bool mapped, std::size_t word) {
  if (heads <= 1) return 0;
  const double B = double(batch), N = double(n), H = double(heads);
  const double dkh = double(d_k) / H, dvh = double(d_v) / H, wc = shared_weights ? 1 : B;
  const double words = wc * double(d_model) * (2 * dkh + dvh) + B * N * (2 * dkh + 2 * dvh) +
                       (mapped ? 3 : 2) * B * N * N;
  return double(word) * words + (masked ? B * N * N : 0);
}

template <class T>
void attention_compute(const AttentionProblem<T>& p, const Backend& backend, const Monitor& monitor,
                       KernelTime& time) {
  p.shape.validate();
  const AttentionShape& s = p.shape;
  const std::size_t B = s.batch, n = s.n, d_model = s.d_model, d_k = s.d_k, d_v = s.d_v;
  const std::size_t H = s.heads, dkh = d_k / H, dvh = d_v / H;
  const std::size_t wc = s.shared_weights ? 1 : B;
  // In pieces with a stop point between them (Ctrl-C, SIGTERM): Backend::attention_forward.
  const auto forward = [&backend, &time, &monitor](const AttentionProblem<T>& prob) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = process_cpu_seconds();
    backend.attention_forward(prob, monitor);
    time.cpu += process_cpu_seconds() - c0;
    time.wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  spdlog::debug("attention: computing {} of {}, pieces of at most {} multiply-adds on the CPU",
                human_count(B, "problem", "problems"), human_count(H, "head", "heads"),
                Backend::kAttentionPieceWork);
  if (H == 1) {  // one head: the kernels write the results in place
    forward(p);
    return;
  }
  AttentionShape head = s;  // one head's problem
  head.heads = 1;
  head.d_k = static_cast<int>(dkh);
  head.d_v = static_cast<int>(dvh);
  for (std::size_t h = 0; h < H; ++h) {  // one batched call per head; x is shared by all
    monitor.stop_point();
    const std::vector<T> hq = columns(p.w_q, wc, d_model, d_k, h, dkh),
                         hk = columns(p.w_k, wc, d_model, d_k, h, dkh),
                         hv = columns(p.w_v, wc, d_model, d_v, h, dvh);
    std::vector<T> q(B * n * dkh), k(B * n * dkh), v(B * n * dvh), sc(B * n * n), w(B * n * n),
        o(B * n * dvh);
    std::vector<unsigned char> mask;  // this head's (batch, n, n) of the mask
    if (p.mask) {
      mask.resize(B * n * n);
      for (std::size_t b = 0; b < B; ++b)
        std::copy_n(p.mask + (b * H + h) * n * n, n * n, mask.data() + b * n * n);
    }
    std::vector<T> map;  // this head's (batch, n, n) of the map
    if (p.map) {
      map.resize(B * n * n);
      for (std::size_t b = 0; b < B; ++b)
        std::copy_n(p.map + (b * H + h) * n * n, n * n, map.data() + b * n * n);
    }
    forward(AttentionProblem<T>{head, p.x, hq.data(), hk.data(), hv.data(), q.data(), k.data(),
                                v.data(), sc.data(), w.data(), o.data(),
                                p.mask ? mask.data() : nullptr, p.map ? map.data() : nullptr});
    double done = 0;  // units since the last stop point: copied elements
    const auto count = [&done, &monitor](double units) {
      if ((done += units) < double(1 << 24)) return;
      done = 0;
      monitor.stop_point();
    };
    for (std::size_t row = 0; row < B * n; ++row) {  // concatenate the heads
      count(double(dkh + dvh));
      for (std::size_t c = 0; c < dkh; ++c) {
        p.q[row * d_k + h * dkh + c] = q[row * dkh + c];
        p.k[row * d_k + h * dkh + c] = k[row * dkh + c];
      }
      for (std::size_t c = 0; c < dvh; ++c) {
        p.v[row * d_v + h * dvh + c] = v[row * dvh + c];
        p.out[row * d_v + h * dvh + c] = o[row * dvh + c];
      }
    }
    for (std::size_t b = 0; b < B; ++b) {
      count(double(n * n));
      for (std::size_t e = 0; e < n * n; ++e) {
        p.scores[(b * H + h) * n * n + e] = sc[b * n * n + e];
        p.weights[(b * H + h) * n * n + e] = w[b * n * n + e];
      }
    }
  }
}

template void attention_compute<float>(const AttentionProblem<float>&, const Backend&,
                                       const Monitor&, KernelTime&);
template void attention_compute<double>(const AttentionProblem<double>&, const Backend&,
                                        const Monitor&, KernelTime&);

}  // namespace attn
