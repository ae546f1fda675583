// moments.hpp: a mergeable summary of a sample: count, mean and central moment sums M2..M4.
//
// One value per sample enters with push() (Welford 1962, extended to M3, M4 by Terriberry
// 2007); two summaries combine with merge() (Chan, Golub, LeVeque 1979; Pebay 2008, eqs. 2.1).
// The same functions serve lanes, GPU blocks, chunks and shards, so a result depends only on
// which values were pushed and in which fixed tree they were merged, never on threads.
// All in double; n is a double so that 10^12 and more samples count exactly (below 2^53).
//
// Range. The sums outgrow the values: M4 of values near 1e77, M2 of values near 1e154 exceed
// the largest double although every value is finite. So M2..M4 are kept in units of a scale:
// m2 = M2 / scale^2, m3 = M3 / scale^3, m4 = M4 / scale^4, with scale a power of two (the
// mean is kept as it is: a weighted average of finite values is finite). The scale is 1 until an
// update would overflow; that update is then done again on the values divided by a larger scale
// (at least 4 times the largest magnitude involved, so scaled deviations are at most 1), the
// stored sums divided by its powers, as LAPACK's dlassq keeps a scaled sum of squares. Dividing
// by a power of two is exact unless a sum falls below 2^-1022 of the new scale's power, where it
// no longer counts against terms of the new size. An update that stays in range is the plain
// formula, bit for bit, so values of ordinary size never see the scale. A state fed only floats
// (|x| < 2^128) never needs one: its M4 stays below 2^620 for any n below 2^53.
#pragma once

#include <cfloat>
#include <cmath>

#include "hd.hpp"

namespace attn {

struct Moments {
  double n = 0, mean = 0, m2 = 0, m3 = 0, m4 = 0;
  double scale = 1;  // a power of two: M2 = m2 scale^2, M3 = m3 scale^3, M4 = m4 scale^4

  ATTN_HD void push(double x) {
    if (scale == 1) {
      Moments r = *this;
      update(r.n, r.mean, r.m2, r.m3, r.m4, x);
      // Non-finite input (a NaN value, or a state that holds one) gives what the formula gives.
      if (r.finite() || !is_finite(x) || !finite()) {
        *this = r;
        return;
      }
    }
    push_scaled(x);
  }

  // push() on loose fields, so that a CPU loop can keep many summaries as arrays and vectorize.
  // It takes floats: their moments never need a scale (see the top), so it is the plain update.
  ATTN_HD static void push_into(double& n, double& mean, double& m2, double& m3, double& m4,
                                float x) {
    update(n, mean, m2, m3, m4, static_cast<double>(x));
  }

  // Population variance (ddof = 0, as numpy's std), standard deviation (with numpy's ddof:
  // sqrt(M2 / (n - ddof))), kurtosis n M4 / M2^2. The variance is inf where it exceeds the
  // double range (a standard deviation above 1.3e154); the standard deviation and the kurtosis
  // of finite values are finite.
  ATTN_HD double variance() const { return n > 0 ? m2 / n * scale * scale : NAN; }
  ATTN_HD double stddev(double ddof = 0) const {
    return n > ddof ? sqrt(m2 / (n - ddof)) * scale : NAN;
  }
  ATTN_HD double kurtosis() const {
    if (!(m2 > 0)) return NAN;
    const double m2m2 = m2 * m2;  // out of range for m2 beyond 1.3e154 or below 1.5e-154
    return m2m2 <= DBL_MAX && m2m2 >= DBL_MIN ? n * m4 / m2m2 : n * (m4 / m2) / m2;
  }

  ATTN_HD static bool is_finite(double v) { return fabs(v) <= DBL_MAX; }  // false for inf, NaN
  ATTN_HD bool finite() const {
    return is_finite(mean) && is_finite(m2) && is_finite(m3) && is_finite(m4);
  }

