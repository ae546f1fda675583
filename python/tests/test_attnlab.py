"""The Python package against independent references: numpy's own arithmetic, and demo's
files and messages for the same request (bit for bit). ctest runs this folder (label `python`)
with ATTNLAB_DEMO naming the demo built beside the module; test_inputs.py holds the refusals of
bad arguments and files."""

import json
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import attnlab
from helpers import demo, run_python, same_bits, write_inputs


def numpy_attention(x, wq, wk, wv, heads=1, causal=False, scale=None):
    """The textbook formula in float64 numpy, per head, for comparison within rounding."""
    x, wq, wk, wv = (np.asarray(a, dtype=np.float64) for a in (x, wq, wk, wv))
    q, k, v = x @ wq, x @ wk, x @ wv
    n, dk, dv = x.shape[-2], q.shape[-1] // heads, v.shape[-1] // heads
    scale = 1 / np.sqrt(dk) if scale is None else scale
    outs, ws = [], []
    for h in range(heads):
        qh, kh, vh = q[..., h * dk:(h + 1) * dk], k[..., h * dk:(h + 1) * dk], v[..., h * dv:(h + 1) * dv]
        s = scale * qh @ np.swapaxes(kh, -1, -2)
        if causal:
            s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        ws.append(p)
        outs.append(p @ vh)
    return q, k, v, np.stack(ws, -3) if heads > 1 else ws[0], np.concatenate(outs, -1)


# ---- attention ------------------------------------------------------------------------------

def test_lesson_checkpoint_matches_numpy():
    x = np.array([[2.0, 0], [1, 1], [0, 2]])
    swap = np.array([[0.0, 1], [1, 0]])
    r = attnlab.attention(x, np.eye(2), swap, np.eye(2))
    q, k, v, w, out = numpy_attention(x, np.eye(2), swap, np.eye(2))
    np.testing.assert_allclose(r.out, out, rtol=1e-14)
    np.testing.assert_allclose(r.weights, w, rtol=1e-14)
    assert r.out.dtype == np.float64 and r.out.shape == (3, 2)
    np.testing.assert_allclose(r.weights.sum(-1), 1, rtol=1e-15)


@pytest.mark.parametrize("dtype,heads,causal", [(np.float32, 1, False), (np.float64, 2, True),
                                                (np.float32, 4, True)])
def test_batched_heads_match_numpy(dtype, heads, causal):
    g = np.random.default_rng(1)
    x = g.standard_normal((2, 3, 7, 8)).astype(dtype)
    wq, wk, wv = (g.standard_normal((8, 8)).astype(dtype) for _ in range(3))
    r = attnlab.attention(x, wq, wk, wv, heads=heads, causal=causal)
    q, k, v, w, out = numpy_attention(x, wq, wk, wv, heads, causal)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for got, want in ((r.q, q), (r.v, v), (r.weights, w), (r.out, out)):
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    if causal:
        assert np.all(np.isneginf(r.scores[..., 0, 1])) and np.all(r.weights[..., 0, 1] == 0)


@pytest.mark.parametrize("dtype,heads,causal,per_entry", [
    (np.float32, 1, False, False), (np.float64, 2, True, False), (np.float32, 2, False, True)])
def test_attention_is_the_cli_bit_for_bit(tmp_path, dtype, heads, causal, per_entry):
    g = np.random.default_rng(7)
    x = g.standard_normal((3, 9, 6)).astype(dtype)
    shape = (3, 6, 4) if per_entry else (6, 4)
    ws = {n: g.standard_normal(shape).astype(dtype) for n in ("w_q", "w_k", "w_v")}
    paths = write_inputs(tmp_path, dict(x=x, **ws))
    out = tmp_path / "out"
    args = ["attention", "--x", paths["x"], "--w-q", paths["w_q"], "--w-k", paths["w_k"], "--w-v",
            paths["w_v"], "--heads", heads, "--out", out, "--no-plots", "-q"]
    demo(*(args + (["--causal"] if causal else [])))
    r = attnlab.attention(x, ws["w_q"], ws["w_k"], ws["w_v"], heads=heads, causal=causal)
    for name in ("q", "k", "v", "scores", "weights", "out"):
        assert same_bits(r[name], np.load(out / f"{name}.npy")), name
    loaded = attnlab.load(out)  # and load reads the folder back as the same result
    assert all(same_bits(loaded[n], r[n]) for n in r)
    assert loaded.provenance["heads"] == heads


