// interventions.cpp: see interventions.hpp.
#include "experiments/interventions.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/numpy_random.hpp"
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

// The eigenvalues g and orthonormal eigenvectors (columns of q, k x k row-major) of the
// symmetric k x k matrix a (destroyed): cyclic Jacobi rotations (Golub and Van Loan, 8.5) until
// the off-diagonal part is below 1e-30 of the whole.
void symmetric_eigen(std::vector<double>& a, int k, std::vector<double>& g,
                     std::vector<double>& q) {
  q.assign(static_cast<std::size_t>(k) * k, 0.0);
  for (int i = 0; i < k; ++i) q[i * k + i] = 1;
  for (int sweep = 0; sweep < 50; ++sweep) {
    double off = 0, all = 0;
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < k; ++j) (i == j ? all : off) += a[i * k + j] * a[i * k + j];
    if (off <= 1e-30 * (all + off)) break;
    for (int p = 0; p < k; ++p)
      for (int r = p + 1; r < k; ++r) {
        if (a[p * k + r] == 0) continue;
        const double theta = (a[r * k + r] - a[p * k + p]) / (2 * a[p * k + r]);
        const double t = (theta >= 0 ? 1 : -1) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int i = 0; i < k; ++i) {  // columns p, r
          const double ip = a[i * k + p], ir = a[i * k + r];
          a[i * k + p] = c * ip - s * ir;
          a[i * k + r] = s * ip + c * ir;
        }
        for (int i = 0; i < k; ++i) {  // rows p, r
          const double pi = a[p * k + i], ri = a[r * k + i];
          a[p * k + i] = c * pi - s * ri;
          a[r * k + i] = s * pi + c * ri;
        }
        for (int i = 0; i < k; ++i) {
          const double ip = q[i * k + p], ir = q[i * k + r];
          q[i * k + p] = c * ip - s * ir;
          q[i * k + r] = s * ip + c * ir;
        }
      }
  }
  g.resize(k);
  for (int i = 0; i < k; ++i) g[i] = std::max(a[i * k + i], 0.0);
}

// The adversary's search (docs/spec/VARIABILITY.md, "The adversarial map's method"): projected
// gradient ascent of f(x) = JSD(x, p), convex in x, with ∂f/∂x_i = ½ ln(2 x_i / (x_i + p_i)) (½ ln
// 2 where p_i = 0), on F = simplex ∩ B, B = {x : ‖(x − p) V‖ ≤ ε}. The projection onto F is
// Dykstra's alternating projection onto the simplex and onto B (B's: x = p + (I + λ V Vᵀ)⁻¹ (z − p)
// in V Vᵀ's eigenbasis, λ the root of the secular equation), its end made feasible by a simplex
// projection and a pull towards p (a point of a segment from p stays on the simplex).
struct Adversary {
  const double* p;
  int k;
  double epsilon;
  std::vector<double> g, q;  // V Vᵀ = q diag(g) qᵀ
  std::vector<double> coef;
  double null_below = 0;  // eigenvalues at or below it: directions that keep the output exactly

