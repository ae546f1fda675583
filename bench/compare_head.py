#!/usr/bin/python3
"""Speed of `demo --table attention-sweep` on the CPU against the programs a researcher would
write instead, all doing the same task (one head, n = 8, d_model = d_k = d_v = 16, random task,
lr 0.01, init scale 0.25, the sequential schedule, float64, batched over seeds):
  numpy        bench/peers/numpy/numpy_head.py (np.matmul, Debian's OpenBLAS)
  torch 1.13   bench/peers/torch/torch_head.py (bmm, Debian's PyTorch 1.13)
  JAX          bench/peers/jax/jax_head.py (one seed's step, jax.vmap over seeds, jax.jit over a
               lax.fori_loop of the steps, float64 via jax_enable_x64; variants autodiff, hand)
  PyTorch 2    bench/peers/torch/torch2_head.py (torch.func.vmap of one seed's step, batched
               bmm, and bmm through torch.compile)
JAX and PyTorch 2 come from the virtual environment bench/setup-peers makes (build/bench-venv);
a peer that is not installed there is skipped with a note. The two anchors are run unchanged
(numpy_head.py computes the three gradients three times a step; demo and the new peers' hand
and bmm variants compute each once, recomputing only what an update changes).

Before timing, each peer variant's final losses are checked against the numpy anchor's on a
few seeds (same starting weights; relative difference at most --tolerance), and, for the demo
start (default_rng(seed) per seed), against demo's own per-seed losses.

Every contender runs with one thread (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS = 1,
XLA_FLAGS=--xla_cpu_multi_thread_eigen=false, torch.set_num_threads(1), demo --threads 1; the
torch anchor's os.cpu_count() is made to answer 1). The machine is shared and its speed drifts,
so the contenders run in turns, round after round, and the rates are per CPU-second (the
process's user + system time, all threads), median over the rounds (minimum and maximum shown):
peers and anchors over their training loop (compile or warm-up reported apart; an anchor's loop
CPU includes its weights' draw, under 2%), demo over its whole process (start, task, start
weights, training, measures: conservative). Each round also times numpy's DGEMM (4096 x 4096
float64 matmul, one thread, best of 2) per CPU-second, with the numpy of --dgemm-python (default:
the venv's, PyPI numpy and its OpenBLAS, where that imports; else Debian's); demo's useful
GFLOP per CPU-second (head.hpp flops_per_step: 2 per multiply-add of the matrix products) is
given as a fraction of it. Targets: demo >= 3x the faster of JAX and PyTorch 2, and >= 50%
of DGEMM (--target-dgemm).

--task teacher --inputs B: the planted head over B inputs instead (spec "Version 3"; the loss
and its gradient the mean over the inputs; demo also measures every seed on 64 held-out inputs,
inside its process time). The anchors train the random task's one input and are left out; JAX
and PyTorch 2 draw the teacher and the inputs from the task seed in numpy as the spec says, and
are checked against demo's per-seed losses (relative --tolerance, or absolute 1e-20 for the
seed that starts at the teacher, loss 0).
--demo-args "ARGS": more options for demo (e.g. "--adversary off": its training and the other
measures without the adversarial map's search), named in demo's row.
Exit status 1 when a target is missed, 2 when a check fails.
Usage: bench/compare_head.py [--demo build/cpu/demo] [--venv build/bench-venv] [--seeds 10000]
           [--steps 1000] [--rounds 3] [--steps-for NAME=STEPS ...] [--only NAME,...]
           [--task random|teacher] [--inputs B] [--target-dgemm 0.5] [--demo-args "ARGS"]
           [--out results/bench/FILE.txt] [--csv FILE.csv]
"""
import argparse, csv, datetime, math, os, re, shlex, statistics, subprocess, sys, tempfile, time

import common

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEERS = os.path.join(HERE, "peers")  # by library: numpy/, torch/, jax/
PY = "/usr/bin/python3"
N, D = 8, 16
ENV = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
           XLA_FLAGS="--xla_cpu_multi_thread_eigen=false", JAX_PLATFORMS="cpu",
           TF_CPP_MIN_LOG_LEVEL="2")
THREADS_NOTE = ("1 thread each: OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = MKL_NUM_THREADS = 1, "
                "XLA_FLAGS=--xla_cpu_multi_thread_eigen=false, torch.set_num_threads(1), "
                "demo --threads 1")
