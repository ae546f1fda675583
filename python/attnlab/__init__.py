"""attnlab: the self-attention lesson's kernels on numpy arrays.

The same kernels and tables as the ``demo`` program, called in-process:

- ``attention(x, w_q, w_k, w_v, ...)``: batched (multi-head) attention on your own arrays, the
  computation of ``demo attention``, bit for bit;
- ``table(name, **options)``: any of demo's tables (``tables()`` lists them, ``options(name)``
  their options), its columns as numpy arrays; ``dk_std(**options)`` and ``sweep(kind,
  **options)`` (with every seed's arrays) are shorthands;
- ``load(path)``: a result JSON or an ``--out`` folder written by demo, as the same objects.

Options are demo's, named in Python style (``--d-k`` is ``d_k``) with demo's defaults, read from
the tables' own declarations. A refused request raises ValueError with demo's one-line message,
a file that cannot be written OSError; Ctrl-C raises KeyboardInterrupt within a second and
leaves nothing half-done. The kernels run with the GIL released.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shlex
import tempfile
import threading
from typing import Any, Dict, List, Optional

import numpy as np

from . import _core

__all__ = [
    "attention",
    "table",
    "dk_std",
    "sweep",
    "load",
    "tables",
    "options",
    "AttentionResult",
    "Table",
]
__version__ = _core.version

_DEVICES = ("auto", "cpu", "cuda")
_OUTPUTS = ("q", "k", "v", "scores", "weights", "out")


class AttentionResult:
    """What ``attention`` returns (and ``load`` reads from ``demo attention --out DIR``).

    q, k (..., n, d_k); v, out (..., n, d_v); scores, weights (..., n, n), or (..., heads, n, n)
    with more than one head; ``...`` is x's batch shape and the dtype is the computation's
    (float32 when every input is float32, else float64). ``provenance``: how it was made.
    Also reads as a mapping: ``r["out"]``, ``dict(r)``.
    """

    def __init__(self, arrays: Dict[str, np.ndarray], provenance: Dict[str, Any]):
        for name in _OUTPUTS:
            setattr(self, name, arrays[name])
        self.provenance = provenance

    def keys(self):
        return list(_OUTPUTS)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in _OUTPUTS:
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self):
        return iter(_OUTPUTS)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{n}={getattr(self, n).shape}" for n in _OUTPUTS)
        return f"AttentionResult({shapes}, dtype={self.out.dtype})"


class Table(dict):
    """One table: column name -> numpy array (one entry per row), so that
    ``pandas.DataFrame(t)`` is the table. ``name``, ``title``, ``notes``, ``provenance`` (what
    demo writes into NAME.json's provenance: version, commit, command line, backend, device,
    the table's own run record) and ``extra`` (the JSON's other fields). A sweep's Table also
    has ``per_seed``: every seed's arrays."""

    def __init__(self, name, title, columns, notes, provenance, extra=None):
        super().__init__(columns)
        self.name = name
        self.title = title
        self.notes = list(notes)
        self.provenance = provenance
        self.extra = extra or {}
        self.per_seed: Dict[str, np.ndarray] = {}

    def __repr__(self) -> str:
        rows = len(next(iter(self.values()))) if self else 0
        return f"Table({self.name!r}, {rows} rows, columns {list(self)})"


# ---- arguments ------------------------------------------------------------------------------


def _threads(threads) -> int:
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads: expected a whole number >= 1 (or None: all cores), got {threads!r}")
    return int(threads)


def _device(device) -> str:
    if device not in _DEVICES:
        raise ValueError(f"device: expected one of auto, cpu, cuda, got {device!r}")
    return device


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _shape(a) -> str:
    return "(" + ", ".join(str(s) for s in a.shape) + ")"


