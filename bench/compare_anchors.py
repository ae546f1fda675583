#!/usr/bin/python3
"""Speed of `demo` on the CPU as a ratio against the numpy and PyTorch programs a user would write
instead (bench/peers/, copied from the project's shared anchors), measured in the same run.

Each comparison runs the anchor and demo alternately, REPEATS times each, as whole processes
(wall clock around the process), and reports medians and their ratio:
  lesson   demo --table all  vs  lesson_numpy.py dk-std 0 10000 2,64,512 + the five training runs
  dk-std   demo --table dk-std --rng philox --d-k 512 --samples N  vs  dk_std_numpy.py N 512
           (normals per second; the anchor's own in-process rate is shown too)
  sweep    demo --table training-sweep --configs all-random --grad analytic --seeds 0:S
           vs  sweep_numpy.py S (model-steps per second; the anchor counts its training loop
           only, demo its whole process)
  numpy    demo --table dk-std --rng numpy (the lesson's stream, decoded in parallel) with
           --threads 2 against --threads 1 (normals per second)
PyTorch (Debian's python3-torch, bench/peers/torch/torch_cpu.py) is a second peer for dk-std and the
sweep; where it is missing its rows say so and are skipped. The peers run with an optimized BLAS:
Debian's libopenblas0-pthread is required (numpy and torch pick it up through libblas.so.3), and
the report names the BLAS library each peer loaded (and OpenBLAS's kernel, via threadpoolctl when
python3-threadpoolctl is installed). OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which some machines
set to work around old OpenBLAS builds, are unset for the peers (they slow a current one).
--cpu-level x86-64-v3 runs demo's AVX2 code on an AVX-512 machine (ATTNLAB_CPU_LEVEL).
Usage: bench/compare_anchors.py [--demo build/cpu/demo] [--repeats 3] [--markdown FILE]
                                [--cpu-level x86-64-v3]
Run it with a python3 that has numpy (and torch): Debian's /usr/bin/python3 after the README's
install step; the anchors run with the same interpreter.
"""
import argparse, os, re, statistics, subprocess, sys

import common

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "peers")  # by library: numpy/, torch/, jax/
LESSON = os.path.join(HERE, "..", "tests", "oracle", "lesson_numpy.py")  # also the tests' oracle
PY = sys.executable  # the peers run with the interpreter that runs this script


TORCH = os.path.join(PEERS, "torch", "torch_cpu.py")
PEER_ENV = {k: v for k, v in os.environ.items()
            if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
DEMO_ENV = dict(os.environ)


CPU_SECONDS = []  # CPU time (user + system) of each timed process, in order


def timed(cmd, env=None):
    """Wall-clock seconds around the process, and its stdout; its CPU seconds go to CPU_SECONDS
    (on a shared machine the CPU time says what the work cost when wall clocks wait for cores)."""
    out, cpu, t = common.run(cmd, env=env if env is not None else PEER_ENV)
    CPU_SECONDS.append(cpu)
    return t, out


def demo_timed(cmd):
    return timed(cmd, DEMO_ENV)


def have_torch():
    return subprocess.run([PY, "-c", "import torch"], capture_output=True,
                          env=PEER_ENV).returncode == 0


BLAS_PROBE = """
import os, sys
{imp}
{work}
libs = sorted({{os.path.realpath(l.split()[-1]) for l in open('/proc/self/maps')
               if 'blas' in l.lower() and l.split()[-1].startswith('/')}})
kernel = ''
try:
    import threadpoolctl
    kernel = ', '.join(f"{{i.get('internal_api')}} {{i.get('version')}} {{i.get('architecture')}} "
                       f"{{i.get('num_threads')}} threads" for i in threadpoolctl.threadpool_info()
                       if i.get('user_api') == 'blas')
except ImportError:
    kernel = 'threadpoolctl not installed'
print(' '.join(libs) + ' | ' + kernel)
"""


def blas_used(peer):
    """The BLAS library the peer's process loaded (and OpenBLAS's kernel)."""
    imp, work = {"numpy": ("import numpy as np", "np.ones((64, 64)) @ np.ones((64, 64))"),
                 "torch": ("import torch", "torch.ones(64, 64, dtype=torch.float64) @ "
                           "torch.ones(64, 64, dtype=torch.float64)")}[peer]
    r = subprocess.run([PY, "-c", BLAS_PROBE.format(imp=imp, work=work)], capture_output=True,
                       text=True, env=PEER_ENV)
    return r.stdout.strip() if r.returncode == 0 else f"unknown ({r.stderr.strip()[-200:]})"


def require_openblas():
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "libopenblas0-pthread"],
                       capture_output=True, text=True)
    if "install ok installed" not in r.stdout:
        sys.exit("compare_anchors: the peers need an optimized BLAS: "
                 "apt-get install libopenblas0-pthread (or scripts/install-deps)")


