"""What the package refuses, and how: every argument of every public function is checked for
type, rank, shape and range before any work (demo's wording where demo has the option, checked
against demo's own message), every file is read as demo reads it (a FIFO or device refused
without waiting, forged content refused), and a request larger than the memory available is
refused before anything is allocated. Each refusal is one ValueError or OSError line, never a
TypeError, IndexError, KeyError, RecursionError or MemoryError from inside."""

import json
import os
import resource
import struct
import textwrap

import numpy as np
import pytest

import attnlab
from helpers import demo, demo_error, run_python, same_bits, write_inputs

X, W = np.ones((3, 2)), np.eye(2)


def one_line(e, kind=ValueError):
    """The exception is exactly `kind` (not a subclass such as UnicodeDecodeError) with a
    one-line message."""
    assert type(e.value) is kind, repr(e.value)
    text = str(e.value)
    assert text and "\n" not in text, text
    return text


# ---- attention's arguments ------------------------------------------------------------------

BAD_ATTENTION = [
    # (change to the arguments, the message or a part of it)
    (dict(w_q=np.ones(2)), "w_q: shape (2,) does not fit x shape (3, 2): expected (d_model, d_k)"),
    (dict(w_v=np.ones(2)), "w_v: shape (2,) does not fit x shape (3, 2): expected (d_model, d_v)"),
    (dict(w_k=np.ones((4, 2, 2))), "w_k: shape (4, 2, 2) does not fit x shape (3, 2)"),
    (dict(x=np.ones((5, 3, 2)), w_q=np.ones((4, 2, 2))),
     "w_q: shape (4, 2, 2) does not fit x shape (5, 3, 2): expected (d_model, d_k) or one "
     "matrix per batch entry (5, d_model, d_k)"),
    (dict(x=5.0), "x: shape (): expected (n, d_model) or (batch..., n, d_model)"),
    (dict(x=[[1.0, 2.0], [3.0]]), "x: not an array of real numbers"),
    (dict(x=np.ones((3, 2), complex)), "x: expected real numbers, got an array of dtype complex128"),
    (dict(x=np.ones((3, 2), bool)), "x: expected real numbers, got an array of dtype bool"),
    (dict(w_q=np.array([[None, 1], [2, 3]])), "w_q: expected real numbers, got an array of dtype object"),
    (dict(x=np.ones((0, 2))), "x: shape (0, 2) (and the weights' columns) must have no empty axis"),
    (dict(causal="false"), "causal: expected True or False, got 'false'"),
    (dict(causal=1), "causal: expected True or False, got 1"),
    (dict(need_weights="no"), "need_weights: expected True or False, got 'no'"),
    (dict(progress=None), "progress: expected True or False, got None"),
    (dict(heads=2.0), "heads: expected a whole number (an int), got the float 2.0"),
    (dict(heads=True), "heads: expected a whole number from 1 to 1048576, got 'True'"),
    (dict(heads="2"), "heads: expected a whole number (an int), got the text '2'"),
    (dict(heads=10**30), "heads: expected a whole number from 1 to 1048576, got '1000000000000000000000000000000'"),
    (dict(scale="0.5"), "scale: expected a finite number > 0 and <= 1e+300, got ''0.5''"),
    (dict(scale=True), "scale: expected a finite number > 0 and <= 1e+300, got 'True'"),
    (dict(scale=float("nan")), "scale: expected a finite number > 0 and <= 1e+300, got 'nan'"),
    (dict(scale=10**400), "scale: expected a finite number > 0 and <= 1e+300"),
    # float32 inputs compute in float32: a scale it cannot hold is refused, not rounded to 0 or inf.
    (dict(x=X.astype(np.float32), w_q=W.astype(np.float32), w_k=W.astype(np.float32),
          w_v=W.astype(np.float32), scale=1e-300),
     "scale: 1e-300 is 0 in float32 (every input is float32; float64 inputs hold it)"),
    (dict(x=X.astype(np.float32), w_q=W.astype(np.float32), w_k=W.astype(np.float32),
          w_v=W.astype(np.float32), scale=1e39), "scale: 1e+39 is inf in float32"),
    (dict(device=5), "device: expected one of auto, cpu, cuda, got '5'"),
    (dict(threads=2.5), "threads: expected a whole number from 1 to"),
    (dict(threads="2"), "threads: expected a whole number (an int), got the text '2'"),
    (dict(mask=np.ones((3, 3))), "mask: expected booleans (True: may attend), got dtype float64"),
    (dict(mask=np.ones((2, 3), bool)), "mask: shape (2, 3) does not broadcast to (batch..., heads, n, n) = (1, 3, 3)"),
    (dict(lengths=np.array([1.5])), "lengths: expected whole numbers of x's batch shape () or (1,), got shape (1,) dtype float64"),
    (dict(lengths=np.array([1, 2])), "lengths: expected whole numbers of x's batch shape () or (1,), got shape (2,) dtype int64"),
    (dict(lengths=4), "lengths: entry () is 4, outside 0 to n = 3"),
    (dict(out=[1, 2]), "out: expected an array (the output) or a mapping of output names to arrays, got [1, 2]"),
    (dict(out={"o": np.empty((3, 2))}), "out: no output 'o' (the outputs: q, k, v, scores, weights, out)"),
    (dict(out=np.empty((3, 2), np.float32)), "out['out']: dtype float32, but the computation's is float64"),
    (dict(out=np.empty((2, 3))), "out['out']: shape (2, 3), expected (3, 2)"),
    (dict(out=np.empty((2, 3)).T), "out['out']: not C-contiguous"),
    (dict(out={"q": [[0.0] * 2] * 3}), "out['q']: expected a numpy array, got"),
    (dict(out={"scores": np.empty((3, 3))}, need_weights=False),
     "out['scores']: given, but need_weights=False computes no scores to keep"),
]


