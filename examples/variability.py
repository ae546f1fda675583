"""How much does one trained attention head depend on its seed? Trains a head from many seeds
with attnlab (the attention-sweep table) on a task with more than one way to solve it, then
plots every seed's final loss, how far its attention map lies from the mean map (Jensen-Shannon
divergence), the mean map, and the map of the seed farthest from it: the losses agree, the maps
do not.

    pip install '.[examples]'      # attnlab and matplotlib
    python examples/variability.py [--task previous] [--words 6] [--seeds 500] [--steps 200]
                                   [--out variability.png] [--force]
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")  # files only: runs without a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import attnlab  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="previous", choices=["lesson", "previous", "reverse", "random"],
                    help="previous: each word outputs the one before (default)")
    ap.add_argument("--words", type=int, default=6, help="words n; d_model = d_k = n")
    ap.add_argument("--causal", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--seeds", type=int, default=500)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--out", default="variability.png")
    ap.add_argument("--force", action="store_true", help="replace --out if it exists")
    a = ap.parse_args(argv)
    # The destination, before any training: its folder there, and no file replaced unasked.
    folder = os.path.dirname(os.path.abspath(a.out))
    if not os.path.isdir(folder):
        ap.error(f"--out {a.out}: no folder {folder}")
    if os.path.lexists(a.out) and not a.force:
        ap.error(f"--out {a.out} exists (--force replaces it)")

    n = a.words
    t = attnlab.sweep("attention", task=a.task, words=n, d_model=n, d_k=n, causal=a.causal,
                      seeds=range(0, a.seeds), steps=a.steps)
    s = t.per_seed  # maps (seeds, rows, n), seeds, loss, jsd, out
    finite = np.isfinite(s["jsd"])
    print(f"{len(s['seeds'])} seeds, {a.steps} steps: median loss {np.median(s['loss']):.3g}, "
          f"JSD to the mean map from {np.min(s['jsd'][finite]):.3g} to "
          f"{np.max(s['jsd'][finite]):.3g} (median {np.median(s['jsd'][finite]):.3g})")

    threshold = np.log10(t.provenance["converged_below"])  # the table's --converged-below
    rows = s["maps"].shape[-2]  # the loss rows: the last `rows` queries
    log_loss = np.log10(s["loss"] + 1e-16)  # a loss of exactly 0 shows at -16
    mean_map = s["maps"][finite].mean(axis=0)
    far = int(np.flatnonzero(finite)[np.argmax(s["jsd"][finite])])
    fig, ax = plt.subplots(1, 4, figsize=(17, 4))
    ax[0].hist(log_loss[np.isfinite(log_loss)], bins=30, color="#6f9fd8")
    ax[0].set(xlabel="log10(final loss + 1e-16)", ylabel="seeds", title="final loss")
    for k in (0, 1):
        ax[k].axvline(threshold, color="#888888", linestyle="--", linewidth=1,
                      label=f"converged below 1e{threshold:.0f}")
    ax[0].legend(loc="upper right", fontsize=8)
    ax[1].scatter(log_loss[finite], s["jsd"][finite], s=8, color="#6f9fd8", label="a seed")
    ax[1].scatter(log_loss[far], s["jsd"][far], s=40, facecolors="none", edgecolors="#c0392b",
                  label=f"seed {int(s['seeds'][far])}, the farthest (right)")
    ax[1].legend(loc="best", fontsize=8)
    ax[1].set(xlabel="log10(final loss + 1e-16)", ylabel="JSD to the mean map (nats)",
              title="map vs. loss, one point per seed")
    for k, (m, title) in enumerate([(mean_map, "mean attention map"),
                                    (s["maps"][far], f"seed {int(s['seeds'][far])}: "
                                                     f"farthest from the mean")]):
        im = ax[2 + k].imshow(m, vmin=0, vmax=1, cmap="Blues")
        ax[2 + k].set(xlabel="key", ylabel="query", title=title,
                      xticks=range(n), yticks=range(rows),
                      yticklabels=[str(q) for q in range(n - rows, n)])
        if n <= 8:
            for i in range(rows):
                for j in range(n):
                    ax[2 + k].text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=7,
                                   color="white" if m[i, j] > 0.6 else "black")
    fig.colorbar(im, ax=ax[3])
    fig.suptitle(f"attention-sweep: task {a.task}, {n} words, d_model = d_k = {n}"
                 f"{', causal' if a.causal else ''}; {len(s['seeds'])} seeds x {a.steps} steps, "
                 f"{int(finite.sum())} with a finite map")
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)
    print(f"wrote {a.out}")
    return fig


if __name__ == "__main__":
    main()