CPU_RATIOS = []  # per comparison: median CPU seconds of the peer's runs / demo's


def pairs(anchor, demo, repeats):
    """Runs anchor() and demo() alternately; returns the lists of their results and records the
    ratio of their median CPU times (per run: each runs the same work every time)."""
    a, d, ca, cd = [], [], [], []
    for _ in range(repeats):
        n = len(CPU_SECONDS)
        a.append(anchor())
        ca.append(sum(CPU_SECONDS[n:]))
        n = len(CPU_SECONDS)
        d.append(demo())
        cd.append(sum(CPU_SECONDS[n:]))
    CPU_RATIOS.append(statistics.median(ca) / max(statistics.median(cd), 1e-9))
    return a, d


def lesson(demo, repeats):
    runs = [["dk-std", "0", "10000", "2,64,512"], ["train", "qk-identity", "0"],
            ["train", "all-identity", "0"], ["train", "all-random", "0"],
            ["train", "all-random", "1"], ["train", "qk-random", "0"]]

    def anchor():
        return sum(timed([PY, LESSON] + r)[0] for r in runs)

    def ours():
        return demo_timed([demo, "--table", "all", "--device", "cpu", "-q"])[0]

    a, d = pairs(anchor, ours, repeats)
    ta, td = statistics.median(a), statistics.median(d)
    return ("lesson: `demo --table all` vs lesson_numpy.py dk-std + 5 train runs",
            f"{ta:.2f} s", f"{td:.3f} s", ta / td, 200)


def dk_std(demo, repeats, n, torch):
    normals = 2 * n * 512
    own = {"numpy": [], "torch": []}

    def numpy_anchor():
        t, out = timed([PY, os.path.join(PEERS, "numpy", "dk_std_numpy.py"), str(n), "512"])
        own["numpy"].append(float(re.search(r"normals_per_s (\S+)", out).group(1)))
        return normals / t

    def torch_anchor():
        t, out = timed([PY, TORCH, "dk-std", str(n), "512"])
        own["torch"].append(float(re.search(r"normals_per_s (\S+)", out).group(1)))
        return normals / t

    def ours():
        t, _ = demo_timed([demo, "--table", "dk-std", "--rng", "philox", "--d-k", "512",
                           "--samples", str(n), "--device", "cpu", "-q", "--format", "csv"])
        return normals / t

    rows = []
    peers = [("numpy", numpy_anchor, 7)] + ([("PyTorch", torch_anchor, 3.5)] if torch else [])
    for name, anchor, target in peers:
        a, d = pairs(anchor, ours, repeats)
        ra, rd = statistics.median(a), statistics.median(d)
        key = "numpy" if name == "numpy" else "torch"
        rows.append((f"dk-std vs {name}: normals/s at d_k 512, N = {n} --rng philox (peer "
                     f"in-process: {statistics.median(own[key]):.3g}/s)",
                     f"{ra:.3g}/s", f"{rd:.3g}/s", rd / ra, target))
    return rows


def numpy_stream(demo, repeats, n):
    normals = 2 * n * 512

    def run(threads):
        def f():
            t, _ = demo_timed([demo, "--table", "dk-std", "--rng", "numpy", "--d-k", "512",
                               "--samples", str(n), "--device", "cpu", "-q", "--format", "csv",
                               "--threads", str(threads)])
            return normals / t
        return f

    a, d = pairs(run(1), run(2), repeats)
    ra, rd = statistics.median(a), statistics.median(d)
    return [(f"dk-std --rng numpy (the lesson's stream), normals/s at d_k 512, N = {n}: "
             f"2 threads vs 1", f"{ra:.3g}/s (1 thread)", f"{rd:.3g}/s", rd / ra, 1.8)]