@pytest.mark.parametrize("change,message", BAD_ATTENTION)
def test_attention_refuses_every_bad_argument(change, message):
    args = dict(x=X, w_q=W, w_k=W, w_v=W)
    args.update(change)
    with pytest.raises(ValueError) as e:
        attnlab.attention(**args)
    assert one_line(e).startswith(message)


def test_attention_refusals_are_the_cli_lines(tmp_path):
    # The options demo attention has: the same words, Python's name for the flag.
    paths = write_inputs(tmp_path, dict(x=X, w=W))
    files = ["attention", "--x", paths["x"], "--w-q", paths["w"], "--w-k", paths["w"], "--w-v",
             paths["w"]]
    cases = [("heads", 0, "--heads", "0"), ("heads", 2**21, "--heads", str(2**21)),
             ("threads", 0, "--threads", "0"), ("threads", 10**6, "--threads", str(10**6)),
             ("scale", -1, "--scale", "-1.0"), ("scale", 1e301, "--scale", "1e+301"),
             ("device", "gpu", "--device", "gpu")]
    for name, value, flag, text in cases:
        with pytest.raises(ValueError) as e:
            attnlab.attention(X, W, W, W, **{name: value})
        assert one_line(e) == demo_error(*files, flag, text).replace(flag, name, 1)


def test_booleans_are_booleans():
    g = np.random.default_rng(2)
    x = g.standard_normal((4, 5, 6))
    w = g.standard_normal((6, 6))
    plain, causal = attnlab.attention(x, w, w, w), attnlab.attention(x, w, w, w, causal=True)
    assert same_bits(attnlab.attention(x, w, w, w, causal=np.bool_(True)).out, causal.out)
    assert not same_bits(plain.out, causal.out)
    for text in ("false", "False", "0", ""):
        with pytest.raises(ValueError, match="causal: expected True or False"):
            attnlab.attention(x, w, w, w, causal=text)


