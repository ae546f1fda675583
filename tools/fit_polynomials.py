#!/usr/bin/python3
"""Fit the float32 polynomials of kernels/fast_math.hpp (Box-Muller's log, sin, cos) and
kernels/simd.hpp (the exp of the attention softmax).

Each polynomial is a weighted least-squares fit on Chebyshev points (near-minimax), with the
coefficients rounded to float32; the script then evaluates it the way the kernels do (Horner
with a fused multiply-add, rounded to float32 after each step) and prints the worst error in
float32 ulps over a dense grid. This is how the coefficients in both were made.

Usage: tools/fit_polynomials.py            (needs Debian's python3-numpy)
"""
import numpy as np

f32 = np.float32

def fma32(a, b, c):
    # float32 fma emulated in float64: a*b is exact in float64 for float32 a, b.
    return f32(np.float64(a) * np.float64(b) + np.float64(c))

def horner32(coeffs, x):
    acc = f32(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = fma32(acc, x, f32(c))
    return acc

def fit(func, lo, hi, degree, weight=lambda x: 1.0, n=4000):
    k = np.arange(n)
    x = 0.5 * (lo + hi) + 0.5 * (hi - lo) * np.cos(np.pi * (k + 0.5) / n)
    w = np.array([weight(v) for v in x])
    V = np.vander(x, degree + 1, increasing=True)
    coeffs, *_ = np.linalg.lstsq(V * w[:, None], func(x) * w, rcond=None)
    return [f32(c) for c in coeffs]

def ulp_error(approx, exact):
    exact32 = exact.astype(np.float32)
    ulp = np.spacing(np.abs(exact32)).astype(np.float64)
    return np.max(np.abs(approx.astype(np.float64) - exact) / ulp)

SQRT_HALF = np.sqrt(0.5)
lo, hi = SQRT_HALF - 1, np.sqrt(2.0) - 1

# log1p(f) = f + f^2 * P(f) on [sqrt(1/2) - 1, sqrt(2) - 1]; P fitted for relative error.
for deg in (6, 7, 8):
    P = fit(lambda x: (np.log1p(x) - x) / x**2, lo, hi, deg, weight=lambda x: x * x / abs(np.log1p(x)) if x else 1)
    xs = np.linspace(lo, hi, 200001).astype(np.float32)
    xs = xs[xs != 0]
    approx = np.array([fma32(f32(x) * f32(x), horner32(P, x), x) for x in xs[::20]])
    err = ulp_error(approx, np.log1p(xs[::20].astype(np.float64)))
    print(f"log1p P degree {deg}: max error {err:.2f} ulp; coefficients", [float.hex(float(c)) for c in P])

# sin(pi/2 t) = t * S(t^2), cos(pi/2 t) = C(t^2), t in [-1/2, 1/2].
for deg in (3, 4, 5):
    S = fit(lambda u: np.sin(np.pi / 2 * np.sqrt(u)) / np.sqrt(u), 1e-12, 0.25, deg)
    C = fit(lambda u: np.cos(np.pi / 2 * np.sqrt(u)), 0.0, 0.25, deg)
    ts = np.linspace(-0.5, 0.5, 20001).astype(np.float32)
    ts = ts[ts != 0]
    s_apx = np.array([f32(t) * horner32(S, f32(t) * f32(t)) for t in ts])
    c_apx = np.array([horner32(C, f32(t) * f32(t)) for t in ts])
    t64 = ts.astype(np.float64)
    print(f"sin degree {deg} in t^2: {ulp_error(s_apx, np.sin(np.pi/2*t64)):.2f} ulp;",
          [float.hex(float(c)) for c in S])
    print(f"cos degree {deg} in t^2: {ulp_error(c_apx, np.cos(np.pi/2*t64)):.2f} ulp;",
          [float.hex(float(c)) for c in C])

# exp(r) = 1 + r + r^2 * E(r), r in [-ln2/2, ln2/2] (exp_nonpositive's reduced argument);
# E fitted for relative error, then the whole exp (reduction, E, scaling) checked in ulps on
# x in [-87, 0] (normal results). kernels/simd.hpp's exp_nonpositive uses degree 4.
LN2 = np.log(2.0)
LN2_HI = f32(LN2)
LN2_LO = f32(LN2 - np.float64(LN2_HI))
SHIFTER = f32(1.5 * 2.0**23)
def exp32(E, x):
    n = f32(fma32(x, f32(1 / LN2), SHIFTER) - SHIFTER)
    r = fma32(n, -LN2_LO, fma32(n, -LN2_HI, x))
    y = f32(fma32(f32(r * r), horner32(E, r), r) + f32(1))
    return f32(y * f32(2.0 ** int(n)))
for deg in (3, 4):
    E = fit(lambda r: (np.expm1(r) - r) / r**2, -LN2 / 2, LN2 / 2, deg,
            weight=lambda r: r * r / np.exp(r))
    xs = np.linspace(-87.0, 0.0, 400001).astype(np.float32)[::7]
    approx = np.array([exp32(E, x) for x in xs])
    err = ulp_error(approx, np.exp(xs.astype(np.float64)))
    print(f"exp E degree {deg}: max error {err:.2f} ulp; coefficients", [float.hex(float(c)) for c in E])