def test_attention_reads_its_inputs_in_place():
    # numpy reports its allocations to tracemalloc: a copy of x (8 MiB) would show in the peak.
    import tracemalloc
    x = np.ones((256, 64, 128), np.float32)
    x.flags.writeable = False  # read-only arrays are read as they are
    w = np.eye(128, 64, dtype=np.float32)
    tracemalloc.start()
    r = attnlab.attention(x, w, w, w)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < x.nbytes / 8
    assert r.out.dtype == np.float32 and r.out.shape == (256, 64, 64)
    assert not any(np.shares_memory(r[name], x) for name in r)


def test_attention_refusals():
    x, w = np.ones((3, 2)), np.eye(2)
    cases = [
        (dict(x=np.ones((3, 3))), "w_q: shape (2, 2) does not fit x shape (3, 3): it needs d_model = 3 rows"),
        (dict(w_k=np.ones((2, 3))), "w_k: shape (2, 3) gives d_k = 3, but w_q shape (2, 2) gives d_k = 2"),
        (dict(heads=3), "heads 3: d_k = 2 (w_q) is not divisible by it"),
        (dict(scale=-1.0), "scale: expected a finite number > 0 and <= 1e+300, got '-1.0'"),
        (dict(device="tpu"), "device: expected one of auto, cpu, cuda, got 'tpu' (did you mean cpu?)"),
        (dict(x=np.ones(3)), "x: shape (3,): expected (n, d_model) or (batch..., n, d_model)"),
        (dict(x=np.array([["a"]])), "x: expected real numbers, got an array of dtype <U1"),
    ]
    for change, message in cases:
        args = dict(x=x, w_q=w, w_k=w, w_v=w)
        args.update(change)
        with pytest.raises(ValueError) as e:
            attnlab.attention(**args)
        assert str(e.value) == message


def test_non_finite_inputs_and_infinite_scores_are_warned_of_as_demo_does(tmp_path):
    # demo attention's warnings, as RuntimeWarnings: the first non-finite input and where, and
    # the visible scores beyond the dtype's range; finite inputs say nothing.
    x, w = np.array([[2.0, 0], [1, 1], [0, 2], [1, 0]]), np.eye(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        attnlab.attention(x, w, w, w, causal=True)
    x[3, 0] = np.nan
    with pytest.warns(RuntimeWarning) as caught:
        r = attnlab.attention(x, w, w, w, causal=True)
    said = [str(c.message) for c in caught]
    assert said == ["x holds nan at [3, 0] (the first non-finite input); the outputs that "
                    "depend on it are non-finite, masked keys excepted"]
    assert np.isnan(r.out[3]).all() and np.isfinite(r.out[:3]).all()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    d = demo("attention", "--x", tmp_path / "x.npy", "--w-q", tmp_path / "w.npy", "--w-k",
             tmp_path / "w.npy", "--w-v", tmp_path / "w.npy", "--causal", "--format", "csv")
    assert "holds nan at [3, 0] (the first non-finite input)" in d.stderr
    big = np.full((2, 1), 1e30, dtype=np.float32)
    with pytest.warns(RuntimeWarning, match=r"^4 visible scores beyond float32's range"):
        attnlab.attention(big, np.ones((1, 1), np.float32), np.ones((1, 1), np.float32),
                          np.ones((1, 1), np.float32))
    with pytest.warns(RuntimeWarning, match=r"^3 visible scores beyond float32's range"):
        attnlab.attention(big, np.ones((1, 1), np.float32), np.ones((1, 1), np.float32),
                          np.ones((1, 1), np.float32), causal=True)


@pytest.mark.skipif(attnlab._core.built_with_cuda, reason="a CUDA build may have a GPU")
def test_cuda_on_a_cpu_build_is_a_value_error():
    with pytest.raises(ValueError, match="CUDA"):
        attnlab.attention(np.ones((2, 2)), np.eye(2), np.eye(2), np.eye(2), device="cuda")


# ---- tables ---------------------------------------------------------------------------------

def same_table(a, b):
    assert list(a) == list(b)
    for c in a:
        x, y = a[c], b[c]
        if x.dtype == object:
            assert list(x) == list(y), c
        else:
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), c


def test_options_are_the_declarations():
    opts = attnlab.options("dk-std")
    assert opts["d_k"]["flag"] == "--d-k" and opts["d_k"]["default"] == "2,64,512"
    help_text = demo("--table", "dk-std", "--help").stdout
    for o in opts.values():  # every declared option is one demo shows, with its default
        assert o["flag"] in help_text and f"[{o['default']}]" in help_text
    assert set(attnlab.tables()) >= {"dk-std", "training-sweep", "attention-sweep"}
    assert "d_k" in attnlab.options("attention-sweep")


