"""Shared by the JAX and PyTorch 2 peers of bench/compare_head.py: the command line, the task's
starting values (numpy, float64) and the result line.

Two ways to start, both float64, lr 0.01, loss over all n rows:
- "demo" (default): what `demo --table attention-sweep --task random --task-seed T` trains:
  X, Y = default_rng(T).normal(size=(n, d)) twice; seed s: default_rng(s), W_Q, W_K, W_V as
  three successive normal((d, d)) draws, times 0.25 (seeds 0 .. SEEDS-1).
- "anchor": what bench/anchors/numpy_head.py trains: one default_rng(1) draws X, Y, then W_Q,
  W_K, W_V as (SEEDS, d, d) blocks, times 0.25 (used to check a peer against that anchor).
"""
import argparse
import os
import resource
import time

import numpy as np

LR, INIT_SCALE = 0.01, 0.25


def args(doc, variants):
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("n", type=int)
    ap.add_argument("d", type=int)
    ap.add_argument("seeds", type=int)
    ap.add_argument("steps", type=int)
    ap.add_argument("--variant", choices=variants, default=variants[0])
    ap.add_argument("--init", choices=["demo", "anchor"], default="demo")
    ap.add_argument("--task-seed", type=int, default=1)
    ap.add_argument("--print-losses", type=int, default=0, metavar="K",
                    help="print the final loss of the first K seeds (repr, float64)")
    return ap.parse_args()


def start(a):
    """X (n, d), Y (n, d), W_Q, W_K, W_V (seeds, d, d), all float64 numpy arrays."""
    n, d, seeds = a.n, a.d, a.seeds
    if a.init == "anchor":
        g = np.random.default_rng(1)
        X = g.normal(size=(n, d))
        Y = g.normal(size=(n, d))
        W = [INIT_SCALE * g.normal(size=(seeds, d, d)) for _ in range(3)]
        return X, Y, W
    g = np.random.default_rng(a.task_seed)
    X = g.normal(size=(n, d))
    Y = g.normal(size=(n, d))
    W = [np.empty((seeds, d, d)) for _ in range(3)]
    for s in range(seeds):
        gs = np.random.default_rng(s)
        for w in W:
            w[s] = gs.normal(size=(d, d))
    return X, Y, [INIT_SCALE * w for w in W]


def losses(X, Y, Wq, Wk, Wv):
    """Final loss of every seed, computed in numpy from the trained weights."""
    c = 1 / np.sqrt(X.shape[1])
    Q, K, V = X @ Wq, X @ Wk, X @ Wv
    S = Q @ K.transpose(0, 2, 1) * c
    S -= S.max(-1, keepdims=True)
    P = np.exp(S)
    P /= P.sum(-1, keepdims=True)
    return (((P @ V) - Y) ** 2).sum((1, 2))


class Clock:
    """CPU seconds of this process (all its threads) and wall seconds, from construction."""

    def __init__(self):
        self.cpu0, self.wall0 = self._cpu(), time.perf_counter()

    @staticmethod
    def _cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    def cpu(self):
        return self._cpu() - self.cpu0

    def wall(self):
        return time.perf_counter() - self.wall0


def report(name, a, compile_cpu, compile_wall, run_cpu, run_wall, W, X, Y, extra=""):
    ss = a.seeds * a.steps
    print(f"{name} head n {a.n} d {a.d} seeds {a.seeds} steps {a.steps} variant {a.variant} "
          f"threads {os.environ.get('OMP_NUM_THREADS', '?')} "
          f"seed_steps_per_s {ss / run_wall:.4e} seed_steps_per_cpu_s {ss / run_cpu:.4e} "
          f"run_cpu_s {run_cpu:.3f} run_wall_s {run_wall:.3f} "
          f"compile_cpu_s {compile_cpu:.3f} compile_wall_s {compile_wall:.3f}{extra}")
    if a.print_losses:
        L = losses(X, Y, *(np.asarray(w, dtype=np.float64) for w in W))
        print("losses " + " ".join(repr(float(v)) for v in L[: a.print_losses]))
