#!/usr/bin/python3
"""Reference for `demo --table attention-sweep`: docs/spec/VARIABILITY.md (with its versions 2
and 3: many inputs, token tasks, the planted teacher) written directly in numpy float64, seed by
seed, from the spec alone (none of the project's code).

Prints, for each seed, a CSV row: seed, loss (final, on the training inputs), start_loss,
test_loss (on the measured inputs: the held-out ones when there are any, else the training
ones), with a known map jsd_to_known and found, then every head's map on the loss rows of the
first --map-inputs measured inputs (p_i_j, p_h_i_j with more than one head; with many inputs
p_in{b}_i_j and p_in{b}_h_i_j), then the outputs on those rows (o_i_c, o_in{b}_i_c): the columns
of demo's --per-seed CSV that depend on the training alone.

Usage: variability_reference.py --task lesson|previous|reverse|random|teacher --words N
         --d-model D --d-k K [--d-v V] [--heads H] [--causal on|off] [--scale sqrt|none|X]
         [--train qk|qkv|qkvo] [--optimizer sgd|adam] [--schedule sequential|simultaneous]
         --steps S --lr LR --init-scale C --seeds A:B [--task-seed T] [--inputs B]
         [--test-inputs T|auto] [--vocab V] [--teacher-scale X|auto] [--found-below X]
         [--map-inputs K]
"""
import argparse
import sys

import numpy as np


def parse():
    a = argparse.ArgumentParser()
    a.add_argument("--task", required=True)
    a.add_argument("--task-seed", type=int, default=0)
    a.add_argument("--words", type=int, required=True)
    a.add_argument("--d-model", type=int, required=True)
    a.add_argument("--d-k", type=int, required=True)
    a.add_argument("--d-v", type=int, default=0)
    a.add_argument("--heads", type=int, default=1)
    a.add_argument("--causal", default="off")
    a.add_argument("--scale", default="sqrt")
    a.add_argument("--train", default="qkv")
    a.add_argument("--optimizer", default="sgd")
    a.add_argument("--schedule", default="sequential")
    a.add_argument("--steps", type=int, required=True)
    a.add_argument("--lr", type=float, required=True)
    a.add_argument("--init-scale", type=float, required=True)
    a.add_argument("--seeds", required=True)
    a.add_argument("--inputs", type=int, default=1)
    a.add_argument("--test-inputs", default="auto")
    a.add_argument("--vocab", type=int, default=0)
    a.add_argument("--teacher-scale", default="auto")
    a.add_argument("--found-below", type=float, default=1e-3)
    a.add_argument("--map-inputs", type=int, default=1)
    return a.parse_args()


def draw_weights(o, g, scale, dm, dv):
    """A start as the spec draws it: W_Q, W_K, W_V (then W_O with qkvo), each times scale;
    W_V = I with qk."""
    W = {"q": g.normal(size=(dm, o.d_k)) * scale,
         "k": g.normal(size=(dm, o.d_k)) * scale,
         "v": g.normal(size=(dm, dv)) * scale}
    if o.train == "qkvo":
        W["o"] = g.normal(size=(dv, dm)) * scale
    if o.train == "qk":
        W["v"] = np.eye(dm, dv)
    return W


