// moments.hpp: a mergeable summary of a sample: count, mean and central moment sums M2..M4.
//
// One value per sample enters with push() (Welford 1962, extended to M3, M4 by Terriberry
// 2007); two summaries combine with merge() (Chan, Golub, LeVeque 1979; Pebay 2008, eqs. 2.1).
// The same functions serve lanes, GPU blocks, chunks and shards, so a result depends only on
// which values were pushed and in which fixed tree they were merged, never on threads.
// All in double; n is a double so that 10^12 and more samples count exactly (below 2^53).
#pragma once

#include <cmath>

#include "hd.hpp"

namespace attn {

struct Moments {
  double n = 0, mean = 0, m2 = 0, m3 = 0, m4 = 0;

  ATTN_HD void push(double x) { push_into(n, mean, m2, m3, m4, x); }

  // push() on loose fields, so that a CPU loop can keep many summaries as arrays and vectorize.
  ATTN_HD static void push_into(double& n, double& mean, double& m2, double& m3, double& m4,
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

  // Population variance (ddof = 0, as numpy's std), standard deviation, kurtosis m4/m2^2.
  ATTN_HD double variance() const { return n > 0 ? m2 / n : NAN; }
  ATTN_HD double stddev() const { return sqrt(variance()); }
  ATTN_HD double kurtosis() const { return m2 > 0 ? n * m4 / (m2 * m2) : NAN; }
};

ATTN_HD inline Moments merge(const Moments& a, const Moments& b) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
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

}  // namespace attn
