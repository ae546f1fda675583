#!/usr/bin/env python3
"""Test data for `demo attention` (tests/test_attention_command.cpp): 1,000 random attention
problems and their float64 answers computed by numpy, written to tests/data/attention/.

Inputs are float32 .npy (exact in float64, so the f64 run and the reference see the same
numbers): x (1000, 4, 4); W_Q and W_K one per problem (1000, 4, 4); W_V shared (4, 2). The
reference is the textbook formula in float64, with nothing of attnlab's code:
    Q = x W_Q, K = x W_K, V = x W_V, S = Q K^T / sqrt(d_k), P = softmax(S), out = P V
and the same with the causal mask (S_ij = -inf for j > i). Deterministic (seed 20261130).

Run: /usr/bin/python3 tools/make_attention_data.py   (Debian's python3-numpy)
"""
import os
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "attention")


def attention(x, wq, wk, wv, causal):
    q = x @ wq
    k = x @ wk
    v = x @ wv
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = np.where(np.triu(np.ones((n, n), dtype=bool), 1), -np.inf, s)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=-1, keepdims=True)
    return p, p @ v


def main():
    rng = np.random.default_rng(20261130)
    batch, n, d_model, d_k, d_v = 1000, 4, 4, 4, 2
    x = rng.normal(size=(batch, n, d_model)).astype(np.float32)
    wq = (rng.normal(size=(batch, d_model, d_k)) * 0.8).astype(np.float32)
    wk = (rng.normal(size=(batch, d_model, d_k)) * 0.8).astype(np.float32)
    wv = rng.normal(size=(d_model, d_v)).astype(np.float32)
    os.makedirs(OUT, exist_ok=True)
    for name, a in (("x", x), ("w_q", wq), ("w_k", wk), ("w_v", wv)):
        np.save(os.path.join(OUT, name + ".npy"), a)
    x64, wq64, wk64, wv64 = (a.astype(np.float64) for a in (x, wq, wk, wv))
    p, out = attention(x64, wq64, wk64, wv64, causal=False)
    np.save(os.path.join(OUT, "weights_ref.npy"), p)
    np.save(os.path.join(OUT, "out_ref.npy"), out)
    _, out_c = attention(x64, wq64, wk64, wv64, causal=True)
    np.save(os.path.join(OUT, "out_causal_ref.npy"), out_c)


if __name__ == "__main__":
    main()