def test_table_is_the_cli_bit_for_bit(tmp_path):
    demo("--table", "dk-std", "--d-k", "3,17", "--samples", "2000", "--seed", "5", "--out", tmp_path,
         "--no-plots", "-q")
    t = attnlab.dk_std(d_k=[3, 17], samples=2000, seed=5)
    cli = attnlab.load(tmp_path / "dk-std.json")
    same_table(t, cli)
    assert t.provenance["command_line"] == "demo --table dk-std --d-k 3,17 --samples 2000 --seed 5"
    assert t.provenance["backend"] == cli.provenance["backend"]
    assert t["d_k"].tolist() == [3, 17]
    assert attnlab.load(tmp_path)["dk-std"].title == t.title  # a tables' --out folder


def test_table_round_trips_through_json(tmp_path):
    t = attnlab.table("softmax_saturation", d_k="1,4", samples=300)
    printed = demo("--table", "softmax-saturation", "--d-k", "1,4", "--samples", "300", "--format",
                   "json", "-q").stdout
    (tmp_path / "s.json").write_text(printed)
    same_table(t, attnlab.load(tmp_path / "s.json"))


def test_pandas_reads_a_table():
    pd = pytest.importorskip("pandas")
    t = attnlab.table("rnn-decay", n=[1, 2, 3])
    assert list(pd.DataFrame(t).columns) == list(t) and len(pd.DataFrame(t)) == 3


def test_table_refusals_are_the_cli_lines(tmp_path):
    with pytest.raises(ValueError) as e:
        attnlab.dk_std(samples=-3)
    line = demo("--table", "dk-std", "--samples", "-3", check=False).stderr.strip().splitlines()[0]
    assert line == "demo: error: " + str(e.value)
    with pytest.raises(ValueError, match="no option 'sample'"):
        attnlab.dk_std(sample=10)
    with pytest.raises(ValueError, match="no table"):
        attnlab.table("nope")
    existing = tmp_path / "rows.csv"
    existing.write_text("")
    with pytest.raises(OSError, match="exists"):
        attnlab.table("training-sweep", seeds="0:2", steps=2, per_seed=existing)
    # A folder that takes no file (/proc refuses even root): OSError naming the argument, before
    # any work, for both sweeps' per_seed files.
    with pytest.raises(OSError, match="^per_seed /proc/rows.csv: cannot write there"):
        attnlab.table("training-sweep", seeds="0:2", steps=2, per_seed="/proc/rows.csv")
    with pytest.raises(OSError, match="^per_seed /proc/rows.npy: cannot write there"):
        attnlab.sweep("attention", seeds="0:2", steps=2, per_seed="/proc/rows.npy")
    with pytest.raises(OSError):
        attnlab.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError):
        attnlab.load(tmp_path / "bad.json")


def test_sweep_of_a_grid_says_to_use_table():
    # sweep() without per_seed names no file: the refusal names sweep() and table(), not
    # --per-seed.
    with pytest.raises(ValueError, match=r"^sweep\(\) returns one configuration's per-seed "
                                         r"arrays; a grid of 2 configurations: run "
                                         r"table\('attention-sweep', \.\.\.\)"):
        attnlab.sweep("attention", seeds="0:4", steps=3, causal=[True, False])


def test_training_sweep_per_seed_is_the_cli(tmp_path):
    rows = tmp_path / "rows.csv"
    demo("--table", "training-sweep", "--seeds", "0:6", "--steps", "40", "--grad", "analytic",
         "--per-seed", rows, "--out", tmp_path / "o", "--no-plots", "-q")
    t = attnlab.sweep("training", seeds=range(0, 6), steps=40, grad="analytic")
    same_table(t, attnlab.load(tmp_path / "o" / "training-sweep.json"))
    lines = rows.read_text().splitlines()
    assert len(t.per_seed["seed"]) == len(lines) - 1
    for i, line in enumerate(lines[1:]):
        config, seed, *values = line.split(",")
        assert t.per_seed["config"][i] == config and int(t.per_seed["seed"][i]) == int(seed)
        assert [float(v) for v in values] == [t.per_seed[c][i] for c in
                                              ("weight_on_apple", "out_x", "out_y", "loss")]


