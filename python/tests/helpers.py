"""What the Python tests share: demo built beside the module (ATTNLAB_DEMO, set by ctest), a
Python of the same interpreter in a subprocess, and bit-for-bit comparison."""

import os
import subprocess
import sys
import textwrap

import numpy as np

DEMO = os.environ.get("ATTNLAB_DEMO") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "cpu", "demo")


def demo(*args, check=True, **kwargs):
    r = subprocess.run([DEMO, *map(str, args)], capture_output=True, text=True, **kwargs)
    if check and r.returncode != 0:
        raise AssertionError(f"demo {' '.join(map(str, args))}: {r.returncode} {r.stderr}")
    return r


def demo_error(*args, **kwargs):
    """demo's one-line refusal of a request (exit 2), without its "demo ...: error: " prefix."""
    r = demo(*args, check=False, **kwargs)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0].split(": error: ", 1)[1]


def run_python(code, timeout=600, **kwargs):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, **kwargs)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def write_inputs(tmp_path, arrays):
    paths = {}
    for name, a in arrays.items():
        paths[name] = tmp_path / f"{name}.npy"
        np.save(paths[name], a)
    return paths