def test_refused_out_arrays_are_left_untouched():
    g = np.random.default_rng(4)
    x = g.standard_normal((2, 4, 3))
    w = g.standard_normal((3, 3))
    given = {"q": np.full((2, 4, 3), np.nan), "out": np.full((2, 4, 3), np.nan)}
    with pytest.raises(ValueError, match="causal"):
        attnlab.attention(x, w, w, w, causal="yes", out=given)
    with pytest.raises(ValueError, match=r"out\['out'\]: overlaps out\['q'\]"):
        attnlab.attention(x, w, w, w, out={"q": given["q"], "out": given["q"]})
    with pytest.raises(ValueError, match=r"out\['out'\]: overlaps an input"):
        attnlab.attention(x, w, w, w, out={"out": x})
    read_only = np.empty((2, 4, 3))
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match=r"out\['v'\]: read-only"):
        attnlab.attention(x, w, w, w, out={"v": read_only})
    assert all(np.isnan(a).all() for a in given.values())


# ---- need_weights and out= ------------------------------------------------------------------

@pytest.mark.parametrize("dtype,heads,masked", [(np.float32, 1, False), (np.float64, 2, True)])
def test_need_weights_false_gives_the_same_outputs_without_the_maps(dtype, heads, masked):
    g = np.random.default_rng(8)
    x = g.standard_normal((3, 70, 9, 8)).astype(dtype)  # 210 problems: several scratch groups
    w = g.standard_normal((8, 8)).astype(dtype)
    mask = g.random((3, 1, heads, 9, 9)) < 0.7 if masked else None
    full = attnlab.attention(x, w, w, w, heads=heads, mask=mask, causal=True)
    lean = attnlab.attention(x, w, w, w, heads=heads, mask=mask, causal=True, need_weights=False)
    assert lean.scores is None and lean.weights is None
    assert list(lean) == ["q", "k", "v", "out"] and lean.provenance["need_weights"] is False
    for name in lean:
        assert same_bits(lean[name], full[name]), name