def test_attention_sweep_per_seed_is_the_cli(tmp_path):
    stem = tmp_path / "maps"
    demo("--table", "attention-sweep", "--seeds", "0:5", "--steps", "30", "--per-seed",
         f"{stem}.npy", "-q")
    t = attnlab.sweep("attention", seeds="0:5", steps=30)
    # The provenance's command line is the demo command of the same table: the temporary folder
    # that held the per-seed files is in no command.
    assert t.provenance["command_line"] == ("demo --table attention-sweep --seeds 0:5 "
                                            "--steps 30")
    kept = attnlab.sweep("attention", seeds="0:5", steps=30, per_seed=tmp_path / "kept.npy")
    assert f"--per-seed {tmp_path / 'kept.npy'}" in kept.provenance["command_line"]
    assert same_bits(t.per_seed["maps"], np.load(f"{stem}.npy"))
    for name in ("seeds", "loss", "jsd", "out"):
        assert same_bits(t.per_seed[name], np.load(f"{stem}.{name}.npy")), name
    assert t.per_seed["seeds"].tolist() == list(range(5))


# ---- the interpreter ------------------------------------------------------------------------

def test_ctrl_c_raises_keyboard_interrupt_and_leaves_nothing(tmp_path):
    # A sweep that would run for hours, stopped by SIGINT from a timer: KeyboardInterrupt, no
    # per-seed file (not even a temporary), and the next call runs normally.
    r = run_python(f"""
        import os, signal, threading, attnlab
        folder = {str(tmp_path)!r}
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            attnlab.sweep("training", seeds="0:1000000000", steps=3000,
                          per_seed=os.path.join(folder, "rows.csv"))
            print("finished")
        except KeyboardInterrupt:
            print("KeyboardInterrupt", sorted(os.listdir(folder)))
        print(attnlab.table("rnn-decay", n=[1])["n"].tolist())
        """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["KeyboardInterrupt []", "[1]"]


@pytest.mark.parametrize("need_weights", [True, False])
def test_ctrl_c_stops_attention(need_weights):
    r = run_python(f"""
        import os, signal, threading, numpy as np, attnlab
        x = np.ones((64, 256, 512), np.float32)
        w = np.ones((512, 256), np.float32)
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            for _ in range(1000):
                attnlab.attention(x, w, w, w, need_weights={need_weights})
            print("finished")
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
        """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "KeyboardInterrupt"


def test_the_gil_is_released_while_kernels_run():
    # This thread runs Python code while another thread is inside a table: had the call held the
    # GIL, this thread would run again only once the call had ended.
    import time
    started = threading.Event()

    def work():
        started.set()
        attnlab.sweep("training", seeds="0:4000", steps=3000, grad="analytic")

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    time.sleep(0.2)
    alive = t.is_alive()
    t.join()
    assert alive


def test_progress_is_off_by_default(capfd):
    attnlab.dk_std(samples=1000)
    assert capfd.readouterr().err == ""


def test_the_example_runs(tmp_path):
    # As the README runs it, and its figure's title: the configuration and seeds, no path.
    pytest.importorskip("matplotlib")
    import importlib.util
    import tempfile
    script = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "variability.py")
    spec = importlib.util.spec_from_file_location("variability", script)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = tmp_path / "v.png"
    fig = example.main(["--seeds", "12", "--steps", "40", "--out", str(out)])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    title = fig._suptitle.get_text()
    assert "task previous, 6 words" in title and "12 seeds x 40 steps" in title
    assert tempfile.gettempdir() not in title and "attnlab-" not in title
    # Its destination is checked before any training: an existing file without --force, and a
    # missing folder, are refused in one line (argparse's exit 2).
    for args in (["--out", str(out)], ["--out", str(tmp_path / "no" / "v.png")]):
        with pytest.raises(SystemExit) as e:
            example.main(["--seeds", "12", "--steps", "40"] + args)
        assert e.value.code == 2
    example.main(["--seeds", "12", "--steps", "40", "--out", str(out), "--force"])


# ---- masks ----------------------------------------------------------------------------------

def random_mask_case(g, dtype):
    x = g.standard_normal((3, 2, 6, 8)).astype(dtype)
    wq, wk, wv = (g.standard_normal((8, 8)).astype(dtype) for _ in range(3))
    mask = g.random((3, 2, 1, 6, 6)) < 0.6  # broadcast over the heads
    mask[0, 0, 0, 2, :] = False  # one row with no key left
    lengths = g.integers(1, 7, size=(3, 2))
    return x, wq, wk, wv, mask, lengths


def test_mask_matches_numpy_and_empty_rows_are_zero():
    g = np.random.default_rng(3)
    x, wq, wk, wv, mask, lengths = random_mask_case(g, np.float64)
    r = attnlab.attention(x, wq, wk, wv, heads=2, mask=mask, lengths=lengths)
    keep = np.broadcast_to(mask, (3, 2, 2, 6, 6)) & (np.arange(6) < lengths[..., None])[..., None, None, :]
    q, k, v = x @ wq, x @ wk, x @ wv
    for h in range(2):
        s = (q[..., 4 * h:4 * h + 4] @ np.swapaxes(k[..., 4 * h:4 * h + 4], -1, -2)) / 2
        s = np.where(keep[:, :, h], s, -np.inf)
        m = s.max(-1, keepdims=True)
        p = np.where(keep[:, :, h], np.exp(s - np.where(np.isfinite(m), m, 0)), 0)
        p = p / np.where(p.sum(-1, keepdims=True) > 0, p.sum(-1, keepdims=True), 1)
        np.testing.assert_allclose(r.weights[:, :, h], p, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(r.out[..., 4 * h:4 * h + 4], p @ v[..., 4 * h:4 * h + 4],
                                   rtol=1e-12, atol=1e-14)
    assert np.all(r.weights[0, 0, :, 2] == 0) and np.all(r.out[0, 0, 2] == 0)
    assert np.all(np.isneginf(r.scores[~keep]))


def test_mask_against_pytorch():
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(11)
    for _ in range(5):
        x, wq, wk, wv, mask, lengths = random_mask_case(g, np.float64)
        keep = np.broadcast_to(mask, (3, 2, 2, 6, 6)) & (np.arange(6) < lengths[..., None])[..., None, None, :]
        keep = keep | np.eye(6, dtype=bool)  # no empty row
        r = attnlab.attention(x, wq, wk, wv, heads=2, mask=keep)
        t = lambda a: torch.from_numpy(np.ascontiguousarray(a))
        split = lambda m: t(m).reshape(3, 2, 6, 2, 4).transpose(2, 3)  # (..., heads, n, d)
        o = torch.nn.functional.scaled_dot_product_attention(
            split(x @ wq), split(x @ wk), split(x @ wv), attn_mask=t(keep))
        np.testing.assert_allclose(r.out, o.transpose(2, 3).reshape(3, 2, 6, 8).numpy(),
                                   rtol=1e-12, atol=1e-13)


def test_a_causal_mask_is_causal_bit_for_bit():
    g = np.random.default_rng(5)
    x = g.standard_normal((4, 9, 8)).astype(np.float32)
    w = g.standard_normal((8, 8)).astype(np.float32)
    a = attnlab.attention(x, w, w, w, causal=True)
    b = attnlab.attention(x, w, w, w, mask=np.tril(np.ones((9, 9), bool)))
    assert all(same_bits(a[n], b[n]) for n in a)


@pytest.mark.parametrize("dtype,heads,mask_shape,with_lengths", [
    (np.float32, 2, (3, 1, 6, 6), True), (np.float64, 1, (6, 6), False),
    (np.float64, 2, (2, 1, 6), True)])
def test_mask_and_lengths_are_the_cli_bit_for_bit(tmp_path, dtype, heads, mask_shape, with_lengths):
    g = np.random.default_rng(17)
    x = g.standard_normal((3, 6, 8)).astype(dtype)
    ws = {n: g.standard_normal((8, 8)).astype(dtype) for n in ("w_q", "w_k", "w_v")}
    mask = g.random(mask_shape) < 0.6
    empty_row = mask_shape[-2] == 6  # a mask with a query axis: query 1 with no key left
    if empty_row:
        mask[..., 1, :] = False
    lengths = np.array([6, 0, 3], dtype=np.int32)
    paths = write_inputs(tmp_path, dict(x=x, **ws))
    np.save(tmp_path / "mask.npy", mask)
    np.save(tmp_path / "lengths.npy", lengths)
    out = tmp_path / "out"
    args = ["attention", "--x", paths["x"], "--w-q", paths["w_q"], "--w-k", paths["w_k"], "--w-v",
            paths["w_v"], "--heads", heads, "--mask", tmp_path / "mask.npy", "--out", out,
            "--no-plots", "-q"]
    demo(*(args + (["--lengths", tmp_path / "lengths.npy"] if with_lengths else [])))
    r = attnlab.attention(x, ws["w_q"], ws["w_k"], ws["w_v"], heads=heads, mask=mask,
                          lengths=lengths if with_lengths else None)
    for name in ("q", "k", "v", "scores", "weights", "out"):
        assert same_bits(r[name], np.load(out / f"{name}.npy")), name
    if empty_row:
        assert np.all(r.weights[..., 1, :] == 0) and np.all(r.out[:, 1] == 0)
    if with_lengths:
        assert np.all(r.out[1] == 0)  # length 0: every row of entry 1 is empty
    doc = json.loads((out / "attention.json").read_text())
    assert doc["provenance"]["masked"] and doc["provenance"]["inputs"]["mask"]["shape"] == list(mask_shape)


def test_mask_refusals():
    x, w = np.ones((3, 2)), np.eye(2)
    with pytest.raises(ValueError, match="mask: expected booleans"):
        attnlab.attention(x, w, w, w, mask=np.ones((3, 3)))
    with pytest.raises(ValueError, match="does not broadcast"):
        attnlab.attention(x, w, w, w, mask=np.ones((2, 3), bool))
    with pytest.raises(ValueError, match="lengths: expected whole numbers"):
        attnlab.attention(np.ones((2, 3, 2)), w, w, w, lengths=[1.5, 2])
    with pytest.raises(ValueError, match=r"lengths: entry \(1,\) is 4, outside 0 to n = 3"):
        attnlab.attention(np.ones((2, 3, 2)), w, w, w, lengths=np.array([1, 4]))
    with pytest.raises(ValueError, match="takes no mask"):
        attnlab.attention(x, w, w, w, mask=np.ones((3, 3), bool), device="cuda")


# ---- a given map -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,heads,causal,masked", [
    (np.float64, 1, False, False), (np.float32, 2, True, False), (np.float64, 2, False, True)])