# Steps per contender: the full 1,000 for demo; fewer for the others, whose 10^7 seed-steps
# would take 1.5 (JAX) to 11 (torch 1.13) minutes of CPU here, several times that by the clock
# on a loaded machine, for each of several rounds. Their rate per step is flat (every step is
# the same loop), and JAX's compilation does not depend on the number of steps (the loop is
# not unrolled).
DEFAULT_STEPS = {"numpy": 30, "torch1.13": 30, "jax-autodiff": 100, "jax-hand": 100,
                 "torch2-vmap": 30, "torch2-bmm": 60, "torch2-compile": 60}


def run(cmd):
    """(stdout, CPU seconds of the child process, wall seconds)"""
    return common.run(cmd, env=ENV, cwd=ROOT)


def field(out, key):
    return float(re.search(key + r" (\S+)", out).group(1))


def losses_of(out):
    m = re.search(r"^losses (.*)$", out, re.M)
    return [float(v) for v in m.group(1).split()]


# An anchor run unchanged through runpy, with the loop's CPU time measured around it and the
# final losses computed from its globals (numpy, from the weights it leaves).
ANCHOR_WRAP = r"""
import os, resource, runpy, sys
import numpy as np
{pre}
os.cpu_count = lambda: 1
sys.argv = [{path!r}] + {argv!r}
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
c0 = cpu()
g = runpy.run_path({path!r}, run_name="__main__")
print("run_cpu_s", cpu() - c0)
if {k}:
    f = lambda a: np.asarray(a, dtype=np.float64)
    X, Y = f(g["X"]), f(g["Y"])
    Wq, Wk, Wv = f(g["Wq"]), f(g["Wk"]), f(g["Wv"])
    c = 1 / np.sqrt(X.shape[1])
    S = (X @ Wq) @ (X @ Wk).transpose(0, 2, 1) * c
    S -= S.max(-1, keepdims=True); P = np.exp(S); P /= P.sum(-1, keepdims=True)
    L = (((P @ (X @ Wv)) - Y) ** 2).sum((1, 2))
    print("losses " + " ".join(repr(float(v)) for v in L[:{k}]))
"""


class Contender:
    def __init__(self, name, label, cmd, steps, kind):
        self.name, self.label, self.cmd, self.steps, self.kind = name, label, cmd, steps, kind
        self.rates, self.whole, self.compile, self.gflops = [], [], [], []
        self.flops = None

    def once(self, seeds, steps, extra=()):
        return run(self.cmd(seeds, steps, list(extra)))


def anchor(script, torch=False):
    path = os.path.join(PEERS, script)

    def cmd(seeds, steps, extra):
        k = int(extra[1]) if extra else 0
        pre = "import torch" if torch else ""
        code = ANCHOR_WRAP.format(pre=pre, path=path, argv=[str(N), str(D), str(seeds),
                                                             str(steps)], k=k)
        return [PY, "-c", code]
    return cmd


TASK = ["--task", "random"]  # the peers' and demo's task options (main sets teacher's)
DEMO_ARGS = []  # --demo-args


def peer(python, script, variant):
    def cmd(seeds, steps, extra):
        return [python, os.path.join(PEERS, script), str(N), str(D), str(seeds), str(steps),
                "--variant", variant] + TASK + extra
    return cmd


def demo_cmd(demo):
    def cmd(seeds, steps, extra):
        c = [demo, "--table", "attention-sweep"] + TASK + ["--task-seed", "1",
             "--words", str(N), "--d-model", str(D), "--d-k", str(D), "--seeds", f"0:{seeds}",
             "--steps", str(steps), "--lr", "0.01", "--init-scale", "0.25", "--device", "cpu",
             "--threads", "1", "-q"] + DEMO_ARGS
        return c + extra
    return cmd


def venv_modules(python):
    if not os.access(python, os.X_OK):
        return {}
    code = ("import importlib\nfor m in ('jax', 'torch'):\n    try:\n"
            "        print(m, importlib.import_module(m).__version__)\n"
            "    except Exception as e:\n        print(m, 'missing', type(e).__name__)\n")
    p = subprocess.run([python, "-c", code], capture_output=True, text=True, env=ENV)
    found = {}
    for line in p.stdout.splitlines():
        name, version = line.split()[:2]
        if version != "missing":
            found[name] = version
    return found


