#!/usr/bin/python3
"""The general head's training (bench/peers/torch/torch_head.py) in PyTorch on the GPU, for
scripts/gpu-check: one head (n words, d = d_model = d_k = d_v), random task, batched over seeds
with bmm, hand-written gradients, the sequential schedule, float64, lr 0.01, init 0.25.
Usage: torch_head_gpu.py N D SEEDS STEPS -> "seed_steps_per_s R seconds T"; exit 3 without
torch or a CUDA device."""
import math, sys, time

try:
    import torch
except ImportError:
    print("torch not installed", file=sys.stderr)
    sys.exit(3)
if not torch.cuda.is_available():
    print("torch sees no CUDA device", file=sys.stderr)
    sys.exit(3)

dev = torch.device("cuda")
n, d, seeds, steps = (int(a) for a in sys.argv[1:5])
lr, c = 0.01, 1 / math.sqrt(d)
g = torch.Generator(device=dev).manual_seed(1)
X = torch.randn(n, d, dtype=torch.float64, device=dev, generator=g)
Y = torch.randn(n, d, dtype=torch.float64, device=dev, generator=g)
Wq, Wk, Wv = (0.25 * torch.randn(seeds, d, d, dtype=torch.float64, device=dev, generator=g)
              for _ in range(3))
Xb, Xt = X.expand(seeds, n, d), X.t().expand(seeds, d, n)


def grads(Wq, Wk, Wv):
    Q, K, V = Xb @ Wq, Xb @ Wk, Xb @ Wv
    P = torch.softmax(Q @ K.transpose(1, 2) * c, dim=-1)
    O = P @ V
    dO = 2 * (O - Y)
    dP = dO @ V.transpose(1, 2)
    dV = P.transpose(1, 2) @ dO
    dS = P * (dP - (dP * P).sum(-1, keepdim=True))
    return Xt @ (dS @ K * c), Xt @ (dS.transpose(1, 2) @ Q * c), Xt @ dV


with torch.no_grad():
    grads(Wq, Wk, Wv)  # warm-up: cuBLAS handles, kernels
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        Wq = Wq - lr * grads(Wq, Wk, Wv)[0]
        Wk = Wk - lr * grads(Wq, Wk, Wv)[1]
        Wv = Wv - lr * grads(Wq, Wk, Wv)[2]
    torch.cuda.synchronize()
    t = time.perf_counter() - t0
print(f"seed_steps_per_s {seeds * steps / t:.4e} seconds {t:.3f}")