def test_the_computed_map_given_back_is_the_same_output(dtype, heads, causal, masked):
    # Given back as the map, the computed weights take the softmax's place in the same chain of
    # operations: every output equals the plain call's, bit for bit.
    g = np.random.default_rng(23)
    x = g.standard_normal((3, 7, 8)).astype(dtype)
    wq, wk, wv = (g.standard_normal((8, 8)).astype(dtype) for _ in range(3))
    mask = g.random((3, heads, 7, 7)) < 0.6 if masked else None
    r = attnlab.attention(x, wq, wk, wv, heads=heads, causal=causal, mask=mask)
    p = attnlab.attention(x, wq, wk, wv, heads=heads, causal=causal, mask=mask, map=r.weights)
    assert all(same_bits(r[n], p[n]) for n in r), [n for n in r if not same_bits(r[n], p[n])]
    assert p.provenance["map_given"] and not r.provenance["map_given"]


def test_a_given_map_is_numpy_map_times_values():
    # Any map, rows not summing to 1 included (a zero row ablates), broadcast over the batch:
    # out = map @ v per head over the visible keys, the scores as without a map.
    g = np.random.default_rng(29)
    x = g.standard_normal((2, 5, 6, 8))
    wq, wk, wv = (g.standard_normal((8, 8)) for _ in range(3))
    given = g.random((2, 6, 6))  # (heads, n, n), broadcast over the batch axes
    given[1, 3] = 0
    r = attnlab.attention(x, wq, wk, wv, heads=2, causal=True, map=given)
    plain = attnlab.attention(x, wq, wk, wv, heads=2, causal=True)
    v = x @ wv
    visible = np.tril(np.ones((6, 6), bool))
    for h in range(2):
        ph = np.where(visible, given[h], 0)
        np.testing.assert_array_equal(r.weights[..., h, :, :], np.broadcast_to(ph, (2, 5, 6, 6)))
        np.testing.assert_allclose(r.out[..., 4 * h:4 * h + 4], ph @ v[..., 4 * h:4 * h + 4],
                                   rtol=1e-12, atol=1e-13)
    assert np.all(r.out[..., 3, 4:] == 0)
    assert same_bits(r.scores, plain.scores)
    uniform = attnlab.attention(x, wq, wk, wv, map=np.full((6, 6), 1 / 6))
    np.testing.assert_allclose(uniform.out, np.broadcast_to(v.mean(-2, keepdims=True), v.shape),
                               rtol=1e-12, atol=1e-13)