  Adversary(const double* p_, const double* v, int k_, int d, int stride, double eps)
      : p(p_), k(k_), epsilon(eps) {
    std::vector<double> a(static_cast<std::size_t>(k) * k, 0.0);
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < k; ++j)
        for (int c = 0; c < d; ++c) a[i * k + j] += v[i * stride + c] * v[j * stride + c];
    symmetric_eigen(a, k, g, q);
    null_below = 1e-13 * std::max(*std::max_element(g.begin(), g.end()), 1e-300);
    coef.resize(k);
  }
  bool null(int i) const { return g[i] <= null_below; }

  // ‖(x − p) V‖².
  double shift2(const double* x) {
    double s = 0;
    for (int i = 0; i < k; ++i) {
      double c = 0;
      for (int j = 0; j < k; ++j) c += q[j * k + i] * (x[j] - p[j]);
      if (!null(i)) s += g[i] * c * c;
    }
    return s;
  }
  // Euclidean projection of z onto B, in place.
  void to_cylinder(double* z) {
    double phi = 0;
    for (int i = 0; i < k; ++i) {
      double c = 0;
      for (int j = 0; j < k; ++j) c += q[j * k + i] * (z[j] - p[j]);
      coef[i] = c;
      if (!null(i)) phi += g[i] * c * c;
    }
    const double e2 = epsilon * epsilon;
    if (phi <= e2) return;
    // Shrink factors 1 / (1 + λ g_i): λ from Newton's method on 1/ε − 1/√φ(λ) (monotone from
    // λ = 0 for the trust-region secular equation; Moré and Sorensen 1983).
    double lambda = 0;
    for (int it = 0; it < 60 && epsilon > 0; ++it) {
      double f = 0, df = 0;
      for (int i = 0; i < k; ++i) {
        if (null(i)) continue;
        const double s = 1 / (1 + lambda * g[i]), t = g[i] * coef[i] * coef[i];
        f += t * s * s;
        df -= 2 * g[i] * t * s * s * s;
      }
      const double root = std::sqrt(f);
      if (std::fabs(root - epsilon) <= 1e-13 * epsilon) break;
      const double h = 1 / epsilon - 1 / root, dh = df / (2 * root * f);
      const double next = lambda - h / dh;
      if (!(next > lambda)) break;
      lambda = next;
    }
    for (int j = 0; j < k; ++j) {
      double u = 0;
      for (int i = 0; i < k; ++i) {
        const double s = null(i) ? 1.0 : epsilon > 0 ? 1 / (1 + lambda * g[i]) : 0.0;
        u += q[j * k + i] * coef[i] * s;
      }
      z[j] = p[j] + u;
    }
  }
  // Pulled towards p onto B where it is outside (a point of the segment from p).
  void retract(double* x) {
    const double norm2 = shift2(x);
    if (norm2 <= epsilon * epsilon) return;
    const double t = epsilon / std::sqrt(norm2) * (1 - 1e-12);
    for (int j = 0; j < k; ++j) x[j] = p[j] + t * (x[j] - p[j]);
  }
  // Euclidean projection onto the simplex (sort-based: Held, Wolfe and Crowder 1974).
  static void to_simplex(double* y, int k) {
    std::vector<double> s(y, y + k);
    std::sort(s.begin(), s.end(), std::greater<>());
    double sum = 0, theta = 0;
    for (int j = 0; j < k; ++j) {
      sum += s[j];
      const double t = (sum - 1) / static_cast<double>(j + 1);
      if (s[j] - t > 0) theta = t;
    }
    for (int j = 0; j < k; ++j) y[j] = std::max(y[j] - theta, 0.0);
  }
  // Onto F (Dykstra), then made feasible.
  void to_feasible(std::vector<double>& z) {
    // The simplex's projection inside B is F's (F lies in the simplex).
    std::vector<double> y = z;
    to_simplex(y.data(), k);
    if (shift2(y.data()) <= epsilon * epsilon) {
      z = y;
      return;
    }
    y = z;
    std::vector<double> P(k, 0.0), Q(k, 0.0), a(k);
    for (int it = 0; it < 40; ++it) {
      for (int j = 0; j < k; ++j) a[j] = y[j] + P[j];
      to_simplex(a.data(), k);
      for (int j = 0; j < k; ++j) P[j] = y[j] + P[j] - a[j];
      std::vector<double> b(k);
      for (int j = 0; j < k; ++j) b[j] = a[j] + Q[j];
      to_cylinder(b.data());
      for (int j = 0; j < k; ++j) Q[j] = a[j] + Q[j] - b[j];
      double moved = 0;
      for (int j = 0; j < k; ++j) moved = std::max(moved, std::fabs(b[j] - y[j]));
      y = b;
      if (moved < 1e-10) break;
    }
    to_simplex(y.data(), k);
    retract(y.data());
    z = y;
  }
  double f(const double* x) const { return jsd(x, p, k); }

  // Ascent from x (feasible), in place; returns f(x) at the end.
  double ascend(std::vector<double>& x) {
    double fx = f(x.data()), eta = 0.25;
    std::vector<double> grad(k), y(k);
    for (int it = 0; it < 100 && eta > 1e-6; ++it) {
      double top = 0;
      for (int j = 0; j < k; ++j) {
        grad[j] = p[j] == 0 ? 0.5 * std::log(2.0)
                            : 0.5 * std::log(std::max(2 * x[j] / (x[j] + p[j]), 1e-300));
        top = std::max(top, std::fabs(grad[j]));
      }
      if (!(top > 0)) break;
      for (int j = 0; j < k; ++j) y[j] = x[j] + eta * grad[j] / top;
      to_feasible(y);
      const double fy = f(y.data());
      if (fy > fx * (1 + 1e-14)) {
        x = y;
        fx = fy;
        eta = std::min(eta * 2, 4.0);
      } else {
        eta *= 0.25;
      }
    }
    return fx;
  }
};

}  // namespace

