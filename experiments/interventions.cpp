// interventions.cpp: see interventions.hpp.
#include "experiments/interventions.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/numpy_random/numpy_random.hpp"
#include "kernels/philox.hpp"

namespace attn {

double kendall_tau_b(const double* x, const double* y, int k) {
  if (k < 2) return NAN;
  std::vector<int> order(static_cast<std::size_t>(k));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return x[a] < x[b] || (x[a] == x[b] && y[a] < y[b]); });
  const double n0 = 0.5 * k * (k - 1.0);
  // Ties in x (n1) and in both (n3), over runs of the sorted order.
  double n1 = 0, n3 = 0;
  for (int a = 0; a < k;) {
    int b = a;
    while (b < k && x[order[b]] == x[order[a]]) ++b;
    n1 += 0.5 * (b - a) * (b - a - 1.0);
    for (int c = a; c < b;) {
      int e = c;
      while (e < b && y[order[e]] == y[order[c]]) ++e;
      n3 += 0.5 * (e - c) * (e - c - 1.0);
      c = e;
    }
    a = b;
  }
  // The discordant pairs: the exchanges a stable merge sort of y (in x's order) makes.
  std::vector<double> ys(static_cast<std::size_t>(k)), tmp(static_cast<std::size_t>(k));
  for (int a = 0; a < k; ++a) ys[a] = y[order[a]];
  double swaps = 0;
  for (int width = 1; width < k; width *= 2)
    for (int lo = 0; lo < k; lo += 2 * width) {
      const int mid = std::min(lo + width, k), hi = std::min(lo + 2 * width, k);
      int a = lo, b = mid, t = lo;
      while (a < mid && b < hi) {
        if (ys[b] < ys[a]) {
          swaps += mid - a;
          tmp[t++] = ys[b++];
        } else {
          tmp[t++] = ys[a++];
        }
      }
      while (a < mid) tmp[t++] = ys[a++];
      while (b < hi) tmp[t++] = ys[b++];
      std::copy(tmp.begin() + lo, tmp.begin() + hi, ys.begin() + lo);
    }
  // Ties in y, over the sorted y.
  double n2 = 0;
  for (int a = 0; a < k;) {
    int b = a;
    while (b < k && ys[b] == ys[a]) ++b;
    n2 += 0.5 * (b - a) * (b - a - 1.0);
    a = b;
  }
  const double denominator = (n0 - n1) * (n0 - n2);
  if (!(denominator > 0)) return NAN;
  // Concordant minus discordant: the pairs tied in neither, less twice the discordant ones.
  const double untied = n0 - n1 - n2 + n3;
  return (untied - 2 * swaps) / std::sqrt(denominator);
}

void leave_one_out(const double* p, const double* v, int k, int d, int stride, double* importance) {
  std::vector<double> o(static_cast<std::size_t>(d), 0.0);
  for (int j = 0; j < k; ++j)
    for (int c = 0; c < d; ++c) o[c] += p[j] * v[j * stride + c];
  for (int j = 0; j < k; ++j) {
    if (p[j] == 1) {
      importance[j] = NAN;
      continue;
    }
    // p⁽⁻ʲ⁾ V = (o − p_j v_j) / (1 − p_j).
    double sum = 0;
    for (int c = 0; c < d; ++c) {
      const double without = (o[c] - p[j] * v[j * stride + c]) / (1 - p[j]);
      sum += (o[c] - without) * (o[c] - without);
    }
    importance[j] = std::sqrt(sum);
  }
}

namespace {

// Philox4x32-10's words in order for one (seed, head, input, row): numpy_rng::integer_below's
// bit generator.
struct RowWords {
  philox::Key key;
  philox::Counter counter;
  philox::Counter block{};
  int used = 4;
  std::uint32_t next_uint32() {
    if (used == 4) {
      block = philox::philox4x32_10(counter, key);
      ++counter.v[3];
      used = 0;
    }
    return block.v[used++];
  }
};

}  // namespace