def test_map_refusals():
    x, w = np.ones((3, 2)), np.eye(2)
    with pytest.raises(ValueError, match=r"map: shape \(2, 3\) does not broadcast to the weights' "
                                          r"shape \(3, 3\)"):
        attnlab.attention(x, w, w, w, map=np.ones((2, 3)))
    with pytest.raises(ValueError, match="map: expected real numbers"):
        attnlab.attention(x, w, w, w, map=np.ones((3, 3), complex))
    with pytest.raises(ValueError, match=r"map: entry \(1, 2\) is nan, not a finite number"):
        bad = np.ones((3, 3))
        bad[1, 2] = np.nan
        attnlab.attention(x, w, w, w, map=bad)
    with pytest.raises(ValueError, match="takes no map"):
        attnlab.attention(x, w, w, w, map=np.ones((3, 3)), device="cuda")


# ---- version 3: many inputs ------------------------------------------------------------------

REFERENCE = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "oracle",
                         "variability_reference.py")


def _reference(args):
    """tests/oracle/variability_reference.py's rows (numpy float64, the spec alone) as {column: array}."""
    r = subprocess.run([sys.executable, REFERENCE, *args], capture_output=True, text=True,
                       check=True)
    lines = [l.split(",") for l in r.stdout.strip().splitlines()]
    return {h: np.array([float(row[i]) for row in lines[1:]]) for i, h in enumerate(lines[0])}


