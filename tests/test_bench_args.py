#!/usr/bin/env python3
"""The bench scripts' refusals (ctest Bench.BadArgumentsAreRefused, label `cpu`): each bad
argument ends the script before any work with a non-zero status and one line naming it, never
a traceback. Run with a Python that has numpy (this one, else Debian's /usr/bin/python3);
skipped (status 77) where neither has.
"""
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BENCH = os.path.join(ROOT, "bench")


def has_numpy(python):
    return os.access(python, os.X_OK) and subprocess.run(
        [python, "-c", "import numpy"], capture_output=True).returncode == 0


python = next((p for p in (sys.executable, "/usr/bin/python3") if has_numpy(p)), None)
if python is None:
    print("skipped: no Python with numpy")
    sys.exit(77)

PEER_ARGS = ("import sys; sys.path.insert(0, {!r}); import common; sys.argv = ['peer'] + {!r}; "
             "common.args('a peer', ['v'])")
CASES = [
    (["compare_head.py", "--demo", "/bin/true", "--venv", "/nonexistent"],
     "--venv: no bin/python in /nonexistent"),
    (["compare_head.py", "--demo", "/nonexistent"], "--demo: no executable at /nonexistent"),
    (["compare_head.py", "--demo", "/bin/true", "--dgemm-python", "/nonexistent"],
     "--dgemm-python: no executable at /nonexistent"),
    (["compare_head.py", "--demo", "/bin/true", "--seeds", "0"],
     "argument --seeds: expected an integer >= 1, got '0'"),
    (["compare_head.py", "--demo", "/bin/true", "--steps", "x"],
     "argument --steps: expected an integer >= 1, got 'x'"),
    (["compare_head.py", "--demo", "/bin/true", "--steps-for", "numpy=0"],
     "--steps-for: expected NAME=STEPS"),
    (["compare_head.py", "--demo", "/bin/true", "--steps-for", "nobody=5"],
     "--steps-for: expected NAME=STEPS"),
    (["compare_head.py", "--demo", "/bin/true", "--only", "nobody"],
     "--only: no contender nobody here"),
    (["compare_anchors.py", "--demo", "/nonexistent"], "--demo: no executable at /nonexistent"),
    (["compare_anchors.py", "--demo", "/bin/true", "--samples", "-5"],
     "argument --samples: expected an integer >= 1"),
    (["attention_vs_torch.py", "--demo", "/nonexistent"], "--demo: no executable at /nonexistent"),
    (["attention_vs_torch.py", "--demo", "/bin/true", "--batch", "0"],
     "argument --batch: expected an integer >= 1, got '0'"),
    (["python_attention.py", "--rounds", "0"], "argument --rounds: expected an integer >= 1"),
    (["python_attention.py", "--rounds", "1"], "has no attnlab"),  # PYTHONPATH cleared below
    (["-c", PEER_ARGS.format(BENCH, ["0", "16", "4", "4"])],
     "argument n: expected an integer >= 1, got '0'"),
    (["-c", PEER_ARGS.format(BENCH, ["8", "16", "4", "4", "--inputs", "0"])],
     "argument --inputs: expected an integer >= 1, got '0'"),
    (["-c", "import sys; sys.modules['numpy'] = None; sys.path.insert(0, {!r}); "
            "import common".format(BENCH)], "has no numpy"),
]

failed = 0
for args, says in CASES:
    cmd = [python] + ([os.path.join(BENCH, args[0])] + args[1:] if args[0] != "-c" else args)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # no attnlab importable
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    last = lines[-1] if lines else ""
    why = None
    if r.returncode == 0:
        why = "exit status 0"
    elif "Traceback" in r.stderr:
        why = "a traceback"
    elif says not in last:
        why = f"last line {last!r}"
    elif r.stdout.strip() and args[0] not in ("compare_head.py",):
        why = f"output on stdout: {r.stdout[:200]!r}"
    if why:
        failed += 1
        print(f"FAIL {' '.join(args)[:100]}: {why}; expected {says!r}\n{r.stderr[-600:]}")
print(f"{len(CASES) - failed}/{len(CASES)} bad arguments refused with one line")
sys.exit(1 if failed else 0)
