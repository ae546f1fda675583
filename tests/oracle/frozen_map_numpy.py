#!/usr/bin/python3
"""Frozen maps (`demo --table attention-sweep --map uniform|known`) against numpy.

With every head's map fixed, the output on an input is F = concat_h(P_h X W_V,h) (then W_O),
linear in W_V, and training is plain gradient descent on W_V (and W_O) alone. This script writes
that from docs/spec/VARIABILITY.md (version 3, "Frozen maps", "Tasks over many inputs") in numpy
float64, none of the project's code: the task's inputs from numpy default_rng(--task-seed), each
seed's start from default_rng(seed), the fixed maps (uniform: 1/k on the k keys a query sees;
known: M*'s one-hot rows, or the teacher's map of head h for head h), SGD steps on W_V then W_O
(sequential) or both at the same weights (simultaneous). For each configuration it runs demo
with --per-seed FILE.npy and checks every seed: the final, starting and test losses and the final
W_V (W_O) to 1e-9 (relative to the loss, absolute for the weights; 1e-7 with --grad numeric,
whose central differences of this quadratic loss round at eps L / h), W_Q and W_K equal to their
starting draws bit for bit, and the measured maps equal to the frozen map (bit for bit; the
teacher's maps, a softmax rounded its own way here and in demo, to 1e-12).

Exit status 0 when every seed agrees, 1 when one does not, 77 without numpy (ctest: skipped).

Usage: frozen_map_numpy.py DEMO
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:  # ctest reads 77 as skipped
    print("numpy is missing: skipped")
    sys.exit(77)

# (demo's options, the numeric gradient's looser tolerance): every task that has a known map,
# the uniform map with and without a causal mask, one input or many (held out or not), 1 or 2
# heads, qkv and qkvo, both schedules, both gradients.
CONFIGS = [
    dict(task="previous", words=5, d_model=5, d_k=4, causal="on", map="uniform", steps=60),
    dict(task="previous", words=4, vocab=3, d_model=7, d_k=2, inputs=3, test_inputs=2,
         map="known", train="qkvo", schedule="simultaneous", lr=0.05, init_scale=0.5, steps=40),
    dict(task="teacher", words=4, d_model=4, d_k=4, heads=2, inputs=3, test_inputs=2,
         causal="on", map="known", lr=0.05, steps=30),
    dict(task="teacher", words=3, d_model=4, d_k=2, d_v=2, map="known", train="qkvo",
         scale="none", lr=0.05, steps=30),
    dict(task="random", words=5, d_model=6, d_k=4, d_v=4, heads=2, inputs=2, map="uniform",
         train="qkvo", lr=0.02, steps=30),
    dict(task="reverse", words=4, d_model=4, d_k=2, map="known", steps=25),
    dict(task="lesson", words=3, d_model=3, d_k=2, map="uniform", grad="numeric", steps=20),
    dict(task="random", words=4, d_model=3, d_k=2, causal="on", map="uniform", grad="numeric",
         schedule="simultaneous", lr=0.02, steps=20),
]
SEEDS = (3, 9)  # seeds 3 .. 8


def option(c, name, default):
    return c.get(name, default)


def held_out(c):
    """T: --test-inputs, by default 64 with more than one training input, else 0."""
    return option(c, "test_inputs", 64 if option(c, "inputs", 1) > 1 else 0)


def task_data(c, n, dm, dv, d_out):
    """[(X, Y, known maps (H, n, n) or None)] for the training then the held-out inputs; R."""
    g = np.random.default_rng(option(c, "task_seed", 0))
    H, T = option(c, "heads", 1), held_out(c)
    count = option(c, "inputs", 1) + T
    task, causal = c["task"], option(c, "causal", "off") == "on"
    if task == "random":
        data = []
        for _ in range(count):
            X = g.normal(size=(n, dm))
            data.append((X, g.normal(size=(n, d_out)), None))
        return data, list(range(n))
    if task == "teacher":
        scale = 1 / np.sqrt(dm)
        W = [g.normal(size=(dm, c["d_k"])) * scale, g.normal(size=(dm, c["d_k"])) * scale,
             g.normal(size=(dm, dv)) * scale]
        if option(c, "train", "qkv") == "qkvo":
            W.append(g.normal(size=(dv, dm)) * scale)
        data = []
        for _ in range(count):
            X = g.normal(size=(n, dm))
            P = softmax_maps(c, X @ W[0], X @ W[1], n)
            data.append((X, forward(P, X, W[2], W[3] if len(W) > 3 else None)[0], P))
        return data, list(range(n))
    R = {"lesson": [n - 1], "previous": list(range(1, n)), "reverse": list(range(n))}[task]
    key = {"lesson": lambda i: 0, "previous": lambda i: i - 1, "reverse": lambda i: n - 1 - i}[task]
    V = option(c, "vocab", 0)
    data = []
    for _ in range(count):
        if V == 0:
            X = np.eye(n)
        else:
            t = g.integers(0, V, size=n)
            X = np.zeros((n, V + n))
            X[np.arange(n), t] = 1
            X[np.arange(n), V + np.arange(n)] = 1
        Y = np.zeros((n, d_out))
        P = np.zeros((H, n, n))
        for i in R:
            Y[i] = X[key(i)]
            P[:, i, key(i)] = 1
        data.append((X, Y, P))
    return data, R


def scale_of(c):
    s = option(c, "scale", "sqrt")
    return 1 / np.sqrt(c["d_k"] / option(c, "heads", 1)) if s == "sqrt" else 1.0 if s == "none" \
        else float(s)


def softmax_maps(c, Q, K, n):
    """The teacher's maps: each head's softmax of its scores (the causal mask applied)."""
    H = option(c, "heads", 1)
    dk = Q.shape[1] // H
    P = np.zeros((H, n, n))
    for h in range(H):
        S = Q[:, h * dk:(h + 1) * dk] @ K[:, h * dk:(h + 1) * dk].T * scale_of(c)
        if option(c, "causal", "off") == "on":
            S = np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, S)
        e = np.exp(S - S.max(axis=1, keepdims=True))
        P[h] = e / e.sum(axis=1, keepdims=True)
    return P


def uniform_maps(c, n):
    H = option(c, "heads", 1)
    visible = np.tril(np.ones((n, n))) if option(c, "causal", "off") == "on" else np.ones((n, n))
    return np.broadcast_to(visible / visible.sum(axis=1, keepdims=True), (H, n, n))


def forward(P, X, W_V, W_O):
    """F of one input with the maps P (H, n, n): concat_h(P_h V_h), then W_O."""
    H = P.shape[0]
    V = X @ W_V
    dv = V.shape[1] // H
    O = np.concatenate([P[h] @ V[:, h * dv:(h + 1) * dv] for h in range(H)], axis=1)
    return (O @ W_O if W_O is not None else O), O


def loss(W_V, W_O, inputs, R):
    return float(np.mean([((forward(P, X, W_V, W_O)[0][R] - Y[R]) ** 2).sum()
                          for X, Y, P in inputs]))


def gradients(W_V, W_O, inputs, R):
    """dW_V and dW_O: the mean over the inputs of the loss's gradient, P fixed."""
    gv, go = np.zeros_like(W_V), None if W_O is None else np.zeros_like(W_O)
    for X, Y, P in inputs:
        F, O = forward(P, X, W_V, W_O)
        dF = np.zeros_like(F)
        dF[R] = 2 * (F[R] - Y[R]) / len(inputs)
        dO = dF @ W_O.T if W_O is not None else dF
        H, dv = P.shape[0], W_V.shape[1] // P.shape[0]
        dV = np.concatenate([P[h].T @ dO[:, h * dv:(h + 1) * dv] for h in range(H)], axis=1)
        gv += X.T @ dV
        if W_O is not None:
            go += O.T @ dF
    return gv, go


