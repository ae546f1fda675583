#!/usr/bin/python3
"""Make tests/data/training_numpy.json: the lesson's training runs, computed by numpy, for seeds
beyond 0 and 1 (every seed's result must equal numpy's to 1e-9).

- numeric: tests/oracle/lesson_numpy.py (the lesson's own procedure: central differences,
  h = 1e-5, the sequential W_Q, W_K, W_V schedule), run as a program.
- analytic: the same forward and schedule with the analytic gradient, written here in numpy.

Usage: tools/make_training_data.py > tests/data/training_numpy.json   (needs python3-numpy)
"""
import json, os, subprocess, sys
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, "..", "tests", "oracle", "lesson_numpy.py")
SEEDS = [2, 3, 5, 17, 123, 4096, 99999, 4294967303]
STEPS = 3000

def numeric(config, seed):
    out = subprocess.check_output(["/usr/bin/python3", ORACLE, "train", config, str(seed)], text=True)
    return [float(v) for v in out.split()]

X = np.eye(2)
T = np.array([1.0, 0.0])

def forward(W):
    wq, wk, wv = W
    q = X[1] @ wq
    s = (X @ wk) @ q / np.sqrt(2.0)
    e = np.exp(s - s.max())
    a = e / e.sum()
    return q, a, a @ (X @ wv)

def analytic_grad(W, i):
    wq, wk, wv = W
    q, a, out = forward(W)
    dout = 2 * (out - T)
    da = wv @ dout
    ds = a * (da - a @ da) / np.sqrt(2.0)
    if i == 0:
        g = np.zeros((2, 2)); g[1] = ds @ wk
    elif i == 1:
        g = np.outer(ds, q)
    else:
        g = np.outer(a, dout)
    return g

def analytic(config, seed):
    g = np.random.default_rng(seed)
    W = [g.normal(size=(2, 2)) for _ in range(3)]
    if config == "qk-random":
        W[2] = np.eye(2)
    trained = [0, 1] if config.startswith("qk") else [0, 1, 2]
    for _ in range(STEPS):
        for i in trained:
            W[i] = W[i] - 0.5 * analytic_grad(W, i)
    q, a, out = forward(W)
    return [float(a[0]), float(out[0]), float(out[1]), float(((out - T) ** 2).sum())]

rows = []
for config in ("all-random", "qk-random"):
    for seed in SEEDS:
        rows.append({"config": config, "seed": seed, "grad": "numeric",
                     "result": numeric(config, seed)})
        rows.append({"config": config, "seed": seed, "grad": "analytic",
                     "result": analytic(config, seed)})
        print(config, seed, file=sys.stderr)
json.dump({"source": f"numpy {np.__version__}, tools/make_training_data.py",
           "steps": STEPS, "lr": 0.5, "h": 1e-5, "schedule": "sequential",
           "fields": ["weight_on_apple", "out_x", "out_y", "loss"], "runs": rows},
          sys.stdout, indent=1)
print()