class Head:
    def __init__(self, o, n):
        self.o, self.n, self.H = o, n, o.heads
        self.c = {"sqrt": 1 / np.sqrt(o.d_k / o.heads), "none": 1.0}.get(o.scale)
        if self.c is None:
            self.c = float(o.scale)
        self.mask = np.triu(np.ones((n, n), bool), 1) if o.causal == "on" else None

    def forward(self, W, X):
        """Q, K, V, the maps P (H, n, n), O (n, d_v), F (the output) of one input."""
        H = self.H
        Q, K, V = X @ W["q"], X @ W["k"], X @ W["v"]
        dk, dv = Q.shape[1] // H, V.shape[1] // H
        P = np.zeros((H, self.n, self.n))
        O = np.zeros_like(V)
        for h in range(H):
            S = Q[:, h * dk:(h + 1) * dk] @ K[:, h * dk:(h + 1) * dk].T * self.c
            if self.mask is not None:
                S = np.where(self.mask, -np.inf, S)
            e = np.exp(S - S.max(axis=1, keepdims=True))
            P[h] = e / e.sum(axis=1, keepdims=True)
            O[:, h * dv:(h + 1) * dv] = P[h] @ V[:, h * dv:(h + 1) * dv]
        F = O @ W["o"] if "o" in W else O
        return Q, K, V, P, O, F

    def loss(self, W, data, R):
        """(1/B) sum_b sum_{r in R} |F_b,r - Y_b,r|^2 over the inputs (X_b, Y_b) of data."""
        return float(np.mean([((self.forward(W, X)[5][R] - Y[R]) ** 2).sum() for X, Y in data]))

    def grads(self, W, data, R):
        """The analytic gradient of every matrix, the mean over the inputs (spec "Analytic
        gradients", versions 2 and 3)."""
        total = {k: np.zeros_like(v) for k, v in W.items()}
        for X, Y in data:
            g = self.grads_one(W, X, Y, R)
            for k in g:
                total[k] += g[k]
        return {k: v / len(data) for k, v in total.items()}

    def grads_one(self, W, X, Y, R):
        H, c = self.H, self.c
        Q, K, V, P, O, F = self.forward(W, X)
        dF = np.zeros_like(F)
        dF[R] = 2 * (F[R] - Y[R])
        g = {}
        if "o" in W:
            g["o"] = O.T @ dF
            dO = dF @ W["o"].T
        else:
            dO = dF
        dk, dv = Q.shape[1] // H, V.shape[1] // H
        dQ, dK, dV = np.zeros_like(Q), np.zeros_like(K), np.zeros_like(V)
        for h in range(H):
            kb, vb = slice(h * dk, (h + 1) * dk), slice(h * dv, (h + 1) * dv)
            dP = dO[:, vb] @ V[:, vb].T
            dV[:, vb] = P[h].T @ dO[:, vb]
            dS = P[h] * (dP - (dP * P[h]).sum(axis=1, keepdims=True))
            dQ[:, kb] = dS @ K[:, kb] * c
            dK[:, kb] = dS.T @ Q[:, kb] * c
        g["q"], g["k"], g["v"] = X.T @ dQ, X.T @ dK, X.T @ dV
        return g


def task(o, head, n, dm, dv, d_out):
    """The inputs [(X, Y)], training first then held-out, the loss rows R, the known keys (token
    tasks) and the teacher's weights (teacher), spec "Tasks over many inputs"."""
    T = o.test_inputs
    count = o.inputs + T
    g = np.random.default_rng(o.task_seed)
    if o.task == "random":
        data = []
        for _ in range(count):
            X = g.normal(size=(n, dm))
            data.append((X, g.normal(size=(n, d_out))))
        return data, list(range(n)), None, None
    if o.task == "teacher":
        ts = 1 / np.sqrt(dm) if o.teacher_scale == "auto" else float(o.teacher_scale)
        Wt = draw_weights(o, g, ts, dm, dv)
        data = []
        for _ in range(count):
            X = g.normal(size=(n, dm))
            data.append((X, head.forward(Wt, X)[5]))
        return data, list(range(n)), None, Wt
    R = {"lesson": [n - 1], "previous": list(range(1, n)), "reverse": list(range(n))}[o.task]
    key = {"lesson": lambda i: 0, "previous": lambda i: i - 1,
           "reverse": lambda i: n - 1 - i}[o.task]
    data = []
    for _ in range(count):
        if o.vocab == 0:
            X = np.eye(n)
        else:
            t = g.integers(0, o.vocab, size=n)
            X = np.zeros((n, o.vocab + n))
            X[np.arange(n), t] = 1
            X[np.arange(n), o.vocab + np.arange(n)] = 1
        Y = np.zeros((n, d_out))
        for i in R:
            Y[i] = X[key(i)]
        data.append((X, Y))
    return data, R, [key(i) for i in R], None