def test_need_weights_false_needs_no_room_for_the_maps():
    # 512 problems of n 1024: scores and weights take 4.3 GB in float32, more than a 4 GiB
    # address space holds; without them a problem at a time goes through a scratch buffer.
    r = run_python("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        import numpy as np, attnlab
        g = np.random.default_rng(0)
        x = g.standard_normal((512, 1024, 2), dtype=np.float32)
        w = np.ones((2, 2), np.float32)
        try:
            attnlab.attention(x, w, w, w)
        except ValueError as e:
            print("refused:", e)
        r = attnlab.attention(x, w, w, w, need_weights=False)
        part = attnlab.attention(x[:3], w, w, w)
        print(r.out.shape, r.scores, all(np.array_equal(r[n][:3], part[n]) for n in part if n in r))
        """)
    assert r.returncode == 0, r.stderr
    refused, ran = r.stdout.splitlines()
    assert refused.startswith("refused: x: shape (512, 1024, 2): the problem needs about 4.")
    assert ran == "(512, 1024, 2) None True"


def test_out_arrays_are_written_in_place():
    g = np.random.default_rng(5)
    x = g.standard_normal((2, 3, 6, 4)).astype(np.float32)
    w = g.standard_normal((4, 4)).astype(np.float32)
    want = attnlab.attention(x, w, w, w, heads=2)
    given = {n: np.empty_like(want[n]) for n in want}
    r = attnlab.attention(x, w, w, w, heads=2, out=given)
    for n in want:
        assert r[n] is given[n] and same_bits(given[n], want[n]), n
    out = np.empty_like(want.out)  # one array: the output
    r = attnlab.attention(x, w, w, w, heads=2, need_weights=False, out=out)
    assert r.out is out and same_bits(out, want.out) and r.weights is None
    again = attnlab.attention(x, w, w, w, heads=2, out=r)  # a result's arrays, reused
    assert again.out is out and same_bits(again.q, want.q)


# ---- tables' and the other functions' arguments ---------------------------------------------

@pytest.mark.parametrize("call,message", [
    (lambda: attnlab.table(5), "no table 5"),
    (lambda: attnlab.table("dk-std", threads="2"), "threads: expected a whole number (an int)"),
    (lambda: attnlab.table("dk-std", threads=10**6), "threads: expected a whole number from 1 to"),
    (lambda: attnlab.table("dk-std", progress="yes"), "progress: expected True or False, got 'yes'"),
    (lambda: attnlab.table("dk-std", device=None), "device: expected one of auto, cpu, cuda, got 'None'"),
    (lambda: attnlab.dk_std(samples=True), "samples: expected a number, a text or a list, got True"),
    (lambda: attnlab.dk_std(d_k=[[2, 4]]), "d_k: expected a number, a text or a list of them, got [2, 4]"),
    (lambda: attnlab.dk_std(d_k=np.ones((2, 2))), "d_k: expected a list of values, got an array of shape (2, 2)"),
    (lambda: attnlab.dk_std(samples={"a": 1}), "samples: expected a number, a text or a list of them"),
    (lambda: attnlab.sweep("attention", seeds="0:2", causal="on"),
     "causal: expected True or False (or a list of them), got 'on'"),
    (lambda: attnlab.sweep(5), "kind: expected one of attention, training, got '5'"),
    (lambda: attnlab.sweep("training", per_seed=3), "per_seed: expected a path (a str or os.PathLike), got 3"),
    (lambda: attnlab.sweep("training", per_seed="rows.npy"),
     "per_seed rows.npy: a training sweep's per-seed file ends in .csv"),
    # An empty list or range: named, not passed on as an empty text.
    (lambda: attnlab.sweep("attention", seeds=[]), "seeds: [] is empty: give at least one value"),
    (lambda: attnlab.sweep("attention", seeds=range(5, 5)), "seeds: range(5, 5) is empty"),
    (lambda: attnlab.sweep("attention", seeds="0:2", lr=[]), "lr: [] is empty"),
    (lambda: attnlab.dk_std(d_k=np.array([], dtype=np.int64)), "d_k: array([], dtype=int64) is empty"),
    (lambda: attnlab.options(None), "no table None"),
    (lambda: attnlab.load(5), "path: expected a path (a str or os.PathLike), got 5"),
    (lambda: attnlab.load(b"x.json"), "path: expected a path (a str or os.PathLike), got b'x.json'"),
])
def test_every_function_refuses_bad_arguments(call, message):
    with pytest.raises(ValueError) as e:
        call()
    assert one_line(e).startswith(message)


def test_a_whole_number_option_takes_a_whole_float_as_demo_does():
    # heads=2.0 is demo's --heads 2.0, the whole number 2 (as samples=1e3 is --samples 1000.0).
    a = attnlab.sweep("attention", seeds="0:2", steps=3, heads=2.0, d_model=4, d_k=4, words=3,
                      task="random", adversary=False)
    b = attnlab.sweep("attention", seeds="0:2", steps=3, heads=2, d_model=4, d_k=4, words=3,
                      task="random", adversary=False)
    assert a.provenance["heads"] == 2 and same_bits(a["mean"], b["mean"])
    with pytest.raises(ValueError) as e:
        attnlab.sweep("attention", seeds="0:2", heads=2.5)
    assert "--heads" in one_line(e) and "2.5" in one_line(e)


def test_on_off_options_take_python_booleans(tmp_path):
    # causal=True is demo's --causal on, bit for bit; [True, False] its grid "on,off".
    demo("--table", "attention-sweep", "--seeds", "0:4", "--steps", "20", "--causal", "on", "--out",
         tmp_path, "--no-plots", "-q")
    t = attnlab.sweep("attention", seeds="0:4", steps=20, causal=True)
    cli = attnlab.load(tmp_path / "attention-sweep.json")
    assert list(t) == list(cli)
    for c in t:
        assert same_bits(t[c], cli[c]) if t[c].dtype != object else list(t[c]) == list(cli[c])
    assert "--causal on" in t.provenance["command_line"]
    grid = attnlab.table("attention-sweep", seeds="0:2", steps=5, causal=[True, False])
    assert list(dict.fromkeys(grid["configuration"])) == ["causal=on", "causal=off"]


def test_threads_are_bounded_as_demo_bounds_them():
    limit = 4 * os.cpu_count()
    with pytest.raises(ValueError) as e:
        attnlab.dk_std(samples=100, threads=limit + 1)
    assert one_line(e) == demo_error("--table", "dk-std", "--samples", "100", "--threads",
                                     limit + 1).replace("--threads", "threads", 1)
    assert attnlab.dk_std(samples=100, d_k=[2], threads=limit)["d_k"].tolist() == [2]


def test_the_namespace_is_the_public_surface():
    public = sorted(n for n in dir(attnlab) if not n.startswith("_"))
    assert public == sorted(attnlab.__all__)
    scope = {}
    exec("from attnlab import *", scope)
    assert sorted(n for n in scope if n != "__builtins__") == sorted(attnlab.__all__)


# ---- lengths and per-seed files as demo takes them ------------------------------------------

def test_lengths_of_shape_one_for_a_matrix_is_demos(tmp_path):
    g = np.random.default_rng(6)
    x = g.standard_normal((5, 4)).astype(np.float32)
    w = g.standard_normal((4, 4)).astype(np.float32)
    paths = write_inputs(tmp_path, dict(x=x, w=w, lengths=np.array([3], np.int32)))
    out = tmp_path / "out"
    demo("attention", "--x", paths["x"], "--w-q", paths["w"], "--w-k", paths["w"], "--w-v",
         paths["w"], "--lengths", paths["lengths"], "--out", out, "--no-plots", "-q")
    for lengths in (np.array([3], np.int32), np.array(3), 3):
        r = attnlab.attention(x, w, w, w, lengths=lengths)
        for name in r:
            assert same_bits(r[name], np.load(out / f"{name}.npy")), name
    assert np.all(r.weights[:, 3:] == 0)


def test_per_seed_with_an_existing_sibling_is_an_os_error(tmp_path):
    sibling = tmp_path / "maps.loss.npy"
    sibling.write_bytes(b"mine")
    for call in (lambda: attnlab.sweep("attention", seeds="0:2", steps=5, per_seed=tmp_path / "maps.npy"),
                 lambda: attnlab.table("attention-sweep", seeds="0:2", steps=5,
                                       per_seed=str(tmp_path / "maps.npy"))):
        with pytest.raises(OSError) as e:
            call()
        text = one_line(e, OSError)
        assert str(sibling) in text and "exists" in text and "--force" not in text
    assert sorted(os.listdir(tmp_path)) == ["maps.loss.npy"] and sibling.read_bytes() == b"mine"


def test_per_seed_arrays_are_what_demo_writes(tmp_path):
    # Every file --per-seed writes comes back under its name, read as demo's own .npy; the CSV
    # form, every column.
    t = attnlab.sweep("attention", seeds="0:3", steps=10, per_seed=tmp_path / "m.npy")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(["m.npy"] + [f"m.{k}.npy" for k in t.per_seed if k != "maps"])
    for k, a in t.per_seed.items():
        assert same_bits(a, np.load(tmp_path / ("m.npy" if k == "maps" else f"m.{k}.npy"))), k
    c = attnlab.sweep("attention", seeds="0:3", steps=10, per_seed=tmp_path / "m.csv")
    header = (tmp_path / "m.csv").read_text().splitlines()[0].split(",")
    assert list(c.per_seed) == header
    assert same_bits(c.per_seed["loss"], t.per_seed["loss"])
    assert c.per_seed["seed"].tolist() == t.per_seed["seeds"].tolist()


# ---- reading files --------------------------------------------------------------------------

def test_load_never_waits_on_a_fifo_or_a_device(tmp_path):
    # Each call in a process of its own, with a deadline: opening a FIFO for reading waits for
    # a writer, and reading /dev/zero never ends.
    for name in ("r.json", "r.npy", "r.csv"):
        os.mkfifo(tmp_path / name)
    (tmp_path / "z.npy").symlink_to("/dev/zero")
    folder = tmp_path / "att"
    folder.mkdir()
    (folder / "attention.json").write_text("{}")
    os.mkfifo(folder / "q.npy")
    r = run_python(f"""
        import attnlab, os
        os.chdir({str(tmp_path)!r})
        for p in ("r.json", "r.npy", "r.csv", "z.npy", "att/q.npy"):
            try:
                attnlab.load(p)
            except OSError as e:
                print(type(e).__name__, e)
        """, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["OSError r.json: a FIFO, not a regular file",
                                     "OSError r.npy: a FIFO, not a regular file",
                                     "OSError r.csv: a FIFO, not a regular file",
                                     "OSError z.npy: a device, not a regular file",
                                     "OSError att/q.npy: a FIFO, not a regular file"]
    r = run_python(f"""
        import attnlab
        try:
            attnlab.load({str(folder)!r})
        except ValueError as e:
            print(e)
        """, timeout=60)
    assert r.stdout.strip().endswith('no "tables" list: not a result file of demo\'s')


def npy(header, data=b"", version=1):
    """A .npy file's bytes with this header dictionary text."""
    text = header.encode("latin1")
    pad = 64 - (10 + len(text) + 1) % 64
    text += b" " * pad + b"\n"
    size = struct.pack("<H", len(text)) if version == 1 else struct.pack("<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + size + text + data


NOT_DEMOS = [
    ("x.json", b"{}", 'no "tables" list: not a result file of demo\'s'),
    ("x.json", b"[1, 2]", 'no "tables" list'),
    ("x.json", b"null", 'no "tables" list'),
    ("x.json", b'{"tables": 5}', 'no "tables" list'),
    ("x.json", b'{"tables": [5]}', "table 0 is not an object"),
    ("x.json", b'{"tables": [{"name": "a"}]}', "table 'a': \"columns\" is not a list of distinct names"),
    ("x.json", b'{"tables": [{"name": "a", "columns": ["c"], "rows": [5]}]}', "\"rows\" is not a list of objects"),
    ("x.json", b'{"tables": [{"name": "a", "columns": ["c"], "rows": [{"c": {"d": 1}}]}]}',
     "table 'a', row 0, column 'c': {'d': 1} is not a cell demo writes"),
    ("x.json", b'{"tables": [{"name": "a", "columns": ["c"], "rows": [{"c": [[1]]}]}]}', "is not a cell demo writes"),
    ("x.json", b'{"tables": [{"name": "a", "columns": ["c"], "rows": [{"c": ["x"]}]}]}', "is not a cell demo writes"),
    ("x.json", b'{"tables": [{"name": "a", "columns": ["c"], "rows": [], "notes": "n"}]}', '"title", "notes" or "run"'),
    ("x.json", b'{"provenance": 3, "tables": []}', '"provenance" is not an object'),
    ("x.json", b'{"tables": []}', "no tables"),
    ("x.json", b"[" * 100000 + b"]" * 100000, "JSON nested deeper than 64 levels"),
    ("x.json", b'{"tables": [', "not JSON"),
    ("x.json", b'{"a": "\xff\xfe"}', "not JSON"),
    ("x.npy", b"hello", "not a .npy file"),
    ("x.npy", b"", "not a .npy file"),
    ("x.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1000,), }", b"\0" * 8),
     "truncated .npy: shape (1000,) needs 8000 bytes of data, the file has 8"),
    ("x.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }", b"\0" * 8),
     "truncated .npy"),
    ("x.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", b"\0" * 16),
     "malformed .npy: 8 bytes after the data"),
    ("x.npy", npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b"\0" * 8), "dtype '|O' is refused"),
    ("x.npy", npy("{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", b"\0" * 16), "dtype complex128 is refused"),
    ("x.npy", npy("{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", b"\0" * 8), "big-endian float64 is refused"),
    ("x.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (-3,), }"), "has a negative dimension"),
    ("x.npy", npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", b"\x01\x07"),
     "booleans that are neither 0 nor 1"),
    ("x.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,)" + ", 1" * 40 + ", }"), ""),
    ("x.npy", npy("{'descr': '<f8' 'shape'", b""), "malformed .npy header"),
    ("x.csv", b"a,b\n1,2\n3\n", "row 2 has 1 values, the header 2"),
    ("x.csv", b"a,a\n1,2\n", "empty or repeated column names"),
    # A matrix CSV (demo attention's --x, as the README writes one): numbers, not column names.
    ("x.csv", b"1,0\n0,1\n2,2\n", "first line '1,0' is numbers, not column names"),
    ("x.csv", b"-1.5e3,nan\n", "is numbers, not column names"),
    ("x.csv", b"", "empty: not a CSV of demo's"),
    ("x.csv", b"# table: a\nc\n1\n", "several tables in one CSV"),
    ("x.csv", b"a\n\xff\n", "not UTF-8 text"),
    ("x.csv", b'a\n"' + b"x" * 200000 + b'"\n', "not a CSV of demo's (field larger than field limit"),
    ("x.txt", b"{}", "not a file demo writes (a folder, .json, .npy or .csv)"),
]


