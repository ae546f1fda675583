"""attnlab.attention against numpy (OpenBLAS) and PyTorch on one batch, per CPU-second.

The problem: batch 4096, n = 128, d_model = d_k = d_v = 64, float32, weights shared, 2 threads
for every peer. Each peer computes q, k, v, the scores, the softmax and the outputs, and returns
the same arrays, q, k, v and out (new arrays, 0.54 GB):
  attnlab  attnlab.attention(x, w_q, w_k, w_v, threads=2, need_weights=False)
  numpy    one (batch n, d_model) x (d_model, d) matmul per projection, batched matmul for
           the scores and the outputs, a stable softmax (max subtracted)
  torch    torch.matmul projections and torch.nn.functional.scaled_dot_product_attention
and two more calls of attnlab for reference, not peers:
  attnlab+maps  need_weights=True: scores and weights returned too (1.07 GB in all)
  attnlab out=  need_weights=False, out= the arrays of an earlier call: no new memory
Rounds alternate the calls (the order rotates each round). In a round each runs twice, back to
back, after a pause that lets the thread pools of the one before it (OpenBLAS, OpenMP) stop
spinning, so that none is charged another's idle threads; the second call is timed, in process
CPU seconds (all threads) and wall seconds, so that its outputs land in memory the first one just
freed: on a virtual machine that hands freed memory back to its host, memory fresh from the host
costs each peer a multiple of its computation in page faults, in proportion to what it allocates
(docs/PERFORMANCE.md). The median over rounds is reported, with each call's time over
attnlab's, the machine's ISA level and its load average. The SGEMM line is numpy's 2048 x 2048
float32 matmul on the same 2 threads: the rate attnlab's 2 (B n d_model (2 d_k + d_v) + B n^2
(d_k + d_v)) FLOP per CPU-second is compared with. A peer that is not installed is skipped.

--wait-policies N instead times attnlab's two calls without maps, new outputs and out= (no new
memory: the kernels alone), in processes of their own, alternating N rounds between libgomp's
default wait policy (a thread that reaches the end of a parallel region first spins before it
sleeps) and OMP_WAIT_POLICY=PASSIVE (it sleeps at once), 4 calls of each a process, CPU and
wall seconds.

    OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 PYTHONPATH=build/python/python \\
        build/bench-venv/bin/python bench/python_attention.py [--rounds 7] [--wait-policies 4]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import common  # noqa: E402  (first: a Python without numpy is told so in one line)
import numpy as np  # noqa: E402

attnlab = None  # imported by main() once the arguments are checked


def import_attnlab():
    global attnlab
    try:
        import attnlab as module
    except ImportError:
        sys.exit(f"python_attention: {sys.executable} has no attnlab: install it (pip install .) "
                 "or put build/python/python on PYTHONPATH (the python preset)")
    attnlab = module

B, N, D = 4096, 128, 64
THREADS = 2


def timed(f):
    time.sleep(0.2)
    f()
    clock = common.Clock()
    f()
    return clock.cpu(), clock.wall()


def numpy_attention(x, wq, wk, wv):
    flat = x.reshape(-1, D)
    q, k, v = ((flat @ w).reshape(B, N, D) for w in (wq, wk, wv))
    s = (q @ k.transpose(0, 2, 1)) * np.float32(1 / np.sqrt(D))
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return q, k, v, s @ v


def problem():
    g = np.random.default_rng(0)
    x = g.standard_normal((B, N, D), dtype=np.float32)
    wq, wk, wv = (g.standard_normal((D, D), dtype=np.float32) / 8 for _ in range(3))
    return g, x, wq, wk, wv


def without_maps(calls):
    """Prints "CALL CPU wall" seconds of `calls` calls of attnlab without maps, new outputs
    ("new") and out= ("out="), in turn (a child process)."""
    _, x, wq, wk, wv = problem()
    kept = attnlab.attention(x, wq, wk, wv, threads=THREADS, need_weights=False)
    for _ in range(calls):
        for name, out in (("new", None), ("out=", kept)):
            c, w = timed(lambda: attnlab.attention(x, wq, wk, wv, threads=THREADS,
                                                   need_weights=False, out=out))
            print(f"{name} {c:.4f} {w:.4f}")


def wait_policies(rounds):
    times = {(p, call): [] for p in ("default", "PASSIVE") for call in ("new", "out=")}
    for _ in range(rounds):
        for policy in ("default", "PASSIVE"):
            env = dict(os.environ)
            env.pop("OMP_WAIT_POLICY", None)
            if policy != "default":
                env["OMP_WAIT_POLICY"] = policy
            r = subprocess.run([sys.executable, __file__, "--child-calls", "4"], env=env,
                               capture_output=True, text=True, check=True)
            for line in r.stdout.splitlines():
                call, c, w = line.split()
                times[(policy, call)].append((float(c), float(w)))
    print(f"attnlab.attention(need_weights=False), new outputs and out=, batch {B}, n {N}, d {D}, "
          f"float32, {THREADS} threads; {common.cpu_model()}, {common.isa_level()}, load average "
          f"{os.getloadavg()[0]:.2f} at the end; {rounds} alternating rounds of 4 calls a process")
    print(f"{'OMP_WAIT_POLICY':16} {'call':5} {'CPU s':>8} {'min':>8} {'max':>8} {'wall s':>8}")
    for (policy, call), t in times.items():
        cpu = [c for c, _ in t]
        print(f"{policy:16} {call:5} {statistics.median(cpu):8.3f} {min(cpu):8.3f} "
              f"{max(cpu):8.3f} {statistics.median(w for _, w in t):8.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=common.positive_int, default=7)
    ap.add_argument("--wait-policies", type=int, default=0, metavar="N")
    ap.add_argument("--child-calls", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    import_attnlab()
    if a.child_calls:
        return without_maps(a.child_calls)
    if a.wait_policies:
        return wait_policies(a.wait_policies)
    g, x, wq, wk, wv = problem()
    kept = attnlab.attention(x, wq, wk, wv, threads=THREADS, need_weights=False)
    peers = {"attnlab": lambda: attnlab.attention(x, wq, wk, wv, threads=THREADS,
                                                  need_weights=False),
             "attnlab+maps": lambda: attnlab.attention(x, wq, wk, wv, threads=THREADS),
             "attnlab out=": lambda: attnlab.attention(x, wq, wk, wv, threads=THREADS,
                                                       need_weights=False, out=kept),
             "numpy": lambda: numpy_attention(x, wq, wk, wv)}
    reference = {"attnlab+maps", "attnlab out="}  # attnlab's other calls, not peers
    try:
        import torch
        import torch.nn.functional as F
        torch.set_num_threads(THREADS)
        tx, tq, tk, tv = (torch.from_numpy(a) for a in (x, wq, wk, wv))

        def torch_attention():
            with torch.no_grad():
                q, k, v = tx @ tq, tx @ tk, tx @ tv
                return q, k, v, F.scaled_dot_product_attention(q, k, v)
        peers["torch"] = torch_attention
        torch_version = torch.__version__
    except ImportError:
        torch_version = None
    names = list(peers)
    for f in peers.values():  # warm-up: first-touch of the buffers, thread pools
        f()
    # The same outputs: every peer's q, k, v and out against attnlab's.
    ref = peers["attnlab"]()
    worst = {}
    for n in names:
        if n.startswith("attnlab"):
            continue
        got = [np.asarray(a) for a in peers[n]()]
        worst[n] = max(float(np.max(np.abs(a - ref[k]) / (np.abs(ref[k]) + 1e-3)))
                       for a, k in zip(got, ("q", "k", "v", "out")))
        assert worst[n] < 1e-3, (n, worst[n])
    cpu = {n: [] for n in names}
    wall = {n: [] for n in names}
    for r in range(a.rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            c, w = timed(peers[n])
            cpu[n].append(c)
            wall[n].append(w)
    m = g.standard_normal((2048, 2048), dtype=np.float32)
    m @ m
    gemm = [timed(lambda: m @ m) for _ in range(5)]
    gemm_cpu = statistics.median(c for c, _ in gemm)
    gemm_rate = 2 * 2048.0**3 / gemm_cpu
    flops = 2.0 * (B * N * D * 3 * D + B * N * N * 2 * D)
    base = statistics.median(cpu["attnlab"])
    print(f"attention: batch {B}, n {N}, d_model = d_k = d_v = {D}, float32, {THREADS} threads; "
          f"{common.cpu_model()}, {common.isa_level()}, "
          f"load average {os.getloadavg()[0]:.2f} at the end; "
          f"numpy {np.__version__}"
          + (f", torch {torch_version}" if torch_version else ", torch not installed")
          + (f"; attnlab's kernels at ATTNLAB_CPU_LEVEL={os.environ['ATTNLAB_CPU_LEVEL']}"
             if os.environ.get("ATTNLAB_CPU_LEVEL") else "")
          + f"; {a.rounds} alternating rounds, medians")
    print("the same q, k, v and out: largest |peer - attnlab| / (|attnlab| + 1e-3): "
          + ", ".join(f"{n} {w:.1e}" for n, w in worst.items()))
    print("attnlab CPU s by round:", [round(c, 3) for c in cpu["attnlab"]])
    print(f"{'call':13} {'CPU s':>8} {'min':>8} {'wall s':>8} {'CPU s / attnlab':>16}")
    for n in names:
        c, w = statistics.median(cpu[n]), statistics.median(wall[n])
        note = "  (attnlab, for reference)" if n in reference else ""
        print(f"{n:13} {c:8.3f} {min(cpu[n]):8.3f} {w:8.3f} {c / base:16.2f}{note}")
    rate = flops / base
    print(f"attnlab: {rate / 1e9:.1f} GFLOP per CPU-second; numpy's 2048^2 SGEMM "
          f"{gemm_rate / 1e9:.1f} GFLOP per CPU-second: {100 * rate / gemm_rate:.0f}% of it")


if __name__ == "__main__":
    main()
