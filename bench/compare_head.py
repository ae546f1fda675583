#!/usr/bin/python3
"""Speed of `demo --table attention-sweep` on the CPU against the numpy and PyTorch peers
(bench/anchors/numpy_head.py, torch_head.py, copied unchanged from the project's shared
anchors): one head, n = 8, d_model = d_k = d_v = 16, random task, the sequential schedule,
float64, batched over seeds (np.matmul / torch bmm on Debian's OpenBLAS, libopenblas0-pthread).

Rates are seed-steps per second of the training loop: the peers time their own loop (after
their start-up); demo's is its whole process (start, task, init, training, measures), so the
ratio is conservative. The peers run fewer steps (--peer-steps) since their rate per step is
flat. It also measures this machine's DGEMM rate as numpy sees it (4096 x 4096 float64
matmul, median of 3) and demo's useful GFLOP/s (head.hpp flops_per_step: 2 per multiply-add
of the products), and reports the CPU's ISA level.
Usage: bench/compare_head.py [--demo build/cpu/demo] [--seeds 10000] [--steps 1000]
                             [--peer-steps 50] [--threads N] [--markdown FILE]
"""
import argparse, os, re, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ANCHORS = os.path.join(HERE, "anchors")
PY = "/usr/bin/python3"
N, D = 8, 16


def isa_level():
    flags = open("/proc/cpuinfo").read().split("flags")[1].split("\n")[0].split()
    if "avx512f" in flags:
        return "AVX-512 (x86-64-v4)"
    if "avx2" in flags and "fma" in flags:
        return "AVX2 + FMA without AVX-512 (x86-64-v3)"
    return "SSE (x86-64 baseline)"


def dgemm_rate():
    code = ("import numpy as np, time\n"
            "a = np.random.default_rng(0).normal(size=(4096, 4096)); b = a.copy(); a @ b\n"
            "ts, cs = [], []\n"
            "for _ in range(3):\n"
            "    t, c = time.perf_counter(), time.process_time(); a @ b\n"
            "    ts.append(time.perf_counter() - t); cs.append(time.process_time() - c)\n"
            "ts.sort(); cs.sort(); print(2 * 4096**3 / ts[1] / 1e9, 2 * 4096**3 / cs[1] / 1e9)\n")
    wall, cpu = subprocess.run([PY, "-c", code], check=True, capture_output=True,
                               text=True).stdout.split()
    return float(wall), float(cpu)


def peer(script, seeds, steps):
    """(seed-steps/s of its loop, seed-steps per CPU-second of its whole process)"""
    r0 = os.times()
    out = subprocess.run([PY, os.path.join(ANCHORS, script), str(N), str(D), str(seeds),
                          str(steps)], check=True, capture_output=True, text=True).stdout
    r1 = os.times()
    cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    return float(re.search(r"seed_steps_per_s (\S+)", out).group(1)), seeds * steps / cpu


def ours(demo, seeds, steps, threads):
    cmd = [demo, "--table", "attention-sweep", "--task", "random", "--task-seed", "1",
           "--words", str(N), "--d-model", str(D), "--d-k", str(D), "--seeds", f"0:{seeds}",
           "--steps", str(steps), "--lr", "0.01", "--init-scale", "0.25", "--device", "cpu",
           "-q"]
    if threads:
        cmd += ["--threads", str(threads)]
    t0 = time.perf_counter()
    r0 = os.times()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    r1 = os.times()
    cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    gflops = float(re.search(r"([0-9.e+]+) GFLOP/s", out).group(1))
    flops = float(re.search(r"\((\d+) useful FLOPs", out).group(1))
    return seeds * steps / wall, wall, cpu, gflops, flops


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--demo", default=os.path.join(HERE, "..", "build", "cpu", "demo"))
    ap.add_argument("--seeds", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--peer-steps", type=int, default=50)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--markdown")
    a = ap.parse_args()
    rate_np, cpu_np = peer("numpy_head.py", a.seeds, a.peer_steps)
    rate_torch, cpu_torch = peer("torch_head.py", a.seeds, a.peer_steps)
    rate, wall, cpu, gflops, flops = ours(a.demo, a.seeds, a.steps, a.threads)
    dgemm, dgemm_cpu = dgemm_rate()
    best = max(rate_np, rate_torch)
    best_cpu = max(cpu_np, cpu_torch)
    ours_cpu = a.seeds * a.steps / cpu
    model = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                           capture_output=True, text=True).stdout.strip()
    lines = [
        f"CPU: {model}, {os.cpu_count()} cores, ISA: {isa_level()}; "
        f"n {N}, d {D}, {a.seeds} seeds, float64, sequential schedule",
        "",
        "| | seed-steps/s (wall) | seed-steps per CPU-second | note |",
        "|---|---|---|---|",
        f"| numpy_head.py (np.matmul, OpenBLAS) | {rate_np:.3g} | {cpu_np:.3g} | "
        f"{a.peer_steps} steps; wall: its loop only |",
        f"| torch_head.py (bmm, {os.cpu_count()} threads) | {rate_torch:.3g} | {cpu_torch:.3g} | "
        f"{a.peer_steps} steps; wall: its loop only |",
        f"| demo --table attention-sweep | {rate:.3g} | {ours_cpu:.3g} | {a.steps} steps, "
        f"whole process: {wall:.1f} s wall, {cpu:.1f} s CPU |",
        "",
        f"ratio against the faster peer: {rate / best:.1f}x by wall clock, "
        f"{ours_cpu / best_cpu:.1f}x per CPU-second (target 5x)",
        f"useful FLOPs per seed-step: {flops:.0f}; demo: {gflops:.3g} GFLOP/s by wall clock, "
        f"{ours_cpu * flops / 1e9:.3g} GFLOP per CPU-second",
        f"numpy DGEMM (4096^3): {dgemm:.3g} GFLOP/s by wall clock, {dgemm_cpu:.3g} GFLOP per "
        f"CPU-second; demo reaches {100 * gflops / dgemm:.0f}% of it by wall clock, "
        f"{100 * ours_cpu * flops / 1e9 / dgemm_cpu:.0f}% per CPU-second (target 20%)",
        f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a "
        "shared machine: the per-CPU-second figures are the comparable ones)",
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)
    return 0 if ours_cpu / best_cpu >= 5 and ours_cpu * flops / 1e9 / dgemm_cpu >= 0.2 else 1


if __name__ == "__main__":
    sys.exit(main())