@pytest.mark.parametrize("name,content,message", NOT_DEMOS,
                         ids=[f"{name}-{i}" for i, (name, _, _) in enumerate(NOT_DEMOS)])
def test_load_refuses_what_demo_does_not_write(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError) as e:
        attnlab.load(path)
    text = one_line(e)
    assert text.startswith(f"{path}: ") and message in text


def test_load_reads_every_file_demo_writes(tmp_path):
    # demo attention --out: the folder, and each .npy alone (numpy's own reader as reference);
    # a tables' folder and its JSON; a per-seed CSV and .npy.
    g = np.random.default_rng(9)
    x = g.standard_normal((2, 5, 4)).astype(np.float32)
    w = g.standard_normal((4, 4)).astype(np.float32)
    paths = write_inputs(tmp_path, dict(x=x, w=w))
    out = tmp_path / "att"
    demo("attention", "--x", paths["x"], "--w-q", paths["w"], "--w-k", paths["w"], "--w-v",
         paths["w"], "--heads", 2, "--out", out, "--no-plots", "-q")
    for name in ("q", "k", "v", "scores", "weights", "out"):
        assert same_bits(attnlab.load(out / f"{name}.npy"), np.load(out / f"{name}.npy")), name
    assert attnlab.load(out).weights.shape == (2, 2, 5, 5)
    rows = tmp_path / "rows.csv"
    demo("--table", "training-sweep", "--seeds", "0:3", "--steps", "10", "--per-seed", rows, "-q")
    columns = attnlab.load(rows)
    assert list(columns) == rows.read_text().splitlines()[0].split(",")
    assert columns["config"].dtype == object and columns["seed"].tolist() == [0, 1, 2] * 2
    assert columns["loss"].dtype == np.float64 and len(columns["loss"]) == 6
    stem = tmp_path / "maps"
    demo("--table", "attention-sweep", "--seeds", "0:3", "--steps", "10", "--per-seed",
         f"{stem}.npy", "-q")
    assert same_bits(attnlab.load(f"{stem}.seeds.npy"), np.arange(3, dtype=np.uint64))
    assert same_bits(attnlab.load(f"{stem}.npy"), np.load(f"{stem}.npy"))
    # Fortran order and the other dtypes numpy writes that demo reads (a mask, lengths)
    for a in (np.asfortranarray(g.standard_normal((3, 4))), np.array([True, False]),
              np.arange(6, dtype=np.int16).reshape(2, 3), np.array(7.0), np.ones((0, 3))):
        np.save(tmp_path / "a.npy", a)
        assert same_bits(attnlab.load(tmp_path / "a.npy"), np.array(a, order="C"))