def sweep(demo, repeats, seeds, torch):
    steps = 3000

    def numpy_anchor():
        _, out = timed([PY, os.path.join(PEERS, "numpy", "sweep_numpy.py"), str(seeds)])
        return float(re.search(r"model_steps_per_s (\S+)", out).group(1))

    def torch_anchor():
        _, out = timed([PY, TORCH, "sweep", str(seeds)])
        return float(re.search(r"model_steps_per_s (\S+)", out).group(1))

    def ours():
        t, _ = demo_timed([demo, "--table", "training-sweep", "--configs", "all-random", "--grad",
                           "analytic", "--seeds", f"0:{seeds}", "--device", "cpu", "-q"])
        return seeds * steps / t

    rows = []
    peers = [("numpy", numpy_anchor, 20)] + ([("PyTorch", torch_anchor, 12)] if torch else [])
    for name, anchor, target in peers:
        a, d = pairs(anchor, ours, repeats)
        ra, rd = statistics.median(a), statistics.median(d)
        rows.append((f"sweep vs {name}: model-steps/s, all-random, analytic, {seeds} seeds x "
                     f"{steps} steps (peer: training loop only)", f"{ra:.3g}/s", f"{rd:.3g}/s",
                     rd / ra, target))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--demo", default=os.path.join(HERE, "..", "build", "cpu", "demo"))
    ap.add_argument("--repeats", type=common.positive_int, default=3)
    ap.add_argument("--samples", type=common.positive_int, default=500000, help="dk-std N")
    ap.add_argument("--numpy-samples", type=common.positive_int, default=100000, help="dk-std --rng numpy N")
    ap.add_argument("--seeds", type=common.positive_int, default=20000, help="sweep seeds")
    ap.add_argument("--cpu-level", choices=["x86-64", "x86-64-v3", "x86-64-v4"],
                    help="run demo at this x86-64 level (ATTNLAB_CPU_LEVEL; never above the CPU's)")
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()
    common.require_executable(ap, "--demo", args.demo)
    require_openblas()
    if args.cpu_level:
        DEMO_ENV["ATTNLAB_CPU_LEVEL"] = args.cpu_level
    torch = have_torch()
    rows = []
    for measure in (lambda: [lesson(args.demo, args.repeats)],
                    lambda: dk_std(args.demo, args.repeats, args.samples, torch),
                    lambda: numpy_stream(args.demo, args.repeats, args.numpy_samples),
                    lambda: sweep(args.demo, args.repeats, args.seeds, torch)):
        new_rows = measure()
        for r in new_rows:  # progress on stderr: a long run on a busy machine shows each row
            print(f"compare_anchors: {r[0]}: {r[1]} vs {r[2]}, {r[3]:.1f}x", file=sys.stderr)
        rows += new_rows
    cpu = common.cpu_model()
    load = os.getloadavg()
    lines = [f"CPU: {cpu}, {os.cpu_count()} cores, ISA level {common.isa_level()}; demo ran at "
             f"{args.cpu_level or 'the best level the CPU has'}",
             f"Medians of {args.repeats} alternating runs, whole processes; load average at the "
             f"end {load[0]:.1f} (a shared machine: other jobs ran beside these)",
             f"BLAS: numpy {blas_used('numpy')}",
             f"BLAS: PyTorch {blas_used('torch') if torch else '(python3-torch is not installed: its rows are skipped)'}",
             "The ratio is of wall clocks (the target's measure); the CPU-time ratio divides the "
             "CPU seconds the peer's process used by demo's (for the thread row: 1 thread's by 2's).",
             "", "| comparison | peer | demo | ratio | target | verdict | CPU-time ratio |",
             "|---|---|---|---|---|---|---|"]
    ok = True
    for (name, a, d, ratio, target), cpu_ratio in zip(rows, CPU_RATIOS):
        ok = ok and ratio >= target
        lines.append(f"| {name} | {a} | {d} | {ratio:.1f}x | {target}x | "
                     f"{'ok' if ratio >= target else 'BELOW TARGET'} | {cpu_ratio:.1f}x |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