void permute_row(std::uint64_t seed, int head, int input, int row, const double* p, int k,
                 double* out) {
  RowWords g;
  g.key = {{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
  g.counter = {{static_cast<std::uint32_t>(head), static_cast<std::uint32_t>(input),
                static_cast<std::uint32_t>(row), 0u}};
  std::copy_n(p, k, out);
  for (int j = k - 1; j >= 1; --j) {
    const std::int64_t u = numpy_rng::integer_below(g, static_cast<std::uint64_t>(j) + 1);
    std::swap(out[j], out[u]);
  }
}

namespace {

// The eigenvalues g (m of them) and orthonormal eigenvectors (columns of q, m x m row-major) of
// the symmetric m x m matrix a (row-major, destroyed): cyclic Jacobi rotations (Golub and Van
// Loan, 8.5) until the off-diagonal part is below 1e-30 of the whole. A stop that the monitor
// asks for ends the sweeps early (a sweep of a large matrix is long): g and q are then unfinished,
// and the caller, which asks the monitor too, discards them.
void symmetric_eigen(double* a, int m, double* g, double* q, const Monitor& monitor) {
  std::fill(q, q + m * m, 0.0);
  for (int i = 0; i < m; ++i) q[i * m + i] = 1;
  for (int sweep = 0; sweep < 50; ++sweep) {
    double off = 0, all = 0;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j) (i == j ? all : off) += a[i * m + j] * a[i * m + j];
    if (off <= 1e-30 * (all + off)) break;
    for (int p = 0; p < m; ++p) {
      if (monitor.stop_requested()) break;
      for (int r = p + 1; r < m; ++r) {
        if (a[p * m + r] == 0) continue;
        const double theta = (a[r * m + r] - a[p * m + p]) / (2 * a[p * m + r]);
        const double t = (theta >= 0 ? 1 : -1) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int i = 0; i < m; ++i) {  // columns p, r
          const double ip = a[i * m + p], ir = a[i * m + r];
          a[i * m + p] = c * ip - s * ir;
          a[i * m + r] = s * ip + c * ir;
        }
        for (int i = 0; i < m; ++i) {  // rows p, r
          const double pi = a[p * m + i], ri = a[r * m + i];
          a[p * m + i] = c * pi - s * ri;
          a[r * m + i] = s * pi + c * ri;
        }
        for (int i = 0; i < m; ++i) {
          const double ip = q[i * m + p], ir = q[i * m + r];
          q[i * m + p] = c * ip - s * ir;
          q[i * m + r] = s * ip + c * ir;
        }
      }
    }
    if (monitor.stop_requested()) break;
  }
  for (int i = 0; i < m; ++i) g[i] = a[i * m + i];
}

// The adversary's search (docs/spec/VARIABILITY.md, "The adversarial map's method"): the largest
// f(x) = JSD(x, p) over F = simplex ∩ B, B = {x : ‖(x − p) V‖ ≤ ε} = {x : (x − p)ᵀ G (x − p) ≤ ε²},
// G = V Vᵀ. f is convex, so its maximum over F is at an extreme point of F. The search climbs by
// successive linearisation (climb) from points on rays of p: the quadratic model f ≈ ⅛ Σ δ_i² /
// p_i's top two directions on B's ellipse (δ = x − p; generalized eigenvectors, both ways) and,
// unless every point of the ellipse is near p (each key within kNear of its weight: there F is
// the ellipse and f near its model), the directions that keep the output exactly (both ways)
// and every vertex e_j. Every start and every step is a point of F.
//
// All memory is the thread's scratch (no allocation a row once it has grown to k keys).
constexpr double kNear = 0.5;

class Adversary {
 public:
  Adversary(std::vector<double>& scratch, const double* p, const double* v, int k, int d,
            int stride, double epsilon, const Monitor& monitor)
      : p_(p), v_(v), k_(k), d_(d), stride_(stride), epsilon_(epsilon), monitor_(monitor) {
    const std::size_t kk = static_cast<std::size_t>(k) * k;
    const std::size_t need =
        9 * kk + 16 * static_cast<std::size_t>(k) + static_cast<std::size_t>(d);
    if (scratch.size() < need) scratch.resize(need);
    double* at = scratch.data();
    const auto take = [&](std::size_t count) {
      double* here = at;
      at += count;
      return here;
    };
    g_ = take(kk);
    basis_ = take(kk);
    face_ = take(kk);
    eigen_ = take(kk);
    ranges_ = take(kk);
    nulls_ = take(kk);
    null_starts_ = take(kk);
    whole_ = take(kk);
    model_ = take(2 * static_cast<std::size_t>(k));
    lambda_ = take(k);
    x_ = take(k);
    y_ = take(k);
    grad_ = take(k);
    grad_y_ = take(k);
    normal_ = take(k);
    step_ = take(k);
    best_ = take(k);
    zero_ = take(k);
    index_ = take(k);
    h_ = take(k);
    out_ = take(d);
    for (int i = 0; i < k; ++i)
      for (int j = 0; j <= i; ++j) {
        double s = 0;
        for (int c = 0; c < d; ++c) s += v[i * stride + c] * v[j * stride + c];
        g_[i * k + j] = g_[j * k + i] = s;
      }
    std::fill(zero_, zero_ + k, 0.0);
    build_face();
    null_start_count_ = null_count_;
    whole_ranges_ = range_count_;
    std::copy_n(nulls_, static_cast<std::size_t>(null_count_) * k, null_starts_);
    std::copy_n(ranges_, static_cast<std::size_t>(range_count_) * k, whole_);
    // The quadratic model's top two on the ellipse: z maximising zᵀ Wᵀ diag(1/p) W z with
    // ‖z‖ = 1 (W: ranges_, G's unit directions; p_i floored at 1e-12: a key of weight 0 gains
    // at the first order), δ = W z.
    const int r = range_count_;
    if (r > 0) {
      double* a = face_;  // r x r
      for (int c = 0; c < r; ++c)
        for (int e = 0; e <= c; ++e) {
          double s = 0;
          for (int i = 0; i < k; ++i)
            s += ranges_[c * k + i] * ranges_[e * k + i] / std::max(p[i], 1e-12);
          a[c * r + e] = a[e * r + c] = s;
        }
      symmetric_eigen(a, r, lambda_, eigen_, monitor_);
      int first = 0, second = -1;
      for (int i = 1; i < r; ++i)
        if (lambda_[i] > lambda_[first]) first = i;
      for (int i = 0; i < r; ++i)
        if (i != first && (second < 0 || lambda_[i] > lambda_[second])) second = i;
      models_ = second < 0 ? 1 : 2;
      for (int e = 0; e < models_; ++e) {
        const int col = e == 0 ? first : second;
        for (int i = 0; i < k; ++i) {
          double s = 0;
          for (int c = 0; c < r; ++c) s += ranges_[c * k + i] * eigen_[c * r + col];
          model_[e * k + i] = s;
        }
      }
    }
    // Every point p + W z (‖z‖ ≤ ε) moves key i by at most ε ‖(W_i1, W_i2, ...)‖.
    near_ = null_count_ == 0 && r > 0;
    for (int i = 0; i < k && near_; ++i) {
      double reach = 0;
      for (int c = 0; c < r; ++c) reach += ranges_[c * k + i] * ranges_[c * k + i];
      near_ = epsilon_ * std::sqrt(reach) <= kNear * p[i];
    }
  }

  // The best point found (out, k values when not nullptr) and JSD(out, p); NaN (out NaN) when
  // the monitor asked for a stop, which ends the search at its next step.
  double search(double* out) {
    const int k = k_;
    std::copy_n(p_, k, best_);
    best_f_ = 0;
    const auto stopped = [this] { return monitor_.stop_requested(); };
    for (int e = 0; e < models_ && !stopped(); ++e) {
      climb_ray(model_ + e * k, 1);
      climb_ray(model_ + e * k, -1);
    }
    if (!near_) {
      for (int e = 0; e < null_start_count_ && !stopped(); ++e) {
        climb_ray(null_starts_ + e * k, 1);
        climb_ray(null_starts_ + e * k, -1);
      }
      for (int j = 0; j < k && !stopped(); ++j) {
        for (int i = 0; i < k; ++i) step_[i] = (i == j ? 1.0 : 0.0) - p_[i];
        climb_ray(step_, 1);
      }
      edge_ends();
      antipode();
    }
    if (stopped()) {
      if (out != nullptr) std::fill(out, out + k, NAN);
      return NAN;
    }
    // Rounding may have moved the sum of the best point off 1 by ulps: normalised, into B.
    double sum = 0;
    for (int j = 0; j < k; ++j) sum += best_[j];
    for (int j = 0; j < k; ++j) best_[j] /= sum;
    into_b(best_);
    if (out != nullptr) std::copy_n(best_, k, out);
    return jsd(best_, p_, k);
  }

 private:
  // The face of the simplex with the keys zero_ at 0: its moves {δ : δ_i = 0 on those keys,
  // Σ δ = 0} in Helmert's orthonormal basis over the other keys (column c: 1 on the first c + 1
  // of them, −(c + 1) on the next, over √((c + 1)(c + 2))); G on it, M = Bᵀ G B = U Λ Uᵀ; the
  // directions B u_c / √λ_c (δᵀ G δ = 1; range_count_ of them, k values each, in ranges_) and
  // B u_c with λ_c at most 1e-12 of the largest (they keep the output: null_count_, in nulls_).
  void build_face() {
    const int k = k_;
    int free = 0;
    for (int i = 0; i < k; ++i)
      if (zero_[i] == 0) index_[free++] = i;
    const int m = free - 1;
    range_count_ = null_count_ = 0;
    if (m < 1) return;
    std::fill(basis_, basis_ + static_cast<std::size_t>(m) * k, 0.0);  // m x k: column c's keys
    for (int c = 0; c < m; ++c) {
      const double norm = 1 / std::sqrt((c + 1.0) * (c + 2.0));
      for (int t = 0; t <= c; ++t) basis_[c * k + static_cast<int>(index_[t])] = norm;
      basis_[c * k + static_cast<int>(index_[c + 1])] = -(c + 1) * norm;
    }
    for (int c = 0; c < m; ++c) {
      if (monitor_.stop_requested()) return;
      for (int i = 0; i < k; ++i) {
        double s = 0;
        for (int j = 0; j < k; ++j) s += g_[i * k + j] * basis_[c * k + j];
        step_[i] = s;
      }
      for (int e = 0; e <= c; ++e) {
        double s = 0;
        for (int i = 0; i < k; ++i) s += basis_[e * k + i] * step_[i];
        face_[c * m + e] = face_[e * m + c] = s;
      }
    }
    symmetric_eigen(face_, m, lambda_, eigen_, monitor_);
    double top = 0;
    for (int c = 0; c < m; ++c) top = std::max(top, lambda_[c]);
    for (int c = 0; c < m; ++c) {
      const bool null = !(lambda_[c] > 1e-12 * top);
      double* to = null ? nulls_ + null_count_++ * k : ranges_ + range_count_++ * k;
      const double scale = null ? 1.0 : 1 / std::sqrt(lambda_[c]);
      for (int i = 0; i < k; ++i) {
        double s = 0;
        for (int e = 0; e < m; ++e) s += basis_[e * k + i] * eigen_[e * m + c];
        to[i] = s * scale;
      }
    }
  }
  // ‖(x − p) V‖², and G (x − p) = V ((x − p) V)ᵀ in normal_: from V, not G, so that a move
  // that keeps the output (keys of one value trading weight) gives 0 to rounding of its size.
  double shift2(const double* x) {
    const int k = k_;
    double s = 0;
    for (int c = 0; c < d_; ++c) {
      double o = 0;
      for (int j = 0; j < k; ++j) o += (x[j] - p_[j]) * v_[j * stride_ + c];
      out_[c] = o;
      s += o * o;
    }
    for (int i = 0; i < k; ++i) {
      double r = 0;
      for (int c = 0; c < d_; ++c) r += v_[i * stride_ + c] * out_[c];
      normal_[i] = r;
    }
    return s;
  }
  // Pulled towards p into B where it is outside (a point of the segment from p: on the simplex
  // when x is).
  void retract(double* x) {
    const double norm2 = shift2(x);
    if (norm2 <= epsilon_ * epsilon_) return;
    const double t = epsilon_ / std::sqrt(norm2) * (1 - 1e-12);
    for (int j = 0; j < k_; ++j) x[j] = p_[j] + t * (x[j] - p_[j]);
  }
  // x (on the simplex) into B where rounding left it outside: along B's normal on x's face (m =
  // G (x − p) on x's positive keys less its mean there; its keys at 0 stay at 0), a step c m
  // with c from the linear prediction, doubled until inside; where that fails, pulled towards
  // p. (Pulling towards p alone lifts every key at 0 by the relative excess times p_i, which
  // costs f much where ‖(x − p)V‖ is far below the size of x − p: a move along the directions
  // that keep the output.)
  void into_b(double* x) {
    const int k = k_;
    const double e2 = epsilon_ * epsilon_;
    double s = shift2(x);
    if (s <= e2) return;
    double count = 0, mean = 0;
    for (int i = 0; i < k; ++i)
      if (x[i] > 0) count += 1, mean += normal_[i];
    mean /= count;
    double b = 0;
    for (int i = 0; i < k; ++i) {
      step_[i] = x[i] > 0 ? normal_[i] - mean : 0.0;
      b += step_[i] * normal_[i];
    }
    if (b > 0)
      for (double c = (s - e2) / b; c * b <= s; c *= 2) {
        bool inside = true;
        for (int i = 0; i < k; ++i) inside = inside && (y_[i] = x[i] - c * step_[i]) >= 0;
        if (!inside) break;
        if (shift2(y_) <= e2) {
          std::copy_n(y_, k, x);
          return;
        }
      }
    retract(x);
  }
  // f(x) = JSD(x, p) (map_measures' jsd, term by term) and its gradient ∂f/∂x_i =
  // ½ ln(2 x_i / (x_i + p_i)): ½ ln 2 where p_i = 0, −∞ where x_i = 0 < p_i.
  double value(const double* x, double* grad) const {
    double f = 0;
    for (int j = 0; j < k_; ++j) {
      const double s = x[j] + p_[j];
      if (x[j] > 0) {
        const double l = std::log(2 * x[j] / s);
        f += 0.5 * x[j] * l;
        grad[j] = 0.5 * l;
      } else {
        grad[j] = p_[j] > 0 ? -INFINITY : 0.5 * std::log(2.0);
      }
      if (p_[j] > 0) f += 0.5 * p_[j] * std::log(2 * p_[j] / s);
    }
    return f;
  }
  // Successive linearisation from x (a point of F), in place; returns f(x) at the end. On the
  // face of the keys at 0 (a key at 0 with p_i > 0 has gradient −∞: it stays there), each step
  // goes to the maximum of f's linearisation g = ∇f(x) over the face's part of F, or as far
  // towards it as the simplex allows (the key that reaches 0 joins the face's zeros): along
  // the output-keeping directions N when g has a part there (to the simplex's edge), else to
  // x + W w with w = −a + R h / ‖h‖ (h = Wᵀg, a = Wᵀ G (x − p), R² = ε² − ‖(x − p)V‖² + ‖a‖²:
  // the ellipse ‖w + a‖ ≤ R). f is convex, so f(x′) ≥ f(x) + gᵀ(x′ − x) ≥ f(x): f never falls.
  // It stops when f gains less than 1e-8 of itself, after 200 steps, or at a vertex.
  double climb(double* x) {
    const int k = k_;
    bool whole = true;
    for (int i = 0; i < k; ++i) {
      zero_[i] = x[i] <= 0 && p_[i] > 0 ? 1 : 0;
      whole = whole && zero_[i] == 0;
    }
    if (whole) {  // the whole simplex's face, as the constructor built it
      range_count_ = whole_ranges_;
      null_count_ = null_start_count_;
      std::copy_n(whole_, static_cast<std::size_t>(range_count_) * k, ranges_);
      std::copy_n(null_starts_, static_cast<std::size_t>(null_count_) * k, nulls_);
    } else {
      build_face();
    }
    double fx = value(x, grad_);
    // The face's directions are 0 on its zeros: their gradient (−∞) taken as 0 in the products.
    const auto on_face = [&](double* g) {
      for (int i = 0; i < k; ++i)
        if (zero_[i] != 0) g[i] = 0;
    };
    on_face(grad_);
    for (int it = 0; it < 200 && range_count_ + null_count_ > 0 && !monitor_.stop_requested();
         ++it) {
      double norm = 0;
      std::fill(step_, step_ + k, 0.0);
      for (int c = 0; c < null_count_; ++c) {
        double s = 0;
        for (int i = 0; i < k; ++i) s += nulls_[c * k + i] * grad_[i];
        for (int i = 0; i < k; ++i) step_[i] += s * nulls_[c * k + i];
        norm += s * s;
      }
      const bool along_null = norm > 1e-24;
      if (!along_null) {
        const double s = shift2(x);
        double a2 = 0, h2 = 0;
        for (int c = 0; c < range_count_; ++c) {
          double a = 0, h = 0;
          for (int i = 0; i < k; ++i) {
            a += ranges_[c * k + i] * normal_[i];
            h += ranges_[c * k + i] * grad_[i];
          }
          lambda_[c] = a;
          h_[c] = h;
          a2 += a * a;
          h2 += h * h;
        }
        if (!(h2 > 0)) break;
        const double scale = std::sqrt(std::max(epsilon_ * epsilon_ - s + a2, 0.0) / h2);
        for (int c = 0; c < range_count_; ++c) {
          const double w = scale * h_[c] - lambda_[c];
          for (int i = 0; i < k; ++i) step_[i] += w * ranges_[c * k + i];
        }
      }
      // As far along the step as the simplex allows (along N: to its edge).
      double tau = along_null ? INFINITY : 1.0;
      int hits = -1;
      for (int i = 0; i < k; ++i)
        if (step_[i] < 0 && x[i] < -step_[i] * tau) tau = x[i] / -step_[i], hits = i;
      if (along_null && hits < 0) break;  // (a sum-zero step has a negative entry)
      for (int i = 0; i < k; ++i) y_[i] = std::max(x[i] + tau * step_[i], 0.0);
      if (hits >= 0) y_[hits] = 0;
      const double fy = value(y_, grad_y_);
      if (!(fy >= fx)) break;
      const bool stalled = fy <= fx * (1 + 1e-8);
      std::copy_n(y_, k, x);
      std::swap(grad_, grad_y_);
      fx = fy;
      if (hits >= 0 && p_[hits] > 0) {
        zero_[hits] = 1;
        build_face();
      }
      on_face(grad_);
      if (hits < 0 && stalled) {
        break;
      }
    }
    return fx;
  }
  // A climb from the best point's antipode on its face's ellipse (x + W w with w = −2a: the
  // ellipse ‖w + a‖ ≤ R seen from x, as in climb), as far towards it as the simplex allows:
  // f on an ellipse can have a maximum at either end of it.
  void antipode() {
    if (monitor_.stop_requested()) return;
    const int k = k_;
    std::copy_n(best_, k, x_);
    for (int i = 0; i < k; ++i) zero_[i] = x_[i] <= 0 && p_[i] > 0 ? 1 : 0;
    build_face();
    if (range_count_ == 0) return;
    shift2(x_);
    std::fill(step_, step_ + k, 0.0);
    for (int c = 0; c < range_count_; ++c) {
      double a = 0;
      for (int i = 0; i < k; ++i) a += ranges_[c * k + i] * normal_[i];
      for (int i = 0; i < k; ++i) step_[i] -= 2 * a * ranges_[c * k + i];
    }
    double tau = 1;
    int hits = -1;
    for (int i = 0; i < k; ++i)
      if (step_[i] < 0 && x_[i] < -step_[i] * tau) tau = x_[i] / -step_[i], hits = i;
    for (int i = 0; i < k; ++i) x_[i] = std::max(x_[i] + tau * step_[i], 0.0);
    if (hits >= 0) x_[hits] = 0;
    retract(x_);
    const double fx = climb(x_);
    if (fx > best_f_) {
      best_f_ = fx;
      std::copy_n(x_, k, best_);
    }
  }
  // The ends of F on each edge of the simplex, x = a e_i + (1 − a) e_j with a in [0, 1] and
  // ‖(x − p)V‖² = ‖u + a w‖²_G ≤ ε² (u = e_j − p, w = e_i − e_j): extreme points of F that a
  // climb from inside need not reach (a key at 0 stays there); the best kept.
  void edge_ends() {
    const int k = k_;
    double pgp = 0;
    for (int i = 0; i < k; ++i) {
      double r = 0;
      for (int j = 0; j < k; ++j) r += g_[i * k + j] * p_[j];
      step_[i] = r;  // G p
      pgp += p_[i] * r;
    }
    const double ln2 = std::log(2.0);
    for (int i = 0; i < k && !monitor_.stop_requested(); ++i)
      for (int j = i + 1; j < k; ++j) {
        const double gii = g_[i * k + i], gij = g_[i * k + j], gjj = g_[j * k + j];
        const double a2 = gii - 2 * gij + gjj, a1 = gij - step_[i] - gjj + step_[j];
        const double a0 = gjj - 2 * step_[j] + pgp - epsilon_ * epsilon_;
        double lo = 0, hi = 1;
        if (a2 > 0) {
          const double disc = a1 * a1 - a2 * a0;
          if (disc < 0) continue;
          lo = std::max(lo, (-a1 - std::sqrt(disc)) / a2);
          hi = std::min(hi, (-a1 + std::sqrt(disc)) / a2);
        } else if (a0 > 0) {
          continue;
        }
        if (!(lo <= hi)) continue;
        for (const double a : {lo, hi}) {
          // f with x_i = a, x_j = 1 − a and every other key at 0 (½ p_l ln 2 each).
          double f = 0.5 * ln2 * (1 - p_[i] - p_[j]);
          for (const auto& [xl, pl] : {std::pair{a, p_[i]}, std::pair{1 - a, p_[j]}}) {
            if (xl > 0) f += 0.5 * xl * std::log(2 * xl / (xl + pl));
            if (pl > 0) f += 0.5 * pl * std::log(2 * pl / (xl + pl));
          }
          if (!(f > best_f_)) continue;
          // G's roots can be off by the square root of rounding: the end taken into B (by
          // ‖(x − p)V‖ from V) and its f computed again.
          std::fill(y_, y_ + k, 0.0);
          y_[i] = a;
          y_[j] = 1 - a;
          into_b(y_);
          f = value(y_, grad_y_);
          if (f > best_f_) {
            best_f_ = f;
            std::copy_n(y_, k, best_);
          }
        }
      }
  }
  // From p along sign × delta (sum zero) as far as F allows, then the climb; the best kept.
  void climb_ray(const double* delta, double sign) {
    if (monitor_.stop_requested()) return;
    const int k = k_;
    double t = INFINITY;
    int hits = -1;  // the key that reaches 0 first
    for (int j = 0; j < k; ++j)
      if (sign * delta[j] < 0 && p_[j] < -sign * delta[j] * t) {
        t = p_[j] / (-sign * delta[j]);
        hits = j;
      }
    double q = 0;  // ‖delta V‖², from V (an output-keeping delta: 0 to rounding of its size)
    for (int c = 0; c < d_; ++c) {
      double o = 0;
      for (int j = 0; j < k; ++j) o += delta[j] * v_[j * stride_ + c];
      q += o * o;
    }
    if (q > 0 && epsilon_ < std::sqrt(q) * t) {
      t = epsilon_ / std::sqrt(q);
      hits = -1;
    }
    if (!std::isfinite(t)) return;
    double sum = 0;
    for (int j = 0; j < k; ++j) x_[j] = std::max(p_[j] + t * sign * delta[j], 0.0);
    if (hits >= 0) x_[hits] = 0;
    for (int j = 0; j < k; ++j) sum += x_[j];
    for (int j = 0; j < k; ++j) x_[j] /= sum;
    retract(x_);
    const double fx = climb(x_);
    if (fx > best_f_) {
      best_f_ = fx;
      std::copy_n(x_, k, best_);
    }
  }

  const double* p_;
  const double* v_;
  int k_, d_, stride_;
  double epsilon_;
  const Monitor& monitor_;  // asked at every step of the search (a row of many keys is long)
  double* out_;             // d: (x − p) V
  double* g_;               // k x k: G = V Vᵀ
  double* basis_;           // the face's Helmert basis, column c at c * k
  double* face_;            // the face's M, then the model's matrix
  double* eigen_;           // their eigenvectors
  double* ranges_;          // range_count_ x k: the face's G-unit directions
  double* nulls_;           // null_count_ x k: the face's output-keeping directions
  double* null_starts_;     // null_start_count_ x k: the whole simplex's
  double* whole_;           // whole_ranges_ x k: the whole simplex's G-unit directions
  double* model_;           // models_ x k: the quadratic model's top two directions (G-unit)
  double *lambda_, *x_, *y_, *grad_, *grad_y_, *normal_, *step_, *best_, *zero_, *index_, *h_;
  int range_count_ = 0, null_count_ = 0, null_start_count_ = 0, whole_ranges_ = 0, models_ = 0;
  bool near_ = false;
  double best_f_ = 0;
};

}  // namespace