def _float_array(name: str, a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in "fiub" or a.dtype.itemsize > 8:
        raise ValueError(f"{name}: expected real numbers, got an array of dtype {a.dtype}")
    return a


# ---- attention ------------------------------------------------------------------------------


def attention(x, w_q, w_k, w_v, *, heads: int = 1, causal: bool = False, mask=None,
              lengths=None, scale: Optional[float] = None, device: str = "auto",
              threads: Optional[int] = None, progress: bool = False) -> AttentionResult:
    """Scaled dot-product attention of every problem in a batch, ``demo attention``'s kernels.

    x: (n, d_model) or (..., n, d_model). w_q, w_k: (d_model, d_k), shared by the batch, or
    (..., d_model, d_k), one per batch entry (x's batch shape); w_v likewise with d_v.
    heads H splits d_k and d_v into H heads (their outputs concatenated); causal: query i sees
    keys 0..i; mask: booleans broadcastable to (..., H, n, n), True where query i may attend key
    j (PyTorch's scaled_dot_product_attention convention); lengths: integers of x's batch shape,
    keys at or past an entry's length are masked (key padding). A masked key has score -inf and
    weight 0 and never enters the output; a row with no key left has zero weights and output.
    scale: the scores' factor (default 1/sqrt(d_k / H)). The computation is float32
    when every input is float32, else float64; C-contiguous inputs of that dtype are read in
    place, without a copy. device: auto, cpu or cuda (a CUDA build); threads: CPU threads
    (None: all cores).

    Returns an AttentionResult (q, k, v, scores, weights, out); the bits of ``demo attention``
    on the same inputs. Raises ValueError for shapes that do not fit, a bad option, or
    device="cuda" where no GPU answers; KeyboardInterrupt on Ctrl-C.
    """
    arrays = {n: _float_array(n, a) for n, a in (("x", x), ("w_q", w_q), ("w_k", w_k), ("w_v", w_v))}
    x = arrays["x"]
    if x.ndim < 2:
        raise ValueError(f"x: shape {_shape(x)}: expected (n, d_model) or (batch, n, d_model)")
    batch_shape = x.shape[:-2]
    n, d_model = x.shape[-2:]
    dims = {}
    for name in ("w_q", "w_k", "w_v"):
        w = arrays[name]
        if w.ndim != 2 and w.shape[:-2] != batch_shape:
            raise ValueError(
                f"{name}: shape {_shape(w)} does not fit x shape {_shape(x)}: expected "
                f"(d_model, cols) or one matrix per batch entry {tuple(batch_shape) + ('d_model', 'cols')}")
        if w.shape[-2] != d_model:
            raise ValueError(f"{name}: shape {_shape(w)} does not fit x shape {_shape(x)}: "
                             f"it needs d_model = {d_model} rows")
        dims[name] = w.shape[-1]
    if dims["w_k"] != dims["w_q"]:
        raise ValueError(f"w_k: shape {_shape(arrays['w_k'])} gives d_k = {dims['w_k']}, but w_q "
                         f"shape {_shape(arrays['w_q'])} gives d_k = {dims['w_q']}")
    d_k, d_v = dims["w_q"], dims["w_v"]
    if isinstance(heads, bool) or not isinstance(heads, (int, np.integer)) or not 1 <= heads <= 1 << 20:
        raise ValueError(f"heads: expected a whole number from 1 to 1048576, got {heads!r}")
    heads = int(heads)
    if d_k % heads:
        raise ValueError(f"heads {heads}: d_k = {d_k} (w_q) is not divisible by it")
    if d_v % heads:
        raise ValueError(f"heads {heads}: d_v = {d_v} (w_v) is not divisible by it")
    if scale is None:
        scale = 1.0 / math.sqrt(d_k // heads)
    elif isinstance(scale, bool) or not isinstance(scale, (int, float, np.floating, np.integer)) \
            or not (0 < float(scale) <= 1e300):
        raise ValueError(f"scale: expected a number in (0, 1e+300], got {scale!r}")
    if min((n, d_model, d_k, d_v) + tuple(batch_shape)) < 1:
        raise ValueError(f"x: shape {_shape(x)} (and the weights' columns) must have no empty axis")
    device, nthreads = _device(device), _threads(threads)
    dtype = np.float32 if all(a.dtype == np.float32 for a in arrays.values()) else np.float64
    batch = int(np.prod(batch_shape, dtype=np.int64)) if batch_shape else 1
    per_entry = any(arrays[w].ndim != 2 for w in ("w_q", "w_k", "w_v"))

    def as3(a, rows, cols, per_entry_matrix):
        a = np.ascontiguousarray(a, dtype=dtype)  # no copy when already so
        if per_entry and not per_entry_matrix:  # the kernels take all shared or all per entry
            return np.ascontiguousarray(np.broadcast_to(a, (batch, rows, cols)))
        return a.reshape((batch if per_entry_matrix else 1, rows, cols))

    keep = None
    if mask is not None:
        m = np.asarray(mask)
        if m.dtype != np.bool_:
            raise ValueError(f"mask: expected booleans (True: may attend), got dtype {m.dtype}")
        try:
            keep = np.broadcast_to(m, tuple(batch_shape) + (heads, n, n))
        except ValueError:
            raise ValueError(f"mask: shape {_shape(m)} does not broadcast to (batch..., heads, n, n) = "
                             f"{tuple(batch_shape) + (heads, n, n)}") from None
    if lengths is not None:
        ln = np.asarray(lengths)
        if ln.dtype.kind not in "iu" or ln.shape != tuple(batch_shape):
            raise ValueError(f"lengths: expected whole numbers of x's batch shape {tuple(batch_shape)}, "
                             f"got shape {_shape(ln)} dtype {ln.dtype}")
        bad = np.flatnonzero((ln < 0) | (ln > n))
        if bad.size:
            at = np.unravel_index(bad[0], ln.shape)
            raise ValueError(f"lengths: entry {tuple(int(i) for i in at)} is {int(ln[at])}, "
                             f"outside 0 to n = {n}")
        pad = (np.arange(n) < ln[..., None])[..., None, None, :]  # (..., 1, 1, n): keys kept
        keep = pad if keep is None else keep & pad
        keep = np.broadcast_to(keep, tuple(batch_shape) + (heads, n, n))
    mask4 = None
    if keep is not None:  # one byte a query-key pair: numpy's booleans read as uint8
        if device == "cuda":
            raise ValueError("mask: the CUDA path takes no mask (device='cpu' or 'auto')")
        device = "cpu"  # the CPU twin alone takes a mask: auto picks the CPU
        mask4 = np.ascontiguousarray(keep).reshape((batch, heads, n, n)).view(np.uint8)
    x3 = np.ascontiguousarray(x, dtype=dtype).reshape((batch, n, d_model))
    ws = [as3(arrays[w], d_model, dims[w], arrays[w].ndim != 2) for w in ("w_q", "w_k", "w_v")]
    q, k, v, s, p, o, info = _core.attention(
        x3, *ws, per_entry, heads, bool(causal), float(scale), mask4, device, nthreads,
        bool(progress), _main_thread())
    square = tuple(batch_shape) + ((heads,) if heads > 1 else ()) + (n, n)
    out = {
        "q": q.reshape(tuple(batch_shape) + (n, d_k)),
        "k": k.reshape(tuple(batch_shape) + (n, d_k)),
        "v": v.reshape(tuple(batch_shape) + (n, d_v)),
        "scores": s.reshape(square),
        "weights": p.reshape(square),
        "out": o.reshape(tuple(batch_shape) + (n, d_v)),
    }
    provenance = {
        "version": _core.version,
        "git_commit": _core.git_commit,
        "backend": info["backend"],
        "dtype": "float32" if dtype == np.float32 else "float64",
        "heads": heads,
        "causal": bool(causal),
        "masked": keep is not None,
        "scale": float(scale),
        "kernel_seconds": info["kernel_seconds"],
        "kernel_cpu_seconds": info["kernel_cpu_seconds"],
    }
    return AttentionResult(out, provenance)


# ---- tables ---------------------------------------------------------------------------------

_EXPERIMENTS: Optional[List[dict]] = None


def _experiments() -> List[dict]:
    global _EXPERIMENTS
    if _EXPERIMENTS is None:
        _EXPERIMENTS = _core.experiments()
    return _EXPERIMENTS


def tables() -> List[str]:
    """The names of demo's tables, in the order of ``demo --list``."""
    return [e["name"] for e in _experiments()]


def _experiment(name: str) -> dict:
    for e in _experiments():
        if e["name"] == name or e["name"] == str(name).replace("_", "-"):
            return e
    raise ValueError(f"no table {name!r}; the tables: {', '.join(tables())}")


def _py_name(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def options(name: str) -> Dict[str, Dict[str, str]]:
    """A table's options: Python name -> {"flag", "default", "help", "kind"}, from the
    table's own declaration (what ``demo --table NAME --help`` shows). An option whose default
    is "" is off unless given (an output file)."""
    return {_py_name(p["flag"]): {"flag": p["flag"], "default": p["default"], "help": p["help"],
                                  "kind": p["kind"]}
            for p in _experiment(name)["params"]}


def _text(key: str, value) -> str:
    """An option's value as demo's command line spells it."""
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{key}: expected a value, got {value!r}")
    if isinstance(value, range):
        if value.step != 1 or len(value) == 0:
            return ",".join(str(v) for v in value)
        return f"{value.start}:{value.stop}"
    if isinstance(value, (os.PathLike,)):
        return os.fspath(value)
    if isinstance(value, str):
        return value
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return ",".join(_text(key, v) for v in value)
    raise ValueError(f"{key}: expected a number, a text or a list, got {type(value).__name__}")


def _given(e: dict, opts: Dict[str, Any]) -> Dict[str, str]:
    flags = {_py_name(p["flag"]): p["flag"] for p in e["params"]}
    given = {}
    for key, value in opts.items():
        if key not in flags:
            names = ", ".join(flags) or "none"
            raise ValueError(f"{e['name']}: no option {key!r} (its options: {names})")
        given[flags[key]] = _text(key, value)
    return given


def _command_line(name: str, given: Dict[str, str], device: str, threads: int) -> str:
    words = ["demo", "--table", name]
    for flag, text in given.items():
        words += [flag, text]
    if device != "auto":
        words += ["--device", device]
    if threads:
        words += ["--threads", str(threads)]
    return " ".join(shlex.quote(w) for w in words)


_SPECIAL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _column(values: list) -> np.ndarray:
    """A column's cells as one array: int64 (uint64 past 2^63), float64 (empty cells NaN),
    a 2-D float64 array for rows of reals of one length, else an object array."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, list) for v in present):
        if len(present) == len(values) and len({len(v) for v in present}) == 1:
            return np.array([[_SPECIAL.get(c, c) for c in v] for v in values], dtype=np.float64)
        out = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            out[i] = None if v is None else np.array([_SPECIAL.get(c, c) for c in v], dtype=np.float64)
        return out
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in present)
    if present and ints and len(present) == len(values):
        if all(-(1 << 63) <= v < (1 << 63) for v in values):
            return np.array(values, dtype=np.int64)
        if all(0 <= v < (1 << 64) for v in values):
            return np.array(values, dtype=np.uint64)
    numbers = [isinstance(v, (int, float)) and not isinstance(v, bool) or v in _SPECIAL
               for v in present]
    if all(numbers):
        return np.array([math.nan if v is None else float(_SPECIAL.get(v, v)) for v in values],
                        dtype=np.float64)
    return np.array(values, dtype=object)


def _make_table(name, title, columns, values, notes, provenance, extra) -> Table:
    return Table(name, title, {c: _column(v) for c, v in zip(columns, values)}, notes,
                 provenance, extra)


def table(name: str, *, device: str = "auto", threads: Optional[int] = None,
          progress: bool = False, **opts):
    """Runs one of demo's tables (``tables()``) with its options (``options(name)``; demo's
    defaults for those not given) and returns it as a Table: column name -> array, the bits
    of ``demo --table NAME`` with the same options. A table that makes several returns a list.

    Values: numbers, texts as demo reads them ("1e6", "0:100"), lists for list options, a
    range for seeds (``seeds=range(0, 100)`` is 0:100). progress=True reports progress on
    stderr as demo does. Raises ValueError for an unknown option or a value demo refuses (its
    one-line message), OSError for an output file that exists or whose folder is missing.
    """
    e = _experiment(name)
    device, nthreads = _device(device), _threads(threads)
    given = _given(e, opts)
    command_line = _command_line(e["name"], given, device, nthreads)
    provenance_text, made = _core.run_table(e["name"], given, device, nthreads, bool(progress),
                                            _main_thread(), command_line)
    base = json.loads(provenance_text)
    out = []
    for t in made:
        run = json.loads(t["run"])
        provenance = dict(base, **run)  # as demo writes NAME.json's provenance
        out.append(_make_table(t["name"], t["title"], t["columns"], t["values"], t["notes"],
                               provenance, json.loads(t["extra"])))
    return out[0] if len(out) == 1 else out


def dk_std(**opts) -> Table:
    """The dk-std table (the spread of q . k against d_k): ``table("dk-std", **opts)``."""
    return table("dk-std", **opts)


def _read_per_seed(kind: str, path: str) -> Dict[str, np.ndarray]:
    if kind == "attention":
        stem = path[: -len(".npy")]
        return {"maps": np.load(path), "seeds": np.load(stem + ".seeds.npy"),
                "loss": np.load(stem + ".loss.npy"), "jsd": np.load(stem + ".jsd.npy"),
                "out": np.load(stem + ".out.npy")}
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    cols = {h: [r[i] for r in body] for i, h in enumerate(header)}
    out = {"config": np.array(cols["config"], dtype=object),
           "seed": np.array([int(s) for s in cols["seed"]], dtype=np.uint64)}
    for h in header[2:]:
        out[h] = np.array([float(v) for v in cols[h]], dtype=np.float64)
    return out


def sweep(kind: str = "attention", **opts) -> Table:
    """A sweep over seeds: kind "attention" (the attention-sweep table: trains one head per
    seed) or "training" (training-sweep), with table()'s options. Returns the Table with
    ``per_seed``, every seed's arrays in the order of the seeds:

    - attention: seeds (uint64), maps (seeds, rows, n): each seed's attention map on the loss
      rows, loss, jsd (to the mean map), out (seeds, rows, d_v);
    - training: config, seed, weight_on_apple, out_x, out_y, loss.

    They are the files ``--per-seed`` writes, read back (``per_seed=PATH`` keeps them there).
    """
    if kind not in ("attention", "training"):
        raise ValueError(f"kind: expected attention or training, got {kind!r}")
    suffix = ".npy" if kind == "attention" else ".csv"
    keep = opts.get("per_seed")
    with tempfile.TemporaryDirectory(prefix="attnlab-") as tmp:
        path = os.fspath(keep) if keep is not None else os.path.join(tmp, "per-seed" + suffix)
        if keep is not None and not path.endswith(suffix):
            raise ValueError(f"per_seed {path}: a {kind} sweep's per-seed file here ends in {suffix}")
        opts["per_seed"] = path
        t = table(f"{kind}-sweep", **opts)
        t.per_seed = _read_per_seed(kind, path)
    return t


# ---- reading demo's files -------------------------------------------------------------------


def _tables_from_json(doc: dict) -> List[Table]:
    out = []
    for t in doc["tables"]:
        columns = t["columns"]
        values = [[row.get(c) for row in t["rows"]] for c in columns]
        known = {"name", "title", "columns", "rows", "notes", "run"}
        extra = {k: v for k, v in t.items() if k not in known}
        provenance = dict(doc.get("provenance", {}), **t.get("run", {}))
        out.append(_make_table(t["name"], t.get("title", ""), columns, values, t.get("notes", []),
                               provenance, extra))
    return out


def load(path):
    """Reads what demo wrote: a result JSON (``--format json`` or ``--out``'s NAME.json) as a
    Table (a list when it holds several); ``demo attention --out DIR`` as an AttentionResult;
    a tables' ``--out DIR`` as {name: Table}. Raises OSError for a missing or unreadable file,
    ValueError for one that is not demo's."""
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, "attention.json")):
            arrays = {n: np.load(os.path.join(path, n + ".npy")) for n in _OUTPUTS}
            with open(os.path.join(path, "attention.json")) as f:
                doc = json.load(f)
            return AttentionResult(arrays, doc.get("provenance", {}))
        found = {}
        for name in sorted(os.listdir(path)):
            if name.endswith(".json") and not name.endswith(".part.json"):
                t = load(os.path.join(path, name))
                for one in t if isinstance(t, list) else [t]:
                    found[one.name] = one
        if not found:
            raise ValueError(f"{path}: no result JSON of demo's in this folder")
        return found
    with open(path) as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None
    if not isinstance(doc, dict) or "tables" not in doc:
        raise ValueError(f"{path}: not a result of demo's (no \"tables\")")
    made = _tables_from_json(doc)
    return made[0] if len(made) == 1 else made
