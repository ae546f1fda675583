#!/usr/bin/env python3
"""Speed of `demo` on the CPU as a ratio against the numpy programs a user would write instead
(bench/anchors/, copied from the project's shared anchors), measured in the same run.

Each comparison runs the anchor and demo alternately, REPEATS times each, as whole processes
(wall clock around the process), and reports medians and their ratio:
  lesson   demo --table all  vs  lesson_numpy.py dkstd 0 10000 2,64,512 + the five training runs
  dk-std   demo --table dk-std --rng philox --dk 512 --samples N  vs  dkstd_numpy.py N 512
           (normals per second; the anchor's own in-process rate is shown too)
  sweep    demo --table training-sweep --configs all-random --grad analytic --seeds 0:S
           vs  sweep_numpy.py S (model-steps per second; the anchor counts its training loop
           only, demo its whole process)
Usage: bench/compare_anchors.py [--demo build/cpu/demo] [--repeats 3] [--markdown FILE]
Needs numpy for the python3 on PATH (the anchors run with it).
"""
import argparse, os, re, shutil, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ANCHORS = os.path.join(HERE, "anchors")
LESSON = os.path.join(HERE, "..", "tests", "oracle", "lesson_numpy.py")  # also the tests' oracle
PY = shutil.which("python3") or sys.executable  # the PATH's python3, as the user runs it


def timed(cmd):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t0, out


def pairs(anchor, demo, repeats):
    """Runs anchor() and demo() alternately; returns the lists of their results."""
    a, d = [], []
    for _ in range(repeats):
        a.append(anchor())
        d.append(demo())
    return a, d


def lesson(demo, repeats):
    runs = [["dkstd", "0", "10000", "2,64,512"], ["train", "qk-identity", "0"],
            ["train", "all-identity", "0"], ["train", "all-random", "0"],
            ["train", "all-random", "1"], ["train", "qk-random", "0"]]

    def anchor():
        return sum(timed([PY, LESSON] + r)[0] for r in runs)

    def ours():
        return timed([demo, "--table", "all", "--device", "cpu", "-q"])[0]

    a, d = pairs(anchor, ours, repeats)
    ta, td = statistics.median(a), statistics.median(d)
    return ("lesson: `demo --table all` vs lesson_numpy.py dkstd + 5 train runs",
            f"{ta:.2f} s", f"{td:.3f} s", ta / td, 50)


def dkstd(demo, repeats, n):
    normals = 2 * n * 512
    own_rates = []

    def anchor():
        t, out = timed([PY, os.path.join(ANCHORS, "dkstd_numpy.py"), str(n), "512"])
        own_rates.append(float(re.search(r"normals_per_s (\S+)", out).group(1)))
        return normals / t

    def ours():
        t, _ = timed([demo, "--table", "dk-std", "--rng", "philox", "--dk", "512", "--samples",
                      str(n), "--device", "cpu", "-q", "--format", "csv"])
        return normals / t

    a, d = pairs(anchor, ours, repeats)
    ra, rd = statistics.median(a), statistics.median(d)
    return (f"dk-std: normals/s at d_k 512, N = {n} (anchor in-process: "
            f"{statistics.median(own_rates):.3g}/s)", f"{ra:.3g}/s", f"{rd:.3g}/s", rd / ra, 5)


def sweep(demo, repeats, seeds):
    steps = 3000

    def anchor():
        _, out = timed([PY, os.path.join(ANCHORS, "sweep_numpy.py"), str(seeds)])
        return float(re.search(r"model_steps_per_s (\S+)", out).group(1))

    def ours():
        t, _ = timed([demo, "--table", "training-sweep", "--configs", "all-random", "--grad",
                      "analytic", "--seeds", f"0:{seeds}", "--device", "cpu", "-q"])
        return seeds * steps / t

    a, d = pairs(anchor, ours, repeats)
    ra, rd = statistics.median(a), statistics.median(d)
    return (f"sweep: model-steps/s, all-random, analytic, {seeds} seeds x {steps} steps",
            f"{ra:.3g}/s", f"{rd:.3g}/s", rd / ra, 10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--demo", default=os.path.join(HERE, "..", "build", "cpu", "demo"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--samples", type=int, default=500000, help="dk-std N")
    ap.add_argument("--seeds", type=int, default=20000, help="sweep seeds")
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()
    rows = [lesson(args.demo, args.repeats), dkstd(args.demo, args.repeats, args.samples),
            sweep(args.demo, args.repeats, args.seeds)]
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                         capture_output=True, text=True).stdout.strip()
    lines = [f"CPU: {cpu}, {os.cpu_count()} cores; medians of {args.repeats} alternating runs",
             "", "| comparison | numpy anchor | demo | ratio | target | verdict |",
             "|---|---|---|---|---|---|"]
    ok = True
    for name, a, d, ratio, target in rows:
        ok = ok and ratio >= target
        lines.append(f"| {name} | {a} | {d} | {ratio:.1f}x | {target}x | "
                     f"{'ok' if ratio >= target else 'BELOW TARGET'} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
