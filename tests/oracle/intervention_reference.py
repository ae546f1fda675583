#!/usr/bin/env python3
"""The interventions' change of the loss, recomputed in numpy from demo's exported weights.

Runs `demo --table attention-sweep --task previous` (X = I_n, one input, so the measured input
is known without demo) with --per-seed FILE.npy, then for every finite seed recomputes the loss
with each head's map replaced (spec docs/spec/VARIABILITY.md, version 3, "Does the head use its
map?") from its exported W_Q, W_K, W_V: uniform (1/k on the visible keys), permuted (Fisher-Yates
with Philox4x32-10 keyed by the seed, counter (head, input, row, block), written here from
Salmon et al. 2011 and Lemire 2019 in plain Python), patched (the pair partner's maps, heads
matched by the least sum of JSDs over every permutation of the heads) and known (M*: row i
attends to key i - 1), and checks that ΔL = L' - L and the output distance agree with demo's
columns to 1e-9 (relative to the loss). Exit status 0 when every seed agrees, 77 without numpy
(ctest: skipped).

Usage: intervention_reference.py DEMO [--heads H] [--causal on|off]
"""
import itertools
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:  # ctest reads 77 as skipped
    print("numpy is missing: skipped")
    sys.exit(77)

M32 = 0xFFFFFFFF


def philox4x32_10(counter, key):
    c = list(counter)
    k0, k1 = key
    for r in range(10):
        if r:
            k0 = (k0 + 0x9E3779B9) & M32
            k1 = (k1 + 0xBB67AE85) & M32
        p0 = 0xD2511F53 * c[0]
        p1 = 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ c[3] ^ k1) & M32, p0 & M32]
    return c


class Words:
    def __init__(self, seed, head, inp, row):
        self.key = (seed & M32, (seed >> 32) & M32)
        self.counter = [head, inp, row, 0]
        self.block, self.used = None, 4

    def next(self):
        if self.used == 4:
            self.block = philox4x32_10(self.counter, self.key)
            self.counter[3] += 1
            self.used = 0
        self.used += 1
        return self.block[self.used - 1]


def below(g, high):
    """Lemire's multiply-shift with rejection, as numpy's bounded uint32."""
    if high <= 1:
        return 0
    rng = high - 1
    m = g.next() * high
    left = m & M32
    if left < high:
        threshold = (M32 - rng) % high
        while left < threshold:
            m = g.next() * high
            left = m & M32
    return m >> 32


def permute(seed, head, inp, row, p):
    g = Words(seed, head, inp, row)
    out = list(p)
    for j in range(len(out) - 1, 0, -1):
        u = below(g, j + 1)
        out[j], out[u] = out[u], out[j]
    return np.array(out)


def jsd(p, q):
    m = (p + q) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(p / m), 0.0)
        b = np.where(q > 0, q * np.log(q / m), 0.0)
    return 0.5 * a.sum() + 0.5 * b.sum()


def main():
    demo = sys.argv[1]
    heads, causal = 1, "off"
    args = sys.argv[2:]
    if "--heads" in args:
        heads = int(args[args.index("--heads") + 1])
    if "--causal" in args:
        causal = args[args.index("--causal") + 1]
    n, seeds = (5 if heads == 1 else 4), 12
    d_k = 2 * heads
    with tempfile.TemporaryDirectory() as tmp:
        stem = os.path.join(tmp, "ps")
        subprocess.run([demo, "--table", "attention-sweep", "-q", "--threads", "2", "--task",
                        "previous", "--words", str(n), "--d-model", str(n), "--d-k", str(d_k),
                        "--heads", str(heads), "--causal", causal, "--seeds", f"0:{seeds}",
                        "--steps", "200", "--adversary", "on", "--per-seed", stem + ".npy"],
                       check=True, stdout=subprocess.DEVNULL)
        a = {name: np.load(f"{stem}.{name}.npy") for name in
             ("seeds", "loss", "test_loss", "w_q", "w_k", "w_v", "out", "dl_uniform", "out_uniform",
              "dl_permuted", "out_permuted", "dl_patched", "out_patched", "dl_known", "out_known")}
        maps = np.load(stem + ".npy")
    if heads == 1:
        maps = maps[:, None]
    r0 = 1
    x = np.eye(n)
    y = np.zeros((n, n))
    y[1:] = x[:-1]
    dh = n // heads

    def run(s, replace):
        v = x @ a["w_v"][s]
        o = np.zeros((n, n))
        for h in range(heads):
            o[:, h * dh:(h + 1) * dh] = replace[h] @ v[:, h * dh:(h + 1) * dh]
        f = o[r0:]
        return ((f - y[r0:]) ** 2).sum(), f

    def visible(i):
        return i + 1 if causal == "on" else n

    def matched(ma, mb):
        best, order = None, None
        for perm in itertools.permutations(range(heads)):
            c = sum(np.mean([jsd(ma[h][r], mb[perm[h]][r]) for r in range(n - r0)])
                    for h in range(heads))
            if best is None or c < best - 1e-15:
                best, order = c, perm
        return order

    def full(rows):  # (H, |R|, n) -> (H, n, n), rows outside R zero (they reach no loss)
        out = np.zeros((heads, n, n))
        out[:, r0:] = rows
        return out

    known = np.zeros((heads, n - r0, n))
    for r in range(n - r0):
        known[:, r, r0 + r - 1] = 1.0
    worst, checked = 0.0, 0
    for s in range(seeds):
        if not np.isfinite(a["loss"][s]) or not np.all(np.isfinite(maps[s])):
            continue
        uni = np.zeros((heads, n - r0, n))
        perm = np.zeros((heads, n - r0, n))
        for h in range(heads):
            for r in range(n - r0):
                k = visible(r0 + r)
                uni[h, r, :k] = 1.0 / k
                perm[h, r, :k] = permute(int(a["seeds"][s]), h, 0, r, maps[s][h, r, :k])
        partner = s ^ 1
        order = matched(maps[s], maps[partner])
        patched = np.stack([maps[partner][order[h]] for h in range(heads)])
        korder = matched(maps[s], known)
        kn = np.stack([known[korder[h]] for h in range(heads)])
        base, f0 = run(s, full(maps[s]))
        for name, rep in (("uniform", uni), ("permuted", perm), ("patched", patched),
                          ("known", kn)):
            loss, f = run(s, full(rep))
            dl = loss - a["test_loss"][s]
            dist = np.sqrt(((f - a["out"][s]) ** 2).sum() / (n - r0))
            for got, want in ((a["dl_" + name][s], dl), (a["out_" + name][s], dist)):
                err = abs(got - want) / (1 + abs(base) + abs(want))
                worst = max(worst, err)
                if not err < 1e-9:
                    print(f"seed {s} {name}: demo {got!r}, numpy {want!r}")
                    return 1
            checked += 1
    print(f"{checked} interventions of {seeds} seeds agree with numpy; largest relative "
          f"difference {worst:.3g}")
    return 0 if checked >= 4 * seeds // 2 else 1


if __name__ == "__main__":
    sys.exit(main())
