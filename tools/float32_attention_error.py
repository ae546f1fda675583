#!/usr/bin/python3
"""float32 attention's error against float64, by the size of the scores (docs/ATTENTION.md).

Usage: tools/float32_attention_error.py DEMO   (Debian's python3 with numpy; writes *.npy and
o*/ folders in the current folder)

40 random batches (4 entries, n and d in 8..64, x times 5..40 so that scores reach 1e4):
`demo attention --dtype f32` and numpy's float32 softmax(Q K^T / sqrt(d)) V, each against
`demo attention --dtype f64` on the same (float32) inputs. Over the rows whose largest |score| S
lies in [6e3, 1.4e4]: the largest weight error / (2^-24 S) and output error / (2^-24 S max|v|).
"""
import numpy as np, subprocess, sys
demo = sys.argv[1]
rng = np.random.default_rng(2)
u = 2.0**-24
worst = {"w_demo":0,"w_np":0,"o_demo":0,"o_np":0}
maxabs = {"w_demo":0,"w_np":0}
for trial in range(40):
    n = int(rng.choice([8,16,32,64])); d = int(rng.choice([8,16,32,64]))
    sx = rng.uniform(5, 40)
    x = (rng.standard_normal((4, n, d)) * sx).astype(np.float32)
    w = [rng.standard_normal((d, d)).astype(np.float32) for _ in range(3)]
    for name, a in zip(["x","wq","wk","wv"], [x]+w): np.save(name+".npy", a)
    res = {}
    for dt in ["f32","f64"]:
        subprocess.run([demo,"attention","--x","x.npy","--w-q","wq.npy","--w-k","wk.npy","--w-v","wv.npy","--device","cpu","--dtype",dt,"--out","o"+dt,"--force","--no-plots","-q","--format","csv"],check=True,stdout=subprocess.DEVNULL)
        res[dt] = {k: np.load(f"o{dt}/{k}.npy").astype(np.float64) for k in ["scores","weights","out","v"]}
    q=x@w[0]; k=x@w[1]; v=x@w[2]
    s=((q@k.transpose(0,2,1))/np.float32(np.sqrt(d))).astype(np.float32)
    e=np.exp(s-s.max(-1,keepdims=True)); p=e/e.sum(-1,keepdims=True); o=p@v
    ref=res["f64"]
    # per row scale: max |score| of the row
    smax_row=np.abs(ref["scores"]).max(-1)  # (B,n)
    vmax=np.abs(ref["v"]).max(axis=(1,2))[:,None]  # per entry
    wd=np.abs(res["f32"]["weights"]-ref["weights"]).max(-1); wn=np.abs(p-ref["weights"]).max(-1)
    od=np.abs(res["f32"]["out"]-ref["out"]).max(-1); on=np.abs(o-ref["out"]).max(-1)
    sel = (smax_row>=6e3)&(smax_row<=1.4e4)
    if not sel.any(): continue
    worst["w_demo"]=max(worst["w_demo"], (wd/(u*smax_row))[sel].max())
    worst["w_np"]=max(worst["w_np"], (wn/(u*smax_row))[sel].max())
    worst["o_demo"]=max(worst["o_demo"], (od/(u*smax_row*vmax))[sel].max())
    worst["o_np"]=max(worst["o_np"], (on/(u*smax_row*vmax))[sel].max())
    maxabs["w_demo"]=max(maxabs["w_demo"], wd[sel].max()); maxabs["w_np"]=max(maxabs["w_np"], wn[sel].max())
print("rows with max|score| in [6e3, 1.4e4]: worst ratios", {k: round(v,3) for k,v in worst.items()}, "max weight errors", maxabs)
