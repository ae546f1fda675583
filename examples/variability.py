"""How much does one trained attention head depend on its seed? Trains the lesson's head from
many seeds with attnlab (the attention-sweep table), then plots every seed's final loss and how
far its attention map lies from the mean map (Jensen-Shannon divergence), and the mean map.

    python examples/variability.py [--seeds 200] [--steps 1000] [--out variability.png]
"""

import argparse

import matplotlib

matplotlib.use("Agg")  # files only: runs without a display
import matplotlib.pyplot as plt
import numpy as np

import attnlab


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--out", default="variability.png")
    a = ap.parse_args()

    t = attnlab.sweep("attention", seeds=range(0, a.seeds), steps=a.steps)
    s = t.per_seed  # seeds, maps (seeds, rows, n), loss, jsd, out
    finite = np.isfinite(s["jsd"])
    print(f"{len(s['seeds'])} seeds, {a.steps} steps: median loss {np.median(s['loss']):.3g}, "
          f"median JSD to the mean map {np.median(s['jsd'][finite]):.3g}")

    log_loss = np.log10(s["loss"] + 1e-16)  # a loss of exactly 0 shows at -16
    fig, ax = plt.subplots(1, 3, figsize=(13, 4))
    ax[0].hist(log_loss[np.isfinite(log_loss)], bins=30, color="#6f9fd8")
    ax[0].set(xlabel="log10(final loss + 1e-16)", ylabel="seeds", title="final loss")
    ax[1].scatter(log_loss[finite], s["jsd"][finite], s=8, color="#6f9fd8")
    ax[1].set(xlabel="log10(final loss + 1e-16)", ylabel="JSD to the mean map",
              title="map vs. loss")
    mean_map = s["maps"][finite].mean(axis=0)
    im = ax[2].imshow(mean_map, vmin=0, vmax=1, cmap="Blues")
    ax[2].set(xlabel="key", ylabel="query (loss rows)", title="mean attention map")
    fig.colorbar(im, ax=ax[2])
    fig.suptitle(f"attention-sweep: {len(s['seeds'])} seeds ({t.provenance['command_line']})")
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
