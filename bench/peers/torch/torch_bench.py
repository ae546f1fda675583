#!/usr/bin/env python3
"""The GPU benchmarks of bench/gpu_bench.cu written the way a PyTorch user would, for ratios in
the same scripts/gpu-check run:
  dk-std     torch.randn for q and k in chunks, dot product, sum and sum of squares
  training   the all-random sweep as batched tensors (analytic gradient, the lesson's
             sequential W_Q, W_K, W_V schedule), one Python step per model step
  attention  X @ W projections, Q @ K^T / sqrt(d), softmax, @ V (float32 and float64)
Timed with CUDA events after a warm-up; median of repeats. Prints JSON (and writes --json FILE).
Exits 3 when torch or a CUDA device is missing. scripts/gpu-check runs this file with the python3
on PATH (the one that holds torch there), after asking that python3 whether it has torch with
CUDA: where not, it skips its PyTorch steps with that note.
"""
import argparse, json, math, sys

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--gpu", type=int, default=0, help="CUDA device ordinal")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print(f"torch_bench: torch is not installed for {sys.executable}", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_bench: no CUDA device for torch", file=sys.stderr)
        return 3
    dev = torch.device("cuda", args.gpu)
    torch.cuda.set_device(dev)

    def median_seconds(f, repeats):
        f()
        torch.cuda.synchronize()
        times = []
        for _ in range(repeats):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            f()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        times.sort()
        return times[len(times) // 2]

    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(dev)}

    # dk-std at d_k 512.
    d, chunk = 512, 1 << 15
    chunks = 8 if args.quick else 256
    def dk_std():
        s1 = torch.zeros((), device=dev, dtype=torch.float64)
        s2 = torch.zeros((), device=dev, dtype=torch.float64)
        for _ in range(chunks):
            q = torch.randn(chunk, d, device=dev)
            k = torch.randn(chunk, d, device=dev)
            dots = (q * k).sum(dim=1).double()
            s1 += dots.sum()
            s2 += (dots * dots).sum()
        return s1, s2
    t = median_seconds(dk_std, 1 if args.quick else 3)
    out["dk_std"] = {"d_k": d, "samples": chunk * chunks, "seconds": t,
                    "normals_per_s": 2 * d * chunk * chunks / t}

    # Training sweep: batched over seeds, float64, analytic gradient, sequential schedule.
    seeds = 100000 if args.quick else 1000000
    steps = 300 if args.quick else 3000
    r2 = 1 / math.sqrt(2.0)
    target = torch.tensor([1.0, 0.0], device=dev, dtype=torch.float64)
    def sweep():
        g = torch.Generator(device=dev).manual_seed(0)
        wq = torch.randn(seeds, 2, 2, device=dev, dtype=torch.float64, generator=g)
        wk = torch.randn(seeds, 2, 2, device=dev, dtype=torch.float64, generator=g)
        wv = torch.randn(seeds, 2, 2, device=dev, dtype=torch.float64, generator=g)
        def grads():
            q = wq[:, 1, :]
            a = torch.softmax(torch.einsum("bjd,bd->bj", wk, q) * r2, dim=1)
            outp = torch.einsum("bj,bjd->bd", a, wv)
            dout = 2 * (outp - target)
            da = torch.einsum("bjd,bd->bj", wv, dout)
            ds = a * (da - (a * da).sum(dim=1, keepdim=True))
            return a, q, ds, dout
        for _ in range(steps):
            a, q, ds, dout = grads()
            wq[:, 1, :] -= 0.5 * torch.einsum("bj,bjd->bd", ds, wk) * r2
            a, q, ds, dout = grads()
            wk.sub_(0.5 * ds[:, :, None] * q[:, None, :] * r2)
            a, q, ds, dout = grads()
            wv.sub_(0.5 * a[:, :, None] * dout[:, None, :])
        return wq
    t = median_seconds(sweep, 1)
    out["training"] = {"seeds": seeds, "steps": steps, "seconds": t,
                       "model_steps_per_s": seeds * steps / t}

    # Attention forward.
    out["attention"] = []
    for (b, n, d) in [(16384, 16, 64), (4096, 64, 64), (1024, 128, 128), (64, 512, 64)]:
        for dtype in (torch.float32, torch.float64):
            x = torch.randn(b, n, d, device=dev, dtype=dtype)
            w = torch.randn(d, d, device=dev, dtype=dtype)
            def fwd():
                q, k, v = x @ w, x @ w, x @ w
                p = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d), dim=-1)
                return p @ v
            t = median_seconds(fwd, 3 if args.quick else 20)
            flops = 2.0 * b * n * d * d * 3 + 2.0 * b * n * n * d * 2
            out["attention"].append({"batch": b, "n": n, "d": d,
                                     "dtype": "f32" if dtype == torch.float32 else "f64",
                                     "seconds": t, "gflop_per_s": flops / t / 1e9})
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0

if __name__ == "__main__":
    sys.exit(main())
