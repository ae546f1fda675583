"""Peer of `demo --table attention-sweep` in PyTorch 2 on the CPU, float64: one head (n words,
d = d_model = d_k = d_v), random task (or --task teacher --inputs B: B inputs, the loss their
mean), lr 0.01, the sequential schedule (W_Q's gradient taken
and applied, then W_K's at the new W_Q, then W_V's), loss over all rows, no autograd graph kept
between steps. Variants:
  vmap     one seed's step with torch.func.grad of the loss for each matrix in turn, run over
           the seeds by torch.func.vmap (the way a torch.func user writes it);
  bmm      the seeds batched by hand (broadcast matmul / bmm on (seeds, rows, cols) tensors),
           hand-written gradients and the kernel's recomputation (only the changed projection
           and what follows it), the same work as demo (kernels/head.hpp);
  compile  bmm's step through torch.compile (Inductor's generated C++ on the CPU).
The first step (warm-up, and for compile the compilation) is timed apart, on a copy of the
starting weights; then STEPS steps are timed from the start. Threads: OMP_NUM_THREADS (default
1) for torch.set_num_threads. Run with the venv of bench/setup-peers.
Usage: torch2_head.py N D SEEDS STEPS [--variant vmap|bmm|compile] [--init demo|anchor]
                      [--task random|teacher] [--inputs B] [--print-losses K]
Prints one line: seed-steps per second and per CPU-second of the run, warm-up seconds."""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import common  # noqa: E402  (bench/common.py)

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
a = common.args(__doc__, ["vmap", "bmm", "compile"])
X0, Y0, W0 = common.start(a)
X, Y = torch.from_numpy(X0), torch.from_numpy(Y0)  # (B, n, d)
B, n, d = X.shape
Xf = X.reshape(B * n, d)  # the inputs' rows stacked
Xt = Xf.t().contiguous()
c, lr = 1 / math.sqrt(a.d), common.LR


def loss(Wq, Wk, Wv):
    P = torch.softmax((X @ Wq) @ (X @ Wk).transpose(-1, -2) * c, dim=-1)
    return ((P @ (X @ Wv) - Y) ** 2).sum() / B


gq = torch.func.grad(loss, argnums=0)
gk = torch.func.grad(loss, argnums=1)
gv = torch.func.grad(loss, argnums=2)


def one_seed_step(Wq, Wk, Wv):
    Wq = Wq - lr * gq(Wq, Wk, Wv)
    Wk = Wk - lr * gk(Wq, Wk, Wv)
    Wv = Wv - lr * gv(Wq, Wk, Wv)
    return Wq, Wk, Wv


vmap_step = torch.func.vmap(one_seed_step)


# The bmm variants: (seeds, B, n, d) activations, (seeds, B, n, n) maps; a projection is one
# (seeds, B n, d) product, an Xᵀ product one (seeds, d, d) product over the stacked rows.
def proj(W):
    return (Xf @ W).view(W.shape[0], B, n, d)


def xt(dZ):
    return Xt @ dZ.reshape(dZ.shape[0], B * n, d)


def T(A):
    return A.transpose(-1, -2)


def forward(W):
    Wq, Wk, Wv = W
    Q, K, V = proj(Wq), proj(Wk), proj(Wv)
    P = torch.softmax(Q @ T(K) * c, dim=-1)
    return (Wq, Wk, Wv, Q, K, V, P, P @ V)


def scores_back(P, V, O):
    dP = ((2 / B) * (O - Y)) @ T(V)
    return P * (dP - (dP * P).sum(-1, keepdim=True))


def bmm_step(Wq, Wk, Wv, Q, K, V, P, O):
    dS = scores_back(P, V, O)                                # W_Q
    Wq = Wq - lr * xt(dS @ K * c)
    Q = proj(Wq)
    P = torch.softmax(Q @ T(K) * c, dim=-1)
    O = P @ V
    dS = scores_back(P, V, O)                                # W_K at the new W_Q
    Wk = Wk - lr * xt(T(dS) @ Q * c)
    K = proj(Wk)
    P = torch.softmax(Q @ T(K) * c, dim=-1)
    O = P @ V
    Wv = Wv - lr * xt(T(P) @ ((2 / B) * (O - Y)))            # W_V at both
    V = proj(Wv)
    O = P @ V
    return Wq, Wk, Wv, Q, K, V, P, O


if a.variant == "vmap":
    start, step, weights = (lambda W: tuple(W)), vmap_step, (lambda s: s)
else:
    start, weights = forward, (lambda s: s[:3])
    step = bmm_step if a.variant == "bmm" else torch.compile(bmm_step, dynamic=False)


def train(W, steps):
    s = start(W)
    for _ in range(steps):
        s = step(*s)
    return weights(s)


W = [torch.from_numpy(w) for w in W0]
with torch.no_grad():
    clock = common.Clock()
    train([w.clone() for w in W], 1)
    warm_cpu, warm_wall = clock.cpu(), clock.wall()
    clock = common.Clock()
    out = train(W, a.steps)
    run_cpu, run_wall = clock.cpu(), clock.wall()
common.report(f"torch {torch.__version__}", a, warm_cpu, warm_wall, run_cpu, run_wall,
              [w.numpy() for w in out], X0, Y0)