@pytest.mark.parametrize("task,extra", [
    ("teacher", {"d_model": 4}),
    ("previous", {"vocab": 3, "d_model": 7}),  # d_model: the vocabulary plus the positions
])
def test_many_inputs_per_seed_is_the_numpy_reference(task, extra):
    common = dict(task=task, words=4, d_k=4, steps=25, lr=0.05, init_scale=0.5, inputs=3,
                  test_inputs=2, map_inputs=2, **extra)
    t = attnlab.sweep("attention", seeds="0:5", **common)
    args = ["--seeds", "0:5"]
    for k, v in common.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    ref = _reference(args)
    ps = t.per_seed
    assert ps["seeds"].tolist() == list(range(5))
    for name in ("loss", "start_loss", "test_loss", "jsd_to_known"):
        assert name in ps, sorted(ps)
        np.testing.assert_allclose(ps[name], ref[name], rtol=1e-9, atol=1e-12, err_msg=name)
    # maps: (seeds, measured inputs, rows, n); the reference's p_in{b}_i_j columns
    maps = ps["maps"]
    assert maps.shape[:2] == (5, 2), maps.shape
    rows = maps.shape[2]
    first = 4 - rows  # the loss rows R = {r0, ..., n - 1}, the reference's row numbers
    for b in range(2):
        for i in range(rows):
            for j in range(4):
                np.testing.assert_allclose(maps[:, b, i, j], ref[f"p_in{b}_{first + i}_{j}"],
                                           rtol=1e-9, atol=1e-12)
    for name in ("converged", "generalized", "diverged", "w_q", "w_k", "w_v"):
        assert name in ps, (name, sorted(ps))
    assert ps["w_q"].shape == (5, extra["d_model"], 4)


def test_a_grid_over_inputs_gives_one_row_per_value():
    t = attnlab.table("attention-sweep", task="teacher", words=4, d_model=4, d_k=4, steps=10,
                      lr=0.05, seeds="0:4", inputs=[1, 2, 4], test_inputs=2)
    grid = t.extra["grid"]
    assert [p["inputs"] for p in grid] == ["1", "2", "4"], grid
    for p in grid:
        assert 0.0 <= p["generalized"] <= 1.0


def test_dk_is_read_as_d_k_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match=r"dk= is deprecated: it is read as d_k="):
        old = attnlab.dk_std(dk=[2, 4], samples=400, seed=3)
    now = attnlab.dk_std(d_k=[2, 4], samples=400, seed=3)
    assert old["std"].tolist() == now["std"].tolist()
    with pytest.raises(ValueError, match="dk= and d_k= name one option"):
        attnlab.dk_std(dk=[2], d_k=[2])


# ---- version 3: does the head use its map? ---------------------------------------------------