def test_load_keeps_a_column_of_mixed_cells_as_cells(tmp_path):
    doc = {"tables": [{"name": "a", "columns": ["c"], "rows": [{"c": "x"}, {"c": [1, "nan"]}]}]}
    (tmp_path / "a.json").write_text(json.dumps(doc))
    t = attnlab.load(tmp_path / "a.json")
    assert t["c"][0] == "x" and np.isnan(t["c"][1][1]) and t["c"][1][0] == 1


def test_a_range_of_seeds_up_to_two_to_the_64_is_taken():
    # range(2^64 - 4, 2^64): its last seed 2^64 - 1 is valid; A:B cannot name its end.
    t = attnlab.sweep("training", seeds=range(2**64 - 4, 2**64), steps=2)
    assert "--seeds 18446744073709551612,18446744073709551613,18446744073709551614," \
           "18446744073709551615" in t.provenance["command_line"]


def test_load_keeps_large_whole_numbers_beside_empty_cells_exact(tmp_path):
    # A seed column with empty cells (the training table's identity configs): float64 would turn
    # 2^64 - 1 into 2^64 and 2^53 + 1 into 2^53, seeds that never ran.
    big = [2**64 - 1, None, 2**53 + 1]
    doc = {"tables": [{"name": "a", "columns": ["seed"], "rows": [{"seed": v} for v in big]}]}
    (tmp_path / "a.json").write_text(json.dumps(doc))
    col = attnlab.load(tmp_path / "a.json")["seed"]
    assert col.dtype == object and list(col) == big
    small = [5, None, 2**53]  # exact in float64: a float64 column, NaN where empty
    doc["tables"][0]["rows"] = [{"seed": v} for v in small]
    (tmp_path / "b.json").write_text(json.dumps(doc))
    col = attnlab.load(tmp_path / "b.json")["seed"]
    assert col.dtype == np.float64 and col[0] == 5 and np.isnan(col[1]) and col[2] == 2**53