def dgemm(python):
    code = ("import numpy as np, resource\n"
            "def cpu():\n    r = resource.getrusage(resource.RUSAGE_SELF)\n"
            "    return r.ru_utime + r.ru_stime\n"
            "a = np.random.default_rng(0).normal(size=(4096, 4096)); b = a.copy(); a @ b\n"
            "best = 0\nfor _ in range(2):\n    c = cpu(); a @ b\n"
            "    best = max(best, 2 * 4096**3 / (cpu() - c) / 1e9)\nprint(best)\n")
    return float(run([python, "-c", code])[0])


def demo_losses(demo, seeds, steps):
    with tempfile.TemporaryDirectory() as tmp:
        f = os.path.join(tmp, "seeds.csv")
        run(demo_cmd(demo)(seeds, steps, ["--per-seed", f]))
        rows = list(csv.DictReader(open(f)))
    return [float(r["loss"]) for r in rows[:seeds]]


def close(a, b, tol):
    return len(a) == len(b) and all(abs(x - y) <= max(tol * abs(y), 1e-20) for x, y in zip(a, b))


def rel(x, y):
    return abs(x - y) / abs(y) if y != 0 else abs(x - y)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--demo", default=os.path.join(ROOT, "build", "cpu", "demo"))
    ap.add_argument("--venv", help="the peers' virtual environment (default build/bench-venv, "
                    "where the peers it lacks are left out)")
    ap.add_argument("--seeds", type=common.positive_int, default=10000)
    ap.add_argument("--steps", type=common.positive_int, default=1000)
    ap.add_argument("--rounds", type=common.positive_int, default=3)
    ap.add_argument("--steps-for", action="append", default=[], metavar="NAME=STEPS")
    ap.add_argument("--only", help="comma-separated contender names")
    ap.add_argument("--check-seeds", type=common.positive_int, default=4)
    ap.add_argument("--check-steps", type=common.positive_int, default=20)
    ap.add_argument("--tolerance", type=float, default=1e-10)
    ap.add_argument("--task", choices=["random", "teacher"], default="random")
    ap.add_argument("--inputs", type=common.positive_int, default=1)
    ap.add_argument("--target-dgemm", type=float, default=0.5)
    ap.add_argument("--demo-args", default="", metavar="ARGS")
    ap.add_argument("--dgemm-python")
    ap.add_argument("--out")
    ap.add_argument("--csv")
    a = ap.parse_args()
    if a.task == "random" and a.inputs != 1:
        ap.error("--inputs B > 1 needs --task teacher")
    common.require_executable(ap, "--demo", a.demo)
    if a.dgemm_python is not None:
        common.require_executable(ap, "--dgemm-python", a.dgemm_python)
    if a.venv is None:
        a.venv = os.path.join(ROOT, "build", "bench-venv")
    elif not os.access(os.path.join(a.venv, "bin", "python"), os.X_OK):
        ap.error(f"--venv: no bin/python in {a.venv} (bench/setup-peers makes build/bench-venv)")
    DEMO_ARGS[:] = shlex.split(a.demo_args)
    TASK[:] = ["--task", a.task] + (["--inputs", str(a.inputs)] if a.task == "teacher" else [])
    steps_for = dict(DEFAULT_STEPS)
    for s in a.steps_for:
        k, _, v = s.partition("=")
        if k not in DEFAULT_STEPS or not v.isdigit() or int(v) < 1:
            ap.error(f"--steps-for: expected NAME=STEPS with NAME one of "
                     f"{', '.join(DEFAULT_STEPS)} and STEPS >= 1, got {s!r}")
        steps_for[k] = int(v)

    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    say(f"{datetime.datetime.now():%Y-%m-%d %H:%M}; CPU: {common.cpu_model()}, "
        f"{os.cpu_count()} cores, "
        f"ISA level {common.isa_level()}")
    task = "random task" if a.task == "random" else f"teacher task, {a.inputs} inputs"
    say(f"task: n {N}, d_model = d_k = d_v = {D}, {task}, task seed 1, {a.seeds} seeds, float64, "
        "sequential schedule, lr 0.01, init scale 0.25")
    say(f"threads: {THREADS_NOTE}")

    python = os.path.join(a.venv, "bin", "python")
    mods = venv_modules(python)
    dgemm_python = a.dgemm_python
    if dgemm_python is None:
        dgemm_python = python if os.access(python, os.X_OK) and subprocess.run(
            [python, "-c", "import numpy"], env=ENV, capture_output=True).returncode == 0 else PY
    dgemm_numpy = subprocess.run([dgemm_python, "-c", "import numpy; print(numpy.__version__)"],
                       env=ENV, capture_output=True, text=True).stdout.strip()
    say(f"DGEMM: numpy {dgemm_numpy} of {dgemm_python}")
    demo = os.path.abspath(a.demo)
    cs = [Contender("demo", " ".join(["demo --table attention-sweep"] + DEMO_ARGS),
                    demo_cmd(demo), a.steps, "demo"),
          Contender("numpy", "numpy_head.py (np.matmul, Debian OpenBLAS)",
                    anchor("numpy/numpy_head.py"), 0, "anchor"),
          Contender("torch1.13", "torch_head.py (bmm, Debian torch 1.13)",
                    anchor("torch/torch_head.py", torch=True), 0, "anchor")]
    if "jax" in mods:
        for v in ("autodiff", "hand"):
            cs.append(Contender(f"jax-{v}", f"jax_head.py {v} (JAX {mods['jax']}, vmap + jit "
                                f"+ fori_loop)", peer(python, "jax/jax_head.py", v), 0, "peer"))
    else:
        say(f"skipped: JAX (not importable from {python}; run bench/setup-peers)")
    if "torch" in mods and int(mods["torch"].split(".")[0]) >= 2:
        for v in ("vmap", "bmm", "compile"):
            cs.append(Contender(f"torch2-{v}", f"torch2_head.py {v} (PyTorch {mods['torch']})",
                                peer(python, "torch/torch2_head.py", v), 0, "peer"))
    else:
        say(f"skipped: PyTorch 2 (not importable from {python}; run bench/setup-peers)")
    if a.task != "random":
        cs = [c for c in cs if c.kind != "anchor"]
    if a.only:
        keep = a.only.split(",")
        unknown = [k for k in keep if k not in [c.name for c in cs]]
        if unknown:
            ap.error(f"--only: no contender {', '.join(unknown)} here (these: "
                     f"{', '.join(c.name for c in cs)})")
        cs = [c for c in cs if c.name in keep]
    for c in cs:
        if c.kind != "demo":
            c.steps = steps_for.get(c.name, a.steps)

    # Correctness: the same final losses as the numpy anchor (its start) and as demo (demo's).
    k, st = a.check_seeds, a.check_steps
    ref_anchor = None
    if a.task == "random":
        ref_anchor = losses_of(run(anchor("numpy/numpy_head.py")(k, st,
                                                           ["--print-losses", str(k)]))[0])
    ref_demo = demo_losses(demo, k, st) if any(c.name == "demo" for c in cs) else None
    failed = []
    for c in cs:
        if c.kind != "peer":
            continue
        ok, note = True, f"check {c.name}: {k} seeds x {st} steps"
        if ref_anchor is not None:
            got_a = losses_of(c.once(k, st, ["--init", "anchor", "--print-losses", str(k)])[0])
            ok = close(got_a, ref_anchor, a.tolerance)
            err = max(rel(x, y) for x, y in zip(got_a, ref_anchor))
            note += f", numpy anchor's start: max rel diff {err:.1e}"
        if ref_demo is not None:
            got_d = losses_of(c.once(k, st, ["--init", "demo", "--print-losses", str(k)])[0])
            ok = ok and close(got_d, ref_demo, a.tolerance)
            err_d = max(rel(x, y) for x, y in zip(got_d, ref_demo))
            note += f"; demo's start, against demo's per-seed losses: {err_d:.1e}"
        say(note + ("" if ok else f"  FAILED (tolerance {a.tolerance:g})"))
        if not ok:
            failed.append(c.name)
    cs = [c for c in cs if c.name not in failed]

    # Timing: the contenders in turns, round after round, DGEMM once a round.
    dgemms, rows = [], []
    for r in range(a.rounds):
        order = cs if r % 2 == 0 else cs[::-1]
        for c in order:
            out, cpu, wall = c.once(a.seeds, c.steps)
            ss = a.seeds * c.steps
            if c.kind == "demo":
                run_cpu, comp = cpu, 0.0
                c.gflops.append(float(re.search(r"([0-9.e+]+) GFLOP/s", out).group(1)))
                c.flops = float(re.search(r"\((\d+) useful FLOPs", out).group(1))
            elif c.kind == "anchor":
                run_cpu, comp = field(out, "run_cpu_s"), 0.0
            else:
                run_cpu, comp = field(out, "run_cpu_s"), field(out, "compile_cpu_s")
            c.rates.append(ss / run_cpu)
            c.whole.append(cpu)
            c.compile.append(comp)
            rows.append(dict(round=r, name=c.name, steps=c.steps, seeds=a.seeds,
                             run_cpu_s=f"{run_cpu:.3f}", process_cpu_s=f"{cpu:.3f}",
                             process_wall_s=f"{wall:.3f}", compile_cpu_s=f"{comp:.3f}",
                             seed_steps_per_cpu_s=f"{ss / run_cpu:.4e}",
                             load=f"{os.getloadavg()[0]:.2f}"))
            print(f"  round {r + 1}: {c.name:15s} {ss / run_cpu:10.4g} seed-steps/CPU-s "
                  f"({run_cpu:.1f} s CPU, {wall:.1f} s wall, load {os.getloadavg()[0]:.1f})",
                  flush=True)
        g = dgemm(dgemm_python)
        dgemms.append(g)
        rows.append(dict(round=r, name="dgemm", gflop_per_cpu_s=f"{g:.3f}",
                         load=f"{os.getloadavg()[0]:.2f}"))
        print(f"  round {r + 1}: DGEMM 4096^3 {g:.3g} GFLOP per CPU-second", flush=True)

    med = {c.name: statistics.median(c.rates) for c in cs}
    say()
    say(f"seed-steps per CPU-second, median of {a.rounds} rounds (min - max); peers: their "
        "training loop, compile/warm-up apart; demo: its whole process")
    say()
    say("| contender | steps | seed-steps per CPU-second | min - max | compile or warm-up, "
        "CPU s | whole process, CPU s |")
    say("|---|---|---|---|---|---|")
    for c in cs:
        say(f"| {c.label} | {c.steps} | {med[c.name]:.3g} | {min(c.rates):.3g} - "
            f"{max(c.rates):.3g} | {statistics.median(c.compile):.2f} | "
            f"{statistics.median(c.whole):.1f} |")
    say()
    missed = False
    if "demo" in med:
        d = med["demo"]
        best = {}
        for fam in ("jax", "torch2"):
            got = [(med[c.name], c.name) for c in cs if c.name.startswith(fam + "-")]
            if got:
                best[fam] = max(got)
                say(f"demo / {fam} (its fastest variant, {best[fam][1]}): {d / best[fam][0]:.2f}x")
        for name in ("numpy", "torch1.13"):
            if name in med:
                say(f"demo / {name}: {d / med[name]:.1f}x")
        if best:
            top = max(best.values())
            ratio = d / top[0]
            missed |= ratio < 3
            say(f"demo / the faster of JAX and PyTorch 2 ({top[1]}): {ratio:.2f}x (target 3x: "
                f"{'met' if ratio >= 3 else 'MISSED'})")
        c = next(c for c in cs if c.name == "demo")
        gf = d * c.flops / 1e9
        dg = statistics.median(dgemms)
        frac = gf / dg
        goal = a.target_dgemm
        missed |= frac < goal
        say(f"useful FLOPs per seed-step {c.flops:.0f}: demo {gf:.3g} GFLOP per CPU-second; "
            f"numpy {dgemm_numpy} DGEMM (4096^3, 1 thread) {dg:.3g} GFLOP per CPU-second (median; rounds "
            f"{', '.join(f'{g:.3g}' for g in dgemms)}); demo at {100 * frac:.0f}% of it "
            f"(target {100 * goal:.0f}%: {'met' if frac >= goal else 'MISSED'})")
    say(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    if a.csv:
        keys = ["round", "name", "steps", "seeds", "run_cpu_s", "process_cpu_s",
                "process_wall_s", "compile_cpu_s", "seed_steps_per_cpu_s", "gflop_per_cpu_s",
                "load"]
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)
    return 2 if failed else 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