double adversarial_row(const double* p, const double* v, int k, int d, int stride, double epsilon,
                       double* out) {
  if (k < 2) {
    if (out != nullptr) std::copy_n(p, k, out);
    return 0;
  }
  Adversary adv(p, v, k, d, stride, epsilon);
  std::vector<double> best(p, p + k), x(static_cast<std::size_t>(k));
  double top = 0;
  const auto from = [&](std::vector<double> start) {
    const double fx = adv.ascend(start);
    if (fx > top) {
      top = fx;
      best = start;
    }
  };
  // Starts: towards the vertices e_j of the simplex, as far as B allows (f grows along a ray
  // from p, being convex and 0 at p), every one (fewer lose the maximum on the grid test); and
  // along each direction that keeps the output exactly (an eigenvector of V Vᵀ of eigenvalue 0,
  // made sum-zero), both ways, to the simplex's edge.
  std::vector<std::pair<double, int>> rays;
  for (int j = 0; j < k; ++j) {
    for (int i = 0; i < k; ++i) x[i] = (i == j ? 1.0 : 0.0);
    adv.retract(x.data());
    rays.emplace_back(-adv.f(x.data()), j);
  }
  std::sort(rays.begin(), rays.end());  // the rays that reach farthest first
  for (int r = 0; r < k; ++r) {
    const int j = rays[r].second;
    for (int i = 0; i < k; ++i) x[i] = (i == j ? 1.0 : 0.0);
    adv.retract(x.data());
    from(x);
  }
  for (int e = 0; e < k; ++e) {
    if (!adv.null(e)) continue;
    std::vector<double> dir(k);
    double mean = 0;
    for (int j = 0; j < k; ++j) mean += adv.q[j * k + e] / k;
    for (int j = 0; j < k; ++j) dir[j] = adv.q[j * k + e] - mean;
    for (double sign : {1.0, -1.0}) {
      double t = INFINITY;
      for (int j = 0; j < k; ++j)
        if (sign * dir[j] < -1e-15) t = std::min(t, p[j] / (-sign * dir[j]));
      if (!std::isfinite(t)) continue;
      for (int j = 0; j < k; ++j) x[j] = std::max(p[j] + t * sign * dir[j], 0.0);
      double sum = 0;
      for (double xj : x) sum += xj;
      for (double& xj : x) xj /= sum;
      adv.retract(x.data());
      from(x);
    }
  }
  if (out != nullptr) std::copy(best.begin(), best.end(), out);
  return top;
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
    head::evaluate_seeds_cpu(m, weights, stride, count, task.x, task.y, inputs, e.data(),
                             replace.data(), monitor);
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
          const int k = m.last_key(m.r0 + row) + 1;
          const double* p = maps_of(i) + row_at(b, h, row);
          const double* v = values.data() + h * dh;
          if (task.adversary) {
            const double reached = adversarial_row(p, v, k, dh, dv, task.epsilon);
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
    if (adv_rows > 0) {
      o[kAdversarialJsd] = adv_sum / static_cast<double>(adv_rows);
      o[kNotUnique] = static_cast<double>(far) / static_cast<double>(adv_rows);
    }
    o[kTauB] = tau_rows > 0 ? tau_sum / static_cast<double>(tau_rows) : NAN;
  }
  monitor.stop_point();
}

}  // namespace attn