double adversarial_row(const double* p, const double* v, int k, int d, int stride, double epsilon,
                       double* out, const Monitor& monitor) {
  if (k < 2) {
    if (out != nullptr) std::copy_n(p, k, out);
    return 0;
  }
  // V and ε scaled by the same power of 2 (exact: the same F), V's largest entry to [0.5, 1):
  // G = V Vᵀ and ‖(x − p)V‖² neither overflow nor underflow for a head of huge or tiny values.
  double largest = 0;
  for (int j = 0; j < k; ++j)
    for (int c = 0; c < d; ++c) largest = std::max(largest, std::fabs(v[j * stride + c]));
  if (!std::isfinite(largest) || !(epsilon >= 0)) {
    if (out != nullptr) std::fill(out, out + k, NAN);
    return NAN;
  }
  int exponent = 0;
  if (largest > 0) std::frexp(largest, &exponent);
  thread_local std::vector<double> scaled;
  if (scaled.size() < static_cast<std::size_t>(k) * d)
    scaled.resize(static_cast<std::size_t>(k) * d);
  for (int j = 0; j < k; ++j)
    for (int c = 0; c < d; ++c) scaled[j * d + c] = std::ldexp(v[j * stride + c], -exponent);
  thread_local std::vector<double> scratch;
  Adversary adversary(scratch, p, scaled.data(), k, d, d, std::ldexp(epsilon, -exponent), monitor);
  return adversary.search(out);
}

