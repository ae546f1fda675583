"""attnlab.attention against numpy (OpenBLAS) and PyTorch on one batch, per CPU-second.

The problem: batch 4096, n = 128, d_model = d_k = d_v = 64, float32, weights shared, 2 threads
for every peer. Each peer computes q, k, v, the scores, the softmax and the outputs:
  attnlab  attnlab.attention(x, w_q, w_k, w_v, threads=2) (keeps scores and weights too)
  numpy    one (batch n, d_model) x (d_model, d) matmul per projection, batched matmul for
           the scores and the outputs, a stable softmax (max subtracted)
  torch    torch.matmul projections and torch.nn.functional.scaled_dot_product_attention
Rounds alternate the peers (the order rotates each round). In a round each peer runs twice, back
to back, after a pause that lets the thread pools of the peer before it (OpenBLAS, OpenMP) stop
spinning, so that none is charged another's idle threads; the second call is timed, in process
CPU seconds (all threads) and wall seconds, so that its outputs land in memory the first one just
freed: on a virtual machine that hands freed memory back to its host, memory fresh from the host
costs each peer a multiple of its computation in page faults, in proportion to what it allocates
(docs/PERFORMANCE.md). The median over rounds is reported, with each peer's time over attnlab's. The SGEMM line is numpy's 2048 x 2048 float32 matmul on the same
2 threads: the rate attnlab's 2 (B n d_model (2 d_k + d_v) + B n^2 (d_k + d_v)) FLOP per
CPU-second is compared with. A peer that is not installed is skipped.

    OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 PYTHONPATH=build/python/python \\
        build/bench-venv/bin/python bench/python_attention.py [--rounds 7]
"""

import argparse
import os
import platform
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402

import attnlab  # noqa: E402

B, N, D = 4096, 128, 64
THREADS = 2


def isa_level():
    flags = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = line
                break
    if " avx512f" in flags and " avx512bw" in flags:
        return "x86-64-v4 (AVX-512)"
    if " avx2" in flags and " fma" in flags:
        return "x86-64-v3 (AVX2)"
    return "x86-64 (baseline)"


def timed(f):
    time.sleep(0.2)
    f()
    c0, w0 = time.process_time(), time.perf_counter()
    f()
    return time.process_time() - c0, time.perf_counter() - w0


def numpy_attention(x, wq, wk, wv):
    flat = x.reshape(-1, D)
    q, k, v = ((flat @ w).reshape(B, N, D) for w in (wq, wk, wv))
    s = (q @ k.transpose(0, 2, 1)) * np.float32(1 / np.sqrt(D))
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s @ v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    g = np.random.default_rng(0)
    x = g.standard_normal((B, N, D), dtype=np.float32)
    wq, wk, wv = (g.standard_normal((D, D), dtype=np.float32) / 8 for _ in range(3))
    peers = {"attnlab": lambda: attnlab.attention(x, wq, wk, wv, threads=THREADS),
             "numpy": lambda: numpy_attention(x, wq, wk, wv)}
    try:
        import torch
        import torch.nn.functional as F
        torch.set_num_threads(THREADS)
        tx, tq, tk, tv = (torch.from_numpy(a) for a in (x, wq, wk, wv))

        def torch_attention():
            with torch.no_grad():
                return F.scaled_dot_product_attention(tx @ tq, tx @ tk, tx @ tv)
        peers["torch"] = torch_attention
        torch_version = torch.__version__
    except ImportError:
        torch_version = None
    names = list(peers)
    for f in peers.values():  # warm-up: first-touch of the buffers, thread pools
        f()
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
          f"{platform.processor() or platform.machine()}, {isa_level()}; numpy {np.__version__}"
          + (f", torch {torch_version}" if torch_version else ", torch not installed")
          + (f"; attnlab's kernels at ATTNLAB_CPU_LEVEL={os.environ['ATTNLAB_CPU_LEVEL']}"
             if os.environ.get("ATTNLAB_CPU_LEVEL") else "")
          + f"; {a.rounds} alternating rounds, medians")
    print("attnlab CPU s by round:", [round(c, 3) for c in cpu["attnlab"]])
    print(f"{'peer':8} {'CPU s':>8} {'wall s':>8} {'CPU s / attnlab':>16}")
    for n in names:
        c, w = statistics.median(cpu[n]), statistics.median(wall[n])
        print(f"{n:8} {c:8.3f} {w:8.3f} {c / base:16.2f}")
    rate = flops / base
    print(f"attnlab: {rate / 1e9:.1f} GFLOP per CPU-second; numpy's 2048^2 SGEMM "
          f"{gemm_rate / 1e9:.1f} GFLOP per CPU-second: {100 * rate / gemm_rate:.0f}% of it")


if __name__ == "__main__":
    main()