def test_per_seed_interventions_are_attention_with_the_map_replaced():
    # --task previous with X = I_n: the measured input is known here. Each seed's loss and its
    # uniform, known and patched interventions recomputed in numpy from its exported weights
    # (the head's map softmax(X W_Q (X W_K)^T / sqrt(d_k)) under the causal mask, the output
    # P X W_V, the loss from the spec: the sum of squares over the loss rows R = 1..n-1), and
    # the uniform and known ones again through attention(map=...).
    n, d_k = 5, 2
    t = attnlab.sweep("attention", task="previous", words=n, d_model=n, d_k=d_k, seeds="0:6",
                      steps=100, causal=True)
    ps = t.per_seed
    for name in ("dl_uniform", "out_uniform", "dl_permuted", "out_permuted", "dl_patched",
                 "out_patched", "dl_known", "out_known", "adv_jsd", "adv_not_unique", "tau_b"):
        assert name in ps and ps[name].shape == (6,), (name, sorted(ps))
    adv = ps["adv_jsd"][~np.isnan(ps["adv_jsd"])]  # NaN where not searched
    assert np.all((adv >= 0) & (adv <= np.log(2)))
    assert np.all((ps["tau_b"] >= -1) & (ps["tau_b"] <= 1))
    x, y = np.eye(n), np.zeros((n, n))
    y[1:] = x[:-1]
    visible = np.tril(np.ones((n, n), bool))
    uniform = np.where(visible, 1 / visible.sum(1, keepdims=True), 0.0)
    known = np.zeros((n, n))
    known[np.arange(1, n), np.arange(n - 1)] = 1
    known[0, 0] = 1  # row 0 reaches no loss

    def weights(s):
        return [ps[m][s] for m in ("w_q", "w_k", "w_v")]

    def head_map(s):
        w_q, w_k, _ = weights(s)
        scores = np.where(visible, (x @ w_q) @ (x @ w_k).T / np.sqrt(d_k), -np.inf)
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def loss(p, s):
        out = p @ (x @ weights(s)[2])
        return ((out[1:] - y[1:]) ** 2).sum()

    checked = 0
    for s in range(6):
        if not np.isfinite(ps["loss"][s]):
            continue
        base = loss(head_map(s), s)
        np.testing.assert_allclose(ps["test_loss"][s], base, rtol=1e-9, atol=1e-12)
        partner = s ^ 1  # the pairs of the pairwise JSD: (0, 1), (2, 3), (4, 5)
        given = {"uniform": uniform, "known": known}
        if np.isfinite(ps["loss"][partner]):
            given["patched"] = head_map(partner)
        for name, p in given.items():
            np.testing.assert_allclose(ps["dl_" + name][s], loss(p, s) - base, rtol=1e-9,
                                       atol=1e-12, err_msg=f"seed {s} {name}")
            checked += 1
        for name, p in (("uniform", uniform), ("known", known)):
            r = attnlab.attention(x, *weights(s), causal=True, map=p)
            np.testing.assert_allclose(((r.out[1:] - y[1:]) ** 2).sum() - ps["test_loss"][s],
                                       ps["dl_" + name][s], rtol=1e-9, atol=1e-12)
    assert checked >= 12


# ---- version 3: frozen maps (demo's --map, map_mode= here) ------------------------------------

def test_map_mode_is_demos_map_bit_for_bit(tmp_path):
    assert attnlab.options("attention-sweep")["map_mode"]["flag"] == "--map"
    args = dict(task="previous", words=4, d_model=4, d_k=2, causal=True, seeds="0:4", steps=20)
    t = attnlab.table("attention-sweep", map_mode=["learned", "uniform", "known"], **args)
    assert "--map learned,uniform,known" in t.provenance["command_line"]
    assert [p["map"] for p in t.extra["grid"]] == ["learned", "uniform", "known"]
    demo("--table", "attention-sweep", "--task", "previous", "--words", "4", "--d-model", "4",
         "--d-k", "2", "--causal", "--seeds", "0:4", "--steps", "20", "--map",
         "learned,uniform,known", "--out", tmp_path, "--no-plots", "-q")
    same_table(t, attnlab.load(tmp_path / "attention-sweep.json"))
    assert set(t["configuration"]) == {"map=learned", "map=uniform", "map=known"}


def test_a_frozen_uniform_map_trains_the_values_alone():
    # --task previous with X = I_n (one input, so the measured input is known here): with the
    # map frozen to uniform over the visible keys, the loss is that of W_V alone (numpy), W_Q and
    # W_K are the seed's starting draws (numpy default_rng), and every map is the uniform one.
    n, d_k = 5, 2
    t = attnlab.sweep("attention", task="previous", words=n, d_model=n, d_k=d_k, causal=True,
                      seeds="0:4", steps=50, map_mode="uniform")
    ps = t.per_seed
    visible = np.tril(np.ones((n, n)))
    uniform = visible / visible.sum(1, keepdims=True)
    x, y = np.eye(n), np.zeros((n, n))
    y[1:] = x[:-1]
    for s in range(4):
        g = np.random.default_rng(s)
        assert same_bits(ps["w_q"][s], g.normal(size=(n, d_k)))
        assert same_bits(ps["w_k"][s], g.normal(size=(n, d_k)))
        loss = ((uniform @ (x @ ps["w_v"][s]))[1:] - y[1:]) ** 2
        np.testing.assert_allclose(ps["loss"][s], loss.sum(), rtol=1e-12, atol=1e-15)
        assert same_bits(ps["maps"][s], uniform[1:])


def test_map_mode_refusals_are_the_cli_lines():
    with pytest.raises(ValueError) as e:
        attnlab.table("attention-sweep", task="random", map_mode="known")
    line = demo("--table", "attention-sweep", "--task", "random", "--map", "known",
                check=False).stderr.strip().splitlines()[0]
    assert line == "demo: error: " + str(e.value)
    with pytest.raises(ValueError, match=r"^attention-sweep: map= is map_mode= here \(--map\)$"):
        attnlab.sweep("attention", map="uniform")