  // The plain update of one value (Terriberry), on the fields in whatever units they are.
  ATTN_HD static void update(double& n, double& mean, double& m2, double& m3, double& m4,
                             double x) {
    const double n1 = n;
    n += 1.0;
    const double delta = x - mean;
    const double delta_n = delta / n;
    const double delta_n2 = delta_n * delta_n;
    const double term1 = delta * delta_n * n1;
    mean += delta_n;
    m4 += term1 * delta_n2 * (n * n - 3.0 * n + 3.0) + 6.0 * delta_n2 * m2 - 4.0 * delta_n * m3;
    m3 += term1 * delta_n * (n - 2.0) - 3.0 * delta_n * m2;
    m2 += term1;
  }

  // The state with its sums in units of new_scale (a power of two, at least scale), and its
  // mean divided by new_scale: the plain formulas then run on values divided by new_scale.
  ATTN_HD Moments in_units_of(double new_scale) const {
    const int k = ilogb(new_scale) - ilogb(scale);
    Moments u = *this;
    u.mean = mean / new_scale;
    u.m2 = ldexp(m2, -2 * k);
    u.m3 = ldexp(m3, -3 * k);
    u.m4 = ldexp(m4, -4 * k);
    u.scale = 1;
    return u;
  }

  // The scale to try after `s` overflowed: 2^64 times larger at least, and at least 4 times
  // `largest` (the largest magnitude among the values and means involved), at most 2^1023.
  ATTN_HD static double larger_scale(double s, double largest) {
    int e = ilogb(s) + 64;
    if (largest > 0 && ilogb(largest) + 2 > e) e = ilogb(largest) + 2;
    return ldexp(1.0, e < 1023 ? e : 1023);
  }

  // push() of a state that has a scale, or whose plain update overflowed. One larger scale
  // suffices (scaled deviations at most 1, stored sums divided by 2^128 or more); the bound on
  // the attempts is a guard.
  ATTN_HD void push_scaled(double x) {
    double s = scale;
    if (s == 1) s = larger_scale(1, fmax(fabs(x), fabs(mean)));
    for (int attempt = 0;; ++attempt) {
      Moments u = in_units_of(s);
      update(u.n, u.mean, u.m2, u.m3, u.m4, x / s);
      u.mean *= s;
      u.scale = s;
      if (u.finite() || !is_finite(x) || attempt == 3) {
        *this = u;
        return;
      }
      s = larger_scale(s, fmax(fabs(x), fabs(mean)));
    }
  }
};

// Chan's combination of two summaries, on the fields in whatever units they are (the same).
ATTN_HD inline Moments merge_plain(const Moments& a, const Moments& b) {
  Moments r;
  r.n = a.n + b.n;
  const double delta = b.mean - a.mean;
  const double delta_n = delta / r.n;
  const double delta_n2 = delta_n * delta_n;
  const double na_nb = a.n * b.n;
  r.mean = a.mean + delta_n * b.n;
  r.m2 = a.m2 + b.m2 + delta * delta_n * na_nb;
  r.m3 = a.m3 + b.m3 + delta * delta_n2 * na_nb * (a.n - b.n) +
         3.0 * delta_n * (a.n * b.m2 - b.n * a.m2);
  r.m4 = a.m4 + b.m4 + delta * delta_n2 * delta_n * na_nb * (a.n * a.n - na_nb + b.n * b.n) +
         6.0 * delta_n2 * (a.n * a.n * b.m2 + b.n * b.n * a.m2) +
         4.0 * delta_n * (a.n * b.m3 - b.n * a.m3);
  return r;
}

ATTN_HD inline Moments merge(const Moments& a, const Moments& b) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  const bool finite_inputs = a.finite() && b.finite();
  if (a.scale == 1 && b.scale == 1) {
    const Moments r = merge_plain(a, b);
    if (r.finite() || !finite_inputs) return r;
  }
  // In units of the larger scale (or a first one), as Moments::push_scaled.
  const double largest = fmax(fabs(a.mean), fabs(b.mean));
  double s = fmax(a.scale, b.scale);
  if (s == 1) s = Moments::larger_scale(1, largest);
  for (int attempt = 0;; ++attempt) {
    Moments r = merge_plain(a.in_units_of(s), b.in_units_of(s));
    r.mean *= s;
    r.scale = s;
    if (r.finite() || !finite_inputs || attempt == 3) return r;
    s = Moments::larger_scale(s, largest);
  }
}

}  // namespace attn
