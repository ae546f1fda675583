#!/usr/bin/python3
"""Reference for `demo --table attention-sweep`: docs/spec/VARIABILITY.md (with its version 2)
written directly in numpy float64, seed by seed, from the spec alone (none of the project's code).

Prints, for each seed, a CSV row: seed, loss (final), start_loss, then every head's map on the
loss rows (p_i_j, or p_h_i_j with more than one head), then the outputs on the loss rows
(o_i_c): the columns of demo's --per-seed CSV that depend on the training alone.

Usage: variability_reference.py --task lesson|previous|reverse|random --words N --d-model D
         --d-k K [--d-v V] [--heads H] [--causal on|off] [--scale sqrt|none|X]
         [--train qk|qkv|qkvo] [--optimizer sgd|adam] [--schedule sequential|simultaneous]
         --steps S --lr LR --init-scale C --seeds A:B [--task-seed T]
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
    return a.parse_args()


def task(o, n, dm, d_out):
    """X (n, d_model), Y (n, d_out), the loss rows R (spec "Tasks")."""
    if o.task == "random":
        g = np.random.default_rng(o.task_seed)
        return g.normal(size=(n, dm)), g.normal(size=(n, d_out)), list(range(n))
    X, Y = np.eye(n), np.zeros((n, d_out))
    if o.task == "lesson":
        R = [n - 1]
        Y[n - 1, 0] = 1
    elif o.task == "previous":
        R = list(range(1, n))
        for i in R:
            Y[i, i - 1] = 1
    else:  # reverse
        R = list(range(n))
        for i in R:
            Y[i, n - 1 - i] = 1
    return X, Y, R


class Head:
    def __init__(self, o, X, Y, R):
        self.o, self.X, self.Y, self.R = o, X, Y, R
        self.n = X.shape[0]
        self.H = o.heads
        self.c = {"sqrt": 1 / np.sqrt(o.d_k / o.heads), "none": 1.0}.get(o.scale)
        if self.c is None:
            self.c = float(o.scale)
        self.mask = np.triu(np.ones((self.n, self.n), bool), 1) if o.causal == "on" else None

    def forward(self, W):
        """Q, K, V, the maps P (H, n, n), O (n, d_v), F (the output)."""
        X, H = self.X, self.H
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

    def loss(self, W):
        F = self.forward(W)[5]
        return float(((F[self.R] - self.Y[self.R]) ** 2).sum())

    def grads(self, W):
        """The analytic gradient of every matrix (spec "Analytic gradients", version 2)."""
        X, H, c = self.X, self.H, self.c
        Q, K, V, P, O, F = self.forward(W)
        dF = np.zeros_like(F)
        dF[self.R] = 2 * (F[self.R] - self.Y[self.R])
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


def train(o, head, seed, d_out):
    dm, dv = head.X.shape[1], o.d_v or o.d_model
    g = np.random.default_rng(seed)
    W = {"q": g.normal(size=(dm, o.d_k)) * o.init_scale,
         "k": g.normal(size=(dm, o.d_k)) * o.init_scale,
         "v": g.normal(size=(dm, dv)) * o.init_scale}
    if o.train == "qkvo":
        W["o"] = g.normal(size=(dv, dm)) * o.init_scale
    if o.train == "qk":
        W["v"] = np.eye(dm, dv)
    names = {"qk": "qk", "qkv": "qkv", "qkvo": "qkvo"}[o.train]
    start = head.loss(W)
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
            for name in names:
                update(name, head.grads(W)[name], t)
        else:
            gs = head.grads(W)
            for name in names:
                update(name, gs[name], t)
    _, _, _, P, _, F = head.forward(W)
    return head.loss(W), start, P, F


def main():
    o = parse()
    n, dm = o.words, o.d_model
    dv = o.d_v or dm
    d_out = dm if o.train == "qkvo" else dv
    X, Y, R = task(o, n, dm, d_out)
    head = Head(o, X, Y, R)
    a, b = (int(x) for x in o.seeds.split(":"))
    cols = ["seed", "loss", "start_loss"]
    for h in range(o.heads):
        for i in R:
            for j in range(n):
                cols.append(f"p_{h}_{i}_{j}" if o.heads > 1 else f"p_{i}_{j}")
    cols += [f"o_{i}_{c}" for i in R for c in range(d_out)]
    out = [",".join(cols)]
    for seed in range(a, b):
        loss, start, P, F = train(o, head, seed, d_out)
        row = [str(seed), repr(loss), repr(start)]
        row += [repr(float(P[h, i, j])) for h in range(o.heads) for i in R for j in range(n)]
        row += [repr(float(F[i, c])) for i in R for c in range(d_out)]
        out.append(",".join(row))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
