"""Shared by the scripts of bench/: the machine's description (CPU model, ISA level), a child
process timed in wall and CPU seconds, and for the JAX and PyTorch 2 peers of
bench/compare_head.py (bench/peers/) the command line, the task's starting values (numpy,
float64) and the result line. The peers under bench/peers/ import it by its folder.

Two ways to start, both float64, lr 0.01, loss over all n rows:
- "demo" (default): what `demo --table attention-sweep --task random --task-seed T` trains:
  X, Y = default_rng(T).normal(size=(n, d)) twice; seed s: default_rng(s), W_Q, W_K, W_V as
  three successive normal((d, d)) draws, times 0.25 (seeds 0 .. SEEDS-1).
  With --task teacher --inputs B, what `demo ... --task teacher --inputs B` trains (spec
  "Version 3"): default_rng(T) draws the teacher's W_Q*, W_K*, W_V* (normal((d, d)) each, times
  1/sqrt(d)), then B inputs X_b = normal((n, d)), Y_b the teacher's output on X_b; the loss is
  the mean over the inputs. The seeds' start as above (init scale 0.25 = 1/sqrt(16), the
  teacher's).
- "anchor": what bench/peers/numpy/numpy_head.py trains: one default_rng(1) draws X, Y, then W_Q,
  W_K, W_V as (SEEDS, d, d) blocks, times 0.25 (used to check a peer against that anchor).
X and Y are (B, n, d): B inputs stacked (B = 1 for the random task).
"""
import argparse
import os
import resource
import subprocess
import sys
import time

try:
    import numpy as np
except ImportError:
    sys.exit(f"bench: {sys.executable} has no numpy: run the bench scripts with /usr/bin/python3 "
             "or a virtual environment's python (bench/setup-peers: build/bench-venv)")

LR, INIT_SCALE = 0.01, 0.25


def positive_int(text):
    """argparse type: an integer >= 1 (its error one usage line, as argparse writes)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def require_executable(ap, option, path):
    """Ends with argparse's usage error unless path is an executable file (before any work)."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        ap.error(f"{option}: no executable at {path}")


def isa_level():
    """This CPU's x86-64 psABI level, from /proc/cpuinfo's flags."""
    flags = set(open("/proc/cpuinfo").read().split("\nflags")[1].split("\n")[0].split())
    v2 = {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"}
    v3 = v2 | {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}
    v4 = v3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
    for name, need in (("x86-64-v4 (AVX-512)", v4), ("x86-64-v3 (AVX2, FMA)", v3),
                       ("x86-64-v2 (SSE4.2)", v2)):
        if need <= flags:
            return name
    return "x86-64 baseline"


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def run(cmd, env=None, cwd=None):
    """Runs cmd to its end: (stdout, CPU seconds of the child process (user + system, all its
    threads), wall seconds). A non-zero exit raises RuntimeError with the end of its stderr."""
    r0, t0 = os.times(), time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    wall, r1 = time.perf_counter() - t0, os.times()
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd[:3])} ...: exit {p.returncode}: {p.stderr[-2000:]}")
    cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    return p.stdout, cpu, wall


def args(doc, variants):
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("n", type=positive_int)
    ap.add_argument("d", type=positive_int)
    ap.add_argument("seeds", type=positive_int)
    ap.add_argument("steps", type=positive_int)
    ap.add_argument("--variant", choices=variants, default=variants[0])
    ap.add_argument("--init", choices=["demo", "anchor"], default="demo")
    ap.add_argument("--task-seed", type=int, default=1)
    ap.add_argument("--task", choices=["random", "teacher"], default="random")
    ap.add_argument("--inputs", type=positive_int, default=1, help="B (--task teacher)")
    ap.add_argument("--print-losses", type=int, default=0, metavar="K",
                    help="print the final loss of the first K seeds (repr, float64)")
    return ap.parse_args()


def softmax(S):
    S = S - S.max(-1, keepdims=True)
    P = np.exp(S)
    return P / P.sum(-1, keepdims=True)


def start(a):
    """X (B, n, d), Y (B, n, d), W_Q, W_K, W_V (seeds, d, d), all float64 numpy arrays."""
    n, d, seeds = a.n, a.d, a.seeds
    if a.task == "random" and a.inputs != 1:
        raise SystemExit("--inputs B > 1 needs --task teacher")
    if a.init == "anchor":
        if a.task != "random":
            raise SystemExit("--init anchor is the random task's")
        g = np.random.default_rng(1)
        X = g.normal(size=(n, d))
        Y = g.normal(size=(n, d))
        W = [INIT_SCALE * g.normal(size=(seeds, d, d)) for _ in range(3)]
        return X[None], Y[None], W
    g = np.random.default_rng(a.task_seed)
    if a.task == "teacher":
        Wt = [g.normal(size=(d, d)) * (1 / np.sqrt(d)) for _ in range(3)]
        X = np.stack([g.normal(size=(n, d)) for _ in range(a.inputs)])
        Y = softmax((X @ Wt[0]) @ (X @ Wt[1]).transpose(0, 2, 1) / np.sqrt(d)) @ (X @ Wt[2])
    else:
        X = g.normal(size=(n, d))[None]
        Y = g.normal(size=(n, d))[None]
    W = [np.empty((seeds, d, d)) for _ in range(3)]
    for s in range(seeds):
        gs = np.random.default_rng(s)
        for w in W:
            w[s] = gs.normal(size=(d, d))
    return X, Y, [INIT_SCALE * w for w in W]


def losses(X, Y, Wq, Wk, Wv):
    """Final loss of every seed (the mean over the inputs), in numpy from the trained weights;
    X, Y (B, n, d)."""
    c = 1 / np.sqrt(X.shape[2])
    L = np.zeros(Wq.shape[0])
    for Xb, Yb in zip(X, Y):
        Q, K, V = Xb @ Wq, Xb @ Wk, Xb @ Wv
        P = softmax(Q @ K.transpose(0, 2, 1) * c)
        L += (((P @ V) - Yb) ** 2).sum((1, 2))
    return L / X.shape[0]


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
    print(f"{name} head n {a.n} d {a.d} task {a.task} inputs {a.inputs} seeds {a.seeds} steps {a.steps} variant {a.variant} "
          f"threads {os.environ.get('OMP_NUM_THREADS', '?')} "
          f"seed_steps_per_s {ss / run_wall:.4e} seed_steps_per_cpu_s {ss / run_cpu:.4e} "
          f"run_cpu_s {run_cpu:.3f} run_wall_s {run_wall:.3f} "
          f"compile_cpu_s {compile_cpu:.3f} compile_wall_s {compile_wall:.3f}{extra}")
    if a.print_losses:
        L = losses(X, Y, *(np.asarray(w, dtype=np.float64) for w in W))
        print("losses " + " ".join(repr(float(v)) for v in L[: a.print_losses]))
