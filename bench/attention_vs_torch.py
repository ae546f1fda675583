#!/usr/bin/env python3
"""`demo attention` on the CPU against the same computation written with PyTorch: a batch of
4,096 problems, n = 128, d_model = d_k = d_v = 64, float32, shared W.

  torch   q = x @ W_Q, k = x @ W_K, v = x @ W_V (torch.matmul), s = q @ k^T / sqrt(d_k),
          p = torch.softmax(s, -1), out = p @ v; torch.set_num_threads(THREADS)
  demo    demo attention --x x.npy --w-q ... --device cpu --threads THREADS --format json;
          its provenance's kernel_seconds (the kernels and the head assembly, no file I/O) and
          the whole process's wall time (reading 134 MB of .npy, row statistics included)

Each side runs REPEATS times, alternating, after one warm-up; the medians are reported, as
wall seconds and as CPU seconds (process user + system time: fairer on a shared machine).
Needs Debian's python3-numpy and python3-torch. Usage:
    /usr/bin/python3 bench/attention_vs_torch.py --demo build/cpu/demo [--threads 2]
        [--repeats 5] [--out results/bench/attention-cpu-vs-torch.md]
"""
import argparse, json, math, os, sys, tempfile

import common


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--demo", required=True)
    ap.add_argument("--threads", type=common.positive_int, default=2)
    ap.add_argument("--repeats", type=common.positive_int, default=5)
    ap.add_argument("--batch", type=common.positive_int, default=4096)
    ap.add_argument("--out")
    a = ap.parse_args()
    common.require_executable(ap, "--demo", a.demo)
    import numpy as np
    import torch
    torch.set_num_threads(a.threads)
    B, n, dm, dk = a.batch, 128, 64, 64
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp(prefix="attn-bench-")
    x = rng.normal(size=(B, n, dm)).astype(np.float32)
    ws = {k: (rng.normal(size=(dm, dk)) / math.sqrt(dm)).astype(np.float32) for k in ("wq", "wk", "wv")}
    np.save(os.path.join(tmp, "x.npy"), x)
    for k, w in ws.items():
        np.save(os.path.join(tmp, k + ".npy"), w)
    tx = torch.from_numpy(x)
    tw = {k: torch.from_numpy(w) for k, w in ws.items()}

    def torch_run():
        q = torch.matmul(tx, tw["wq"]); k = torch.matmul(tx, tw["wk"]); v = torch.matmul(tx, tw["wv"])
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dk)
        p = torch.softmax(s, dim=-1)
        return q, k, v, s, p, torch.matmul(p, v)

    cmd = [a.demo, "attention", "--x", os.path.join(tmp, "x.npy"), "--w-q", os.path.join(tmp, "wq.npy"),
           "--w-k", os.path.join(tmp, "wk.npy"), "--w-v", os.path.join(tmp, "wv.npy"), "--device", "cpu",
           "--threads", str(a.threads), "--format", "json", "--quiet"]

    def demo_run():
        out, cpu, wall = common.run(cmd)
        prov = json.loads(out)["provenance"]
        return prov["kernel_seconds"], prov["kernel_cpu_seconds"], wall, cpu

    def torch_timed():
        clock = common.Clock()
        out = torch_run()
        t = clock.wall()
        del out
        return t, clock.cpu()

    torch_timed(); demo_run()  # warm-up
    tw_, tc_, dk_, dkc_, dw_, dc_ = [], [], [], [], [], []
    for _ in range(a.repeats):
        t, c = torch_timed(); tw_.append(t); tc_.append(c)
        k, kc, w, c = demo_run(); dk_.append(k); dkc_.append(kc); dw_.append(w); dc_.append(c)
    med = lambda v: sorted(v)[len(v) // 2]
    model, level = common.cpu_model(), common.isa_level()
    flops = B * (3 * 2 * n * dm * dk + 2 * n * n * dk + 2 * n * n * dk)
    res = {"problems": B, "n": n, "d_model": dm, "d_k": dk, "d_v": dk, "dtype": "float32",
           "threads": a.threads, "repeats": a.repeats, "cpu": model, "isa": level,
           "torch": torch.__version__, "torch_cpu_capability": torch.backends.cpu.get_cpu_capability()
           if hasattr(torch.backends, "cpu") else "unknown",
           "torch_wall_s": med(tw_), "torch_cpu_s": med(tc_),
           "demo_kernel_wall_s": med(dk_), "demo_kernel_cpu_s": med(dkc_), "demo_process_wall_s": med(dw_), "demo_process_cpu_s": med(dc_),
           "ratio_wall_torch_over_demo_kernels": med(tw_) / med(dk_),
           "ratio_cpu_torch_over_demo_kernels": med(tc_) / med(dkc_),
           "gflops_demo_kernels": flops / med(dk_) / 1e9, "gflops_torch": flops / med(tw_) / 1e9,
           "load_average": os.getloadavg()}
    print(json.dumps(res, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            f.write("# demo attention (CPU) vs PyTorch (CPU)\n\n")
            f.write("`/usr/bin/python3 bench/attention_vs_torch.py --demo %s --threads %d --repeats %d`\n\n"
                    % (a.demo, a.threads, a.repeats))
            f.write("Machine: %s, %s, %d threads for both; torch %s (Debian python3-torch).\n"
                    "Load average during the run: %.1f %.1f %.1f (a shared machine: wall times are noisy).\n\n"
                    % (model, level, a.threads, torch.__version__, *res["load_average"]))
            f.write("| medians of %d | wall s | CPU s | GFLOP/s (wall) |\n|---|---|---|---|\n" % a.repeats)
            f.write("| torch: matmul, softmax, matmul | %.3f | %.3f | %.1f |\n"
                    % (res["torch_wall_s"], res["torch_cpu_s"], res["gflops_torch"]))
            f.write("| demo attention: kernels (provenance kernel_seconds) | %.3f | %.3f | %.1f |\n"
                    % (res["demo_kernel_wall_s"], res["demo_kernel_cpu_s"], res["gflops_demo_kernels"]))
            f.write("| demo attention: whole process (reads 134 MB of .npy, row statistics) | %.3f | %.3f | |\n\n"
                    % (res["demo_process_wall_s"], res["demo_process_cpu_s"]))
            f.write("torch / demo kernels: **%.2fx** in wall time, **%.2fx** in CPU time.\n\n"
                    % (res["ratio_wall_torch_over_demo_kernels"], res["ratio_cpu_torch_over_demo_kernels"]))
            f.write("```json\n" + json.dumps(res, indent=1) + "\n```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