def test_load_of_a_mismatched_attention_folder_is_refused(tmp_path):
    x, w = np.ones((1, 3, 2), np.float32), np.eye(2, dtype=np.float32)
    paths = write_inputs(tmp_path, dict(x=x, w=w))
    out = tmp_path / "att"
    demo("attention", "--x", paths["x"], "--w-q", paths["w"], "--w-k", paths["w"], "--w-v",
         paths["w"], "--out", out, "--no-plots", "-q")
    np.save(out / "k.npy", np.ones((1, 3, 5), np.float32))
    with pytest.raises(ValueError) as e:
        attnlab.load(out)
    assert one_line(e).endswith("not the arrays of one demo attention --out")
    os.remove(out / "v.npy")
    with pytest.raises(OSError) as e:
        attnlab.load(out)
    assert one_line(e, OSError) == f"{out / 'v.npy'}: no such file"


# ---- memory ---------------------------------------------------------------------------------

def limited(code, limit=4 << 30):
    """code in a Python whose address space is limited (ulimit -v): what it prints."""
    body = textwrap.indent(textwrap.dedent(code).strip(), "    ")
    r = run_python("import resource\n"
                   f"resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))\n"
                   "import numpy as np, attnlab\n"
                   "try:\n" + body + "\n"
                   "except Exception as e:\n"
                   "    print(type(e).__name__, e)\n")
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_a_request_too_large_is_refused_as_demo_refuses_it(tmp_path):
    # demo attention refuses x (56000, 1) float32 ("needs about 25.1 GB"); so does Python, with
    # the same estimate, before allocating.
    paths = write_inputs(tmp_path, dict(x=np.ones((56000, 1), np.float32),
                                        w=np.ones((1, 1), np.float32)))
    line = demo_error("attention", "--x", paths["x"], "--w-q", paths["w"], "--w-k", paths["w"],
                      "--w-v", paths["w"],
                      preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30)))
    needs = line.split("the problem needs about ")[1].split(" of memory")[0]
    assert needs == "25.1 GB"
    out = limited("""
        x, w = np.ones((56000, 1), np.float32), np.ones((1, 1), np.float32)
        attnlab.attention(x, w, w, w)
        """)
    assert out.startswith(f"ValueError x: shape (56000, 1): the problem needs about {needs} of "
                          f"memory (scores and weights alone 25.1 GB), this machine has ")


def test_the_memory_check_counts_what_python_builds():
    # A broadcast view of 4.8 GB that would be copied; a dense mask of 4.3 GB built from
    # lengths (need_weights=False: no room for scores and weights asked).
    out = limited("""
        x = np.broadcast_to(np.ones((1, 1, 1000)), (600000, 1, 1000))
        attnlab.attention(x, np.ones((1000, 1)), np.ones((1000, 1)), np.ones((1000, 1)))
        """)
    assert out.startswith("ValueError x: shape (600000, 1, 1000): the problem needs about 4.8")
    out = limited("""
        x, w = np.ones((4096, 1024, 1), np.float32), np.ones((1, 1), np.float32)
        attnlab.attention(x, w, w, w, lengths=np.full(4096, 512), need_weights=False)
        """)
    assert out.startswith("ValueError x: shape (4096, 1024, 1): the problem needs about 4.3")