def jsd(p, q):
    """JSD with m = (p + q) / 2, each p / m taken as 2 p / (p + q) (a subnormal p + q halves to
    0)."""
    s = 0.0
    for a, b in zip(p, q):
        if a > 0:
            s += 0.5 * a * np.log(2 * a / (a + b))
        if b > 0:
            s += 0.5 * b * np.log(2 * b / (a + b))
    return s


def train(o, head, seed, dm, dv, data, R):
    g = np.random.default_rng(seed)
    W = draw_weights(o, g, o.init_scale, dm, dv)
    start = head.loss(W, data, R)
    m = {k: np.zeros_like(v) for k, v in W.items()}
    v2 = {k: np.zeros_like(v) for k, v in W.items()}
    b1, b2, eps = 0.9, 0.999, 1e-8

    def update(name, grad, t):
        if o.optimizer == "sgd":
            W[name] = W[name] - o.lr * grad
            return
        m[name] = b1 * m[name] + (1 - b1) * grad
        v2[name] = b2 * v2[name] + (1 - b2) * grad ** 2
        W[name] = W[name] - o.lr * (m[name] / (1 - b1 ** t)) / (np.sqrt(v2[name] / (1 - b2 ** t)) + eps)

    for t in range(1, o.steps + 1):
        if o.schedule == "sequential":
            for name in o.train:
                update(name, head.grads(W, data, R)[name], t)
        else:
            gs = head.grads(W, data, R)
            for name in o.train:
                update(name, gs[name], t)
    return W, head.loss(W, data, R), start


def main():
    o = parse()
    n, dm = o.words, o.d_model
    dv = o.d_v or dm
    d_out = dm if o.train == "qkvo" else dv
    if o.test_inputs == "auto":
        o.test_inputs = 64 if o.inputs > 1 else 0
    o.test_inputs = int(o.test_inputs)
    many = o.inputs > 1 or o.test_inputs > 0
    head = Head(o, n)
    data, R, keys, teacher = task(o, head, n, dm, dv, d_out)
    measured = data[o.inputs:] if o.test_inputs > 0 else data[:o.inputs]
    known_maps = None
    if teacher is not None:  # the teacher's head-averaged maps on the measured inputs
        known_maps = [head.forward(teacher, X)[3].mean(axis=0) for X, _ in measured]
    known = keys is not None or known_maps is not None
    K = o.map_inputs
    a, b = (int(x) for x in o.seeds.split(":"))

    def prefix(k):
        return f"in{k}_" if many else ""
    cols = ["seed", "loss", "start_loss", "test_loss"]
    if known:
        cols += ["jsd_to_known", "found"]
    for k in range(K):
        for h in range(o.heads):
            for i in R:
                for j in range(n):
                    cols.append(f"p_{prefix(k)}{h}_{i}_{j}" if o.heads > 1
                                else f"p_{prefix(k)}{i}_{j}")
    cols += [f"o_{prefix(k)}{i}_{c}" for k in range(K) for i in R for c in range(d_out)]
    out = [",".join(cols)]
    for seed in range(a, b):
        W, loss, start = train(o, head, seed, dm, dv, data[:o.inputs], R)
        forwards = [head.forward(W, X) for X, _ in measured]
        test = head.loss(W, measured, R)
        row = [str(seed), repr(loss), repr(start), repr(test)]
        if known:
            rows_jsd, found = [], True
            for k, f in enumerate(forwards):
                P = f[3].mean(axis=0)
                for r, i in enumerate(R):
                    if keys is not None:
                        one_hot = np.zeros(n)
                        one_hot[keys[r]] = 1
                        rows_jsd.append(jsd(P[i], one_hot))
                        found = found and int(np.argmax(P[i])) == keys[r]
                    else:
                        rows_jsd.append(jsd(P[i], known_maps[k][i]))
            to_known = float(np.mean(rows_jsd))
            if keys is None:
                found = to_known < o.found_below
            row += [repr(to_known), "1" if found else "0"]
        for k in range(K):
            P = forwards[k][3]
            row += [repr(float(P[h, i, j])) for h in range(o.heads) for i in R for j in range(n)]
        for k in range(K):
            F = forwards[k][5]
            row += [repr(float(F[i, c])) for i in R for c in range(d_out)]
        out.append(",".join(row))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