std::vector<int> matched_heads(const SeedResults& shape, const double* a, const double* b) {
  const int h = shape.heads;
  std::vector<int> columns(static_cast<std::size_t>(h));
  std::iota(columns.begin(), columns.end(), 0);
  if (h == 1) return columns;
  std::vector<double> cost(static_cast<std::size_t>(h) * h), ba, bb;
  for (int i = 0; i < h; ++i) {
    const double* ai = shape.head_maps(a, i, ba);
    for (int j = 0; j < h; ++j)
      cost[i * h + j] = map_jsd(ai, shape.head_maps(b, j, bb), shape.map_rows(), shape.n);
  }
  min_assignment(cost, h, &columns);
  return columns;
}

void measure_interventions(const InterventionTask& task, const double* weights, std::int64_t stride,
                           const double* results, const std::uint64_t* seeds, std::int64_t count,
                           double* out, const Monitor& monitor) {
  const head::Model& m = task.m;
  const SeedResults& s = task.shape;
  const int n = s.n, rows = s.rows, heads = s.heads, inputs = task.inputs;
  const std::int64_t map = static_cast<std::int64_t>(inputs) * heads * rows * n;  // one seed's
  const std::int64_t size = s.size(), eval = head::evaluation_size(m, inputs);
  const std::int64_t outs = static_cast<std::int64_t>(inputs) * rows * s.d_out;
  std::fill(out, out + count * kInterventionFields, NAN);
  std::vector<char> finite(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) finite[i] = s.finite(results + i * size) ? 1 : 0;
  const auto maps_of = [&](std::int64_t i) { return s.maps(results + i * size); };
  // Where (b, h, row) starts in a seed's maps.
  const auto row_at = [&](int b, int h, int row) {
    return ((static_cast<std::int64_t>(b) * heads + h) * rows + row) * n;
  };
  std::vector<double> replace(static_cast<std::size_t>(count * map)), e(count * eval);
  for (int kind = 0; kind < 4; ++kind) {
    if (kind == 3 && task.known.empty()) continue;
    monitor.stop_point();
    std::vector<char> applies(static_cast<std::size_t>(count), 0);
    for (std::int64_t i = 0; i < count; ++i) {
      double* r = replace.data() + i * map;
      const std::int64_t partner = i ^ 1;
      applies[i] = finite[i] && (kind != 2 || (partner < count && finite[partner]));
      const int as = applies[i] ? kind : 0;  // elsewhere the uniform map (its result unread)
      std::vector<int> match;
      if (as == 2) match = matched_heads(s, maps_of(i), maps_of(partner));
      if (as == 3) match = matched_heads(s, maps_of(i), task.known.data());
      for (int b = 0; b < inputs; ++b)
        for (int h = 0; h < heads; ++h)
          for (int row = 0; row < rows; ++row) {
            const int k = m.last_key(m.r0 + row) + 1;
            double* to = r + row_at(b, h, row);
            const double* own = maps_of(i) + row_at(b, h, row);  // (as == 1: finite)
            std::fill(to, to + n, 0.0);
            if (as == 0)
              std::fill(to, to + k, 1.0 / k);
            else if (as == 1)
              permute_row(seeds[i], h, b, row, own, k, to);
            else if (as == 2)
              std::copy_n(maps_of(partner) + row_at(b, match[h], row), n, to);
            else
              std::copy_n(task.known.data() + row_at(b, match[h], row), n, to);
          }
    }
    head::evaluate_seeds_cpu(m, weights, stride, count, task.x, task.y, task.frozen_known, inputs,
                             e.data(), replace.data(), monitor);
    for (std::int64_t i = 0; i < count; ++i) {
      if (!applies[i]) continue;
      const double* r = results + i * size;
      const double* ev = e.data() + i * eval;
      out[i * kInterventionFields + 2 * kind] = ev[0] - s.test_loss(r);
      out[i * kInterventionFields + 2 * kind + 1] =
          rms_distance(ev + 1 + map, s.outputs(r), static_cast<int>(outs), inputs * rows);
    }
  }
  // The adversary and the importance: each head's values V_b = X_b W_V on each input.
  const int dv = m.d_v, dh = m.value_width(), dm = m.d_model;
  const std::int64_t wv = head::layout(m).wv;
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t i = 0; i < count; ++i) {
    if (!finite[i] || monitor.stop_requested()) continue;
    const double* w = weights + i * stride + wv;
    std::vector<double> values(static_cast<std::size_t>(n) * dv), importance(n);
    double adv_sum = 0, tau_sum = 0;
    std::int64_t adv_rows = 0, far = 0, tau_rows = 0;
    for (int b = 0; b < inputs; ++b) {
      const double* x = task.x + static_cast<std::int64_t>(b) * n * dm;
      for (int r = 0; r < n; ++r)
        for (int c = 0; c < dv; ++c) {
          double acc = 0;
          for (int t = 0; t < dm; ++t) acc += x[r * dm + t] * w[t * dv + c];
          values[r * dv + c] = acc;
        }
      for (int h = 0; h < heads; ++h)
        for (int row = 0; row < rows; ++row) {
          // A stop asked for between rows (the seed's fields are then unread: the run ends).
          if (monitor.stop_requested()) break;
          const int k = m.last_key(m.r0 + row) + 1;
          const double* p = maps_of(i) + row_at(b, h, row);
          const double* v = values.data() + h * dh;
          if (task.adversary) {
            const double reached = adversarial_row(p, v, k, dh, dv, task.epsilon, nullptr, monitor);
            adv_sum += reached;
            far += reached > kNotUniqueJsd ? 1 : 0;
            ++adv_rows;
          }
          if (k < 2) continue;
          leave_one_out(p, v, k, dh, dv, importance.data());
          std::vector<double> pw, iw;
          for (int j = 0; j < k; ++j)
            if (!std::isnan(importance[j])) pw.push_back(p[j]), iw.push_back(importance[j]);
          const double tau = kendall_tau_b(pw.data(), iw.data(), static_cast<int>(pw.size()));
          if (!std::isnan(tau)) tau_sum += tau, ++tau_rows;
        }
    }
    double* o = out + i * kInterventionFields;
    if (adv_rows > 0 && !std::isnan(adv_sum)) {  // (NaN: a row's values not finite; both NaN)
      o[kAdversarialJsd] = adv_sum / static_cast<double>(adv_rows);
      o[kNotUnique] = static_cast<double>(far) / static_cast<double>(adv_rows);
    }
    o[kTauB] = tau_rows > 0 ? tau_sum / static_cast<double>(tau_rows) : NAN;
  }
  monitor.stop_point();
}

}  // namespace attn