def train(c, seed, inputs, R, dm, dv):
    g = np.random.default_rng(seed)
    init = option(c, "init_scale", 1.0 if c["task"] not in ("random", "teacher") else 0.25)
    lr = option(c, "lr", 0.5)
    W_Q, W_K, W_V = (g.normal(size=s) * init for s in ((dm, c["d_k"]), (dm, c["d_k"]), (dm, dv)))
    W_O = g.normal(size=(dv, dm)) * init if option(c, "train", "qkv") == "qkvo" else None
    start = loss(W_V, W_O, inputs, R)
    for _ in range(c["steps"]):
        if option(c, "schedule", "sequential") == "sequential":
            W_V = W_V - lr * gradients(W_V, W_O, inputs, R)[0]
            if W_O is not None:
                W_O = W_O - lr * gradients(W_V, W_O, inputs, R)[1]
        else:
            gv, go = gradients(W_V, W_O, inputs, R)
            W_V = W_V - lr * gv
            if W_O is not None:
                W_O = W_O - lr * go
    return W_Q, W_K, W_V, W_O, start, loss(W_V, W_O, inputs, R)


def check(demo, c, tmp):
    n, dm = c["words"], c["d_model"]
    dv = option(c, "d_v", dm)
    d_out = dm if option(c, "train", "qkv") == "qkvo" else dv
    inputs_n, T = option(c, "inputs", 1), held_out(c)
    data, R = task_data(c, n, dm, dv, d_out)
    if c["map"] == "uniform":
        data = [(X, Y, uniform_maps(c, n)) for X, Y, _ in data]
    measured = data[inputs_n:] if T > 0 else data[:inputs_n]
    args = [demo, "--table", "attention-sweep", "-q", "--seeds", f"{SEEDS[0]}:{SEEDS[1]}",
            "--map-inputs", str(len(measured)), "--per-seed", os.path.join(tmp, "s.npy")]
    for k, v in c.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        return [f"demo failed ({r.returncode}): {r.stderr.strip()}"]

    def load(name):
        return np.load(os.path.join(tmp, "s.npy" if name == "maps" else f"s.{name}.npy"))
    numeric = option(c, "grad", "analytic") == "numeric"
    tol = 1e-7 if numeric else 1e-9
    bad = []
    maps = load("maps")
    for k, seed in enumerate(range(*SEEDS)):
        W_Q, W_K, W_V, W_O, start, final = train(c, seed, data[:inputs_n], R, dm, dv)
        test = loss(W_V, W_O, measured, R)
        for name, want in (("loss", final), ("start_loss", start), ("test_loss", test)):
            got = float(load(name)[k])
            if not np.isfinite(want) or not abs(got - want) <= tol * max(1.0, abs(want)):
                bad.append(f"seed {seed} {name}: demo {got!r}, numpy {want!r}")
        for name, want in (("w_q", W_Q), ("w_k", W_K)):
            if load(name)[k].tobytes() != want.tobytes():
                bad.append(f"seed {seed} {name}: not the starting draw")
        for name, want in (("w_v", W_V), ("w_o", W_O)):
            if want is not None and not np.allclose(load(name)[k], want, rtol=0, atol=tol):
                bad.append(f"seed {seed} {name}: largest difference "
                           f"{np.abs(load(name)[k] - want).max():.3g}")
        # The maps on the loss rows R of every measured input, demo's axes (inputs with many,
        # heads with more than one).
        want = np.stack([P[:, R, :] for _, _, P in measured])
        if inputs_n == 1 and T == 0:
            want = want[0]
        if option(c, "heads", 1) == 1:
            want = want[..., 0, :, :]
        # Uniform and one-hot maps bit for bit; the teacher's (its softmax, rounded its own way
        # in each) to 1e-12.
        exact = c["task"] != "teacher" or c["map"] == "uniform"
        if maps[k].shape != want.shape or (maps[k].tobytes() != want.tobytes() if exact else
                                           not np.allclose(maps[k], want, rtol=0, atol=1e-12)):
            bad.append(f"seed {seed} maps: not the frozen map")
    return bad


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    failed = 0
    for c in CONFIGS:
        with tempfile.TemporaryDirectory() as tmp:
            bad = check(sys.argv[1], c, tmp)
        what = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in c.items())
        print(("FAIL " if bad else "ok   ") + what)
        for line in bad[:10]:
            print("  " + line)
        failed += bool(bad)
    print(f"{len(CONFIGS) - failed} of {len(CONFIGS)} configurations agree with numpy")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
