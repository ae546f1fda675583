"""Peer of `demo --table attention-sweep` in JAX on the CPU, float64 (jax_enable_x64): one head
(n words, d = d_model = d_k = d_v), random task (or --task teacher --inputs B: B inputs, the
loss their mean), lr 0.01, the sequential schedule (W_Q's
gradient taken and applied, then W_K's at the new W_Q, then W_V's), loss over all rows.
The training is written for one seed, jax.vmap runs it over the seeds and jax.jit compiles the
whole step loop (lax.fori_loop); compile time (jit lowering and XLA compilation, ahead of the
run) is reported apart from the run. Variants:
  autodiff  one seed's step with jax.grad of the loss for each matrix in turn (the way a JAX
            user writes it; XLA removes what each gradient does not need);
  hand      one seed's step with the hand-written gradients and the kernel's recomputation
            (only the changed projection and what follows it), the same work as demo
            (kernels/head.hpp).
Run with the venv of bench/setup-peers; threads are set by the caller (XLA_FLAGS).
Usage: jax_head.py N D SEEDS STEPS [--variant autodiff|hand] [--init demo|anchor]
                   [--task random|teacher] [--inputs B] [--print-losses K]
Prints one line: seed-steps per second and per CPU-second of the run, compile seconds."""
import math
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import common  # noqa: E402  (bench/common.py)

a = common.args(__doc__, ["autodiff", "hand"])
X0, Y0, W0 = common.start(a)
X, Y = jnp.asarray(X0), jnp.asarray(Y0)  # (B, n, d)
B = X.shape[0]
Xf = X.reshape(B * a.n, a.d)  # the inputs' rows stacked
c, lr = 1 / math.sqrt(a.d), common.LR


def T(A):
    return jnp.swapaxes(A, -1, -2)


def stacked(A):
    return A.reshape(B * a.n, A.shape[-1])


def softmax(s):
    e = jnp.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def loss(Wq, Wk, Wv):
    P = softmax((X @ Wq) @ T(X @ Wk) * c)
    return jnp.sum((P @ (X @ Wv) - Y) ** 2) / B


def train_autodiff(Wq, Wk, Wv):
    def step(_, W):
        Wq, Wk, Wv = W
        Wq = Wq - lr * jax.grad(loss, 0)(Wq, Wk, Wv)
        Wk = Wk - lr * jax.grad(loss, 1)(Wq, Wk, Wv)
        Wv = Wv - lr * jax.grad(loss, 2)(Wq, Wk, Wv)
        return Wq, Wk, Wv

    return lax.fori_loop(0, a.steps, step, (Wq, Wk, Wv))


def train_hand(Wq, Wk, Wv):
    def scores_back(P, V, O):
        dP = ((2 / B) * (O - Y)) @ T(V)
        return P * (dP - (dP * P).sum(-1, keepdims=True))

    def step(_, s):
        Wq, Wk, Wv, Q, K, V, P, O = s
        dS = scores_back(P, V, O)                      # W_Q
        Wq = Wq - lr * (Xf.T @ stacked(dS @ K * c))
        Q = X @ Wq
        P = softmax(Q @ T(K) * c)
        O = P @ V
        dS = scores_back(P, V, O)                      # W_K at the new W_Q
        Wk = Wk - lr * (Xf.T @ stacked(T(dS) @ Q * c))
        K = X @ Wk
        P = softmax(Q @ T(K) * c)
        O = P @ V
        Wv = Wv - lr * (Xf.T @ stacked(T(P) @ ((2 / B) * (O - Y))))  # W_V at both
        V = X @ Wv
        O = P @ V
        return Wq, Wk, Wv, Q, K, V, P, O

    Q, K, V = X @ Wq, X @ Wk, X @ Wv
    P = softmax(Q @ T(K) * c)
    s = lax.fori_loop(0, a.steps, step, (Wq, Wk, Wv, Q, K, V, P, P @ V))
    return s[:3]


train = jax.jit(jax.vmap(train_autodiff if a.variant == "autodiff" else train_hand))
W = [jnp.asarray(w) for w in W0]
clock = common.Clock()
compiled = train.lower(*W).compile()
compile_cpu, compile_wall = clock.cpu(), clock.wall()
clock = common.Clock()
out = jax.block_until_ready(compiled(*W))
run_cpu, run_wall = clock.cpu(), clock.wall()
common.report(f"jax {jax.__version__}", a, compile_cpu, compile_wall, run_cpu, run_wall, out,
              X0, Y0)
