"""attnlab: the self-attention lesson's kernels on numpy arrays.

The same kernels and tables as the ``demo`` program, called in-process:

- ``attention(x, w_q, w_k, w_v, ...)``: batched (multi-head) attention on your own arrays, the
  computation of ``demo attention``, bit for bit;
- ``table(name, **options)``: any of demo's tables (``tables()`` lists them, ``options(name)``
  their options), its columns as numpy arrays; ``dk_std(**options)`` and ``sweep(kind,
  **options)`` (with every seed's arrays) are shorthands;
- ``load(path)``: a result JSON, an ``--out`` folder, a .npy or a per-seed CSV written by demo,
  as the same objects.

Options are demo's, named in Python style (``--d-k`` is ``d_k``) with demo's defaults, read from
the tables' own declarations; an on|off option takes True or False. Every argument is checked
before any work: a refused request raises ValueError with demo's one-line message (a request
too large for the memory available too), a file that cannot be read or written OSError;
Ctrl-C raises KeyboardInterrupt within a second and leaves nothing half-done. Files are read as
demo reads them (regular files only, never waited on, within the memory available). The kernels
run with the GIL released.
"""

import csv as _csv
import io as _io
import json as _json
import math as _math
import os as _os
import re as _re
import shlex as _shlex
import tempfile as _tempfile
import threading as _threading
import warnings as _warnings

import numpy as _np

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

_DEVICES = ["auto", "cpu", "cuda"]
_OUTPUTS = ("q", "k", "v", "scores", "weights", "out")


class AttentionResult:
    """What ``attention`` returns (and ``load`` reads from ``demo attention --out DIR``).

    q, k (..., n, d_k); v, out (..., n, d_v); scores, weights (..., n, n), or (..., heads, n, n)
    with more than one head, None when not asked for (``need_weights=False``); ``...`` is x's
    batch shape and the dtype is the computation's (float32 when every input is float32, else
    float64). ``provenance``: how it was made. Also reads as a mapping of the arrays it holds:
    ``r["out"]``, ``dict(r)``.
    """

    def __init__(self, arrays, provenance):
        for name in _OUTPUTS:
            setattr(self, name, arrays.get(name))
        self.provenance = provenance

    def keys(self):
        return [n for n in _OUTPUTS if getattr(self, n) is not None]

    def __getitem__(self, name):
        if name not in self.keys():
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def __repr__(self):
        shapes = ", ".join(f"{n}={getattr(self, n).shape}" for n in self.keys())
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
        self.per_seed = {}

    def __repr__(self):
        rows = len(next(iter(self.values()))) if self else 0
        return f"Table({self.name!r}, {rows} rows, columns {list(self)})"


# ---- arguments ------------------------------------------------------------------------------
# Each is checked before any work; where demo's command line has the same value, its own parser
# (host/parse.hpp, through _core) checks it, so that the message is the command line's.


def _cut(text, most=40):
    """text fit to be quoted in a one-line message: at most `most` characters, one line."""
    text = " ".join(text.split())
    return text if len(text) <= most else text[:most - 3] + "..."


def _show(value):
    """value as a message quotes it: its repr, cut."""
    try:
        return _cut(repr(value))
    except Exception:  # a repr that fails: the type alone
        return f"<{type(value).__name__}>"


def _is_int(value):
    return isinstance(value, (int, _np.integer)) and not isinstance(value, (bool, _np.bool_))


def _whole(name, value, check):
    """An int argument, in range as check(name, text) (one of _core's parsers) says."""
    if _is_int(value):
        return int(check(name, str(int(value))))
    if isinstance(value, str):
        raise ValueError(f"{name}: expected a whole number (an int), got the text {_show(value)}")
    check(name, _show(value))  # 2.5, True, None, [1]: never a whole number, refused in its words
    # 2.0: a whole value, but a Python float where the function takes an int (as range() does)
    raise ValueError(f"{name}: expected a whole number (an int), got the "
                     f"{type(value).__name__} {_show(value)}")


def _heads(value):
    return _whole("heads", value, lambda o, t: _core.parse_int(o, t, 1, 1 << 20))


def _threads(threads):
    """None: all cores (0 for the backend); else 1 to 4 per core, as demo's --threads."""
    return 0 if threads is None else _whole("threads", threads, _core.parse_threads)


def _switch(name, value):
    """An on/off argument: a Python boolean, nothing else."""
    if isinstance(value, (bool, _np.bool_)):
        return bool(value)
    raise ValueError(f"{name}: expected True or False, got {_show(value)}")


def _choice(name, value, allowed):
    return _core.parse_choice(name, value if isinstance(value, str) else _show(value), allowed)


def _device(device):
    return _choice("device", device, _DEVICES)


def _path(name, path):
    """A path argument as a str (str or os.PathLike of str)."""
    try:
        text = _os.fspath(path)
    except TypeError:
        text = None
    if not isinstance(text, str) or not text:
        raise ValueError(f"{name}: expected a path (a str or os.PathLike), got {_show(path)}")
    return text


def _main_thread():
    return _threading.current_thread() is _threading.main_thread()


def _shape(shape):
    """A shape as demo writes one: "(3, 2)", "(3,)", "()"."""
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _real_array(name, a):
    """a as an ndarray of real numbers (ints or floats, up to 8 bytes), without a copy when it
    is one."""
    try:
        a = _np.asarray(a)
    except (ValueError, TypeError, OverflowError, RecursionError) as e:  # ragged, odd objects
        why = str(e).split(". ")[0] or type(e).__name__
        raise ValueError(f"{name}: not an array of real numbers ({_cut(why, 60)})") from None
    if a.dtype.kind not in "fiu" or a.dtype.itemsize > 8:
        raise ValueError(f"{name}: expected real numbers, got an array of dtype {a.dtype}")
    return a


# ---- attention ------------------------------------------------------------------------------

_INT_MAX = 0x7FFFFFFF


def attention(x, w_q, w_k, w_v, *, heads=1, causal=False, mask=None, lengths=None, scale=None,
              map=None, need_weights=True, out=None, device="auto", threads=None, progress=False):
    """Scaled dot-product attention of every problem in a batch, ``demo attention``'s kernels.

    x: (n, d_model) or (..., n, d_model). w_q, w_k: (d_model, d_k), shared by the batch, or
    (..., d_model, d_k), one per batch entry (x's batch shape); w_v likewise with d_v.
    heads H splits d_k and d_v into H heads (their outputs concatenated); causal (True or
    False): query i sees keys 0..i; mask: booleans broadcastable to (..., H, n, n), True where
    query i may attend key j (PyTorch's scaled_dot_product_attention convention); lengths:
    integers of x's batch shape (() or (1,) for an x of 2 axes), keys at or past an entry's
    length are masked (key padding). A masked key has score -inf and weight 0 and never enters
    the output; a row with no key left has zero weights and output. scale: the scores' factor
    (default 1/sqrt(d_k / H)). map: real numbers broadcastable to the weights' shape (..., H,
    n, n), without the H axis for one head, each head's
    weights used instead of its softmax's (a patched, ablated or frozen map): the scores are
    computed as without it, weights holds the map on the visible keys (0 on masked ones) and
    out_i = sum over the visible j of map_ij v_j, in the order the computed weights take, so
    that ``attention(..., map=r.weights).out`` is ``r.out`` bit for bit; rows need not sum to 1
    (a zero row ablates the head); converted to the computation's dtype; the CPU alone takes
    one. The computation is float32 when every input is float32, else
    float64; C-contiguous inputs of that dtype are read in place, without a copy. device: auto,
    cpu or cuda (a CUDA build); threads: CPU threads (None: all cores; at most 4 per core).

    need_weights=False (torch.nn.MultiheadAttention's name): scores and weights are neither
    returned nor kept; the kernels write them, a few problems at a time, to a small buffer of
    their own. out: arrays to write the outputs into instead of new ones, one array (the
    output, ``out``) or a mapping of output names to arrays (an AttentionResult too), each of
    the computation's dtype and the output's shape, C-contiguous, writeable, overlapping no
    input and no other output.

    Returns an AttentionResult (q, k, v, scores, weights, out; the given arrays where given);
    the bits of ``demo attention`` on the same inputs. Raises ValueError, before any work, for
    an argument of the wrong type, rank, shape or range (demo's wording where it has the
    option), a request that needs more memory than is available ("needs about ... GB"), or
    device="cuda" where no GPU answers; KeyboardInterrupt on Ctrl-C.
    """
    arrays = {n: _real_array(n, a) for n, a in (("x", x), ("w_q", w_q), ("w_k", w_k), ("w_v", w_v))}
    x = arrays["x"]
    batch_shape, n, d_model, d_k, d_v = _attention_shapes(arrays)
    batch = int(_np.prod(batch_shape, dtype=_np.float64)) if batch_shape else 1
    if max(batch, n, d_model, d_k, d_v) > _INT_MAX:
        raise ValueError(f"x: shape {_shape(x.shape)} has a dimension beyond 2^31")
    heads = _heads(heads)
    if d_k % heads:
        raise ValueError(f"heads {heads}: d_k = {d_k} (w_q) is not divisible by it")
    if d_v % heads:
        raise ValueError(f"heads {heads}: d_v = {d_v} (w_v) is not divisible by it")
    causal = _switch("causal", causal)
    need_weights = _switch("need_weights", need_weights)
    progress = _switch("progress", progress)
    scale = 1.0 / _math.sqrt(d_k // heads) if scale is None else _scale(scale)
    device, nthreads = _device(device), _threads(threads)
    m, ln = _mask_arguments(mask, lengths, batch_shape, heads, n)
    masked = m is not None or ln is not None
    if masked:
        if device == "cuda":
            raise ValueError("mask: the CUDA path takes no mask (device='cpu' or 'auto')")
        device = "cpu"  # the CPU twin alone takes a mask: auto picks the CPU
    square = batch_shape + ((heads,) if heads > 1 else ()) + (n, n)
    given_map = _map_argument(map, square)
    if given_map is not None:
        if device == "cuda":
            raise ValueError("map: the CUDA path takes no map (device='cpu' or 'auto')")
        device = "cpu"
    dtype = _np.dtype(_np.float32 if all(a.dtype == _np.float32 for a in arrays.values())
                      else _np.float64)
    if dtype == _np.float32:
        with _np.errstate(over="ignore"):  # the overflow is what is checked
            scale32 = _np.float32(scale)
        if not 0 < scale32 < _np.inf:
            raise ValueError(f"scale: {_show(scale)} is {'0' if scale32 == 0 else 'inf'} in "
                             "float32 (every input is float32; float64 inputs hold it)")
    per_entry = any(arrays[w].ndim != 2 for w in ("w_q", "w_k", "w_v"))
    shapes = {"q": batch_shape + (n, d_k), "k": batch_shape + (n, d_k), "v": batch_shape + (n, d_v),
              "scores": square, "weights": square, "out": batch_shape + (n, d_v)}
    given = _given_outputs(out, shapes, dtype, need_weights,
                           [a for a in list(arrays.values()) + [m, ln, given_map] if a is not None])

    # Memory, before anything is allocated: the copies made here (inputs converted or not
    # contiguous, shared weights broadcast per entry, the dense mask) and what the call makes.
    word = dtype.itemsize
    copies = 0
    for name, a in arrays.items():
        copy = a.dtype != dtype or not a.flags.c_contiguous
        if per_entry and name != "x" and a.ndim == 2:
            copies += batch * a.size * word + (a.size * word if copy else 0)
        elif copy:
            copies += a.size * word
    if masked:
        copies += batch * heads * n * n + (batch * n if ln is not None else 0)
    if given_map is not None:
        copies += batch * heads * n * n * word
    need, square_bytes = _core.attention_bytes(batch, n, d_model, d_k, d_v, per_entry, heads, word,
                                               masked, given_map is not None, need_weights,
                                               list(given))
    _check_memory(x, need + copies, square_bytes)

    # The kernels' arrays: (batch, rows, cols), C-contiguous, of the computation's dtype.
    def as3(a, rows, cols, shared=False):
        a = _np.ascontiguousarray(a, dtype=dtype)  # no copy when already so
        if shared and per_entry:  # the kernels take all shared or all per entry
            return _np.ascontiguousarray(_np.broadcast_to(a, (batch, rows, cols)))
        return a.reshape((1 if shared else batch, rows, cols))

    x3 = as3(x, n, d_model)
    ws = [as3(arrays[w], d_model, c, arrays[w].ndim == 2)
          for w, c in (("w_q", d_k), ("w_k", d_k), ("w_v", d_v))]
    mask4 = _dense_mask(m, ln, batch_shape + (heads, n, n)) if masked else None
    flat = {"q": (batch, n, d_k), "k": (batch, n, d_k), "v": (batch, n, d_v),
            "scores": (batch, heads, n, n), "weights": (batch, heads, n, n), "out": (batch, n, d_v)}
    map4 = None
    if given_map is not None:
        map4 = _np.empty((batch, heads, n, n), dtype=dtype)
        map4.reshape(square)[...] = given_map
    made = _core.attention(x3, *ws, per_entry, heads, causal, float(scale), mask4, map4, device,
                           nthreads, progress, _main_thread(), need_weights,
                           {name: a.reshape(flat[name]) for name, a in given.items()})
    results = {}
    for name, a in zip(_OUTPUTS, made[:6]):
        if name in given:
            results[name] = given[name]
        elif a is not None:
            results[name] = a.reshape(shapes[name])
    info = made[6]
    provenance = {
        "version": _core.version,
        "git_commit": _core.git_commit,
        "backend": info["backend"],
        "dtype": dtype.name,
        "heads": heads,
        "causal": causal,
        "masked": masked,
        "map_given": given_map is not None,
        "scale": float(scale),
        "need_weights": need_weights,
        "kernel_seconds": info["kernel_seconds"],
        "kernel_cpu_seconds": info["kernel_cpu_seconds"],
    }
    _warn_non_finite(arrays, results.get("scores"), causal, mask4, dtype)
    return AttentionResult(results, provenance)


def _warn_non_finite(arrays, scores, causal, mask4, dtype):
    """demo attention's warnings, as RuntimeWarnings: the first input holding a value that is not
    finite (where), and the visible scores beyond the dtype's range (when scores are returned)."""
    for name, a in arrays.items():
        if a.size == 0 or _np.isfinite(a.max()) and _np.isfinite(a.min()):
            continue  # (max and min: NaN and inf reach them, without an array the size of a)
        bad = ~_np.isfinite(a)
        if bad.any():
            at = _np.unravel_index(int(_np.argmax(bad)), a.shape)
            _warnings.warn(f"{name} holds {float(a[at])} at {list(map(int, at))} (the first "
                           f"non-finite input); the outputs that depend on it are non-finite, "
                           f"masked keys excepted", RuntimeWarning, stacklevel=3)
            break
    if scores is None or scores.size == 0 or _np.isfinite(scores.max()) and _np.isfinite(
            scores.min()):
        return
    visible = _np.isinf(scores)
    n = scores.shape[-1]
    if causal:
        visible &= _np.tril(_np.ones((n, n), dtype=bool))
    if mask4 is not None:
        visible &= mask4.reshape(visible.shape) != 0
    count = int(visible.sum())
    if count:
        _warnings.warn(f"{count} visible score{'s' if count != 1 else ''} beyond {dtype.name}'s "
                       f"range (+-inf); tied infinite scores share the weight equally",
                       RuntimeWarning, stacklevel=3)


def _attention_shapes(arrays):
    """x's batch shape, n, d_model, d_k and d_v, the weights checked against x."""
    x = arrays["x"]
    if x.ndim < 2:
        raise ValueError(f"x: shape {_shape(x.shape)}: expected (n, d_model) or (batch..., n, d_model)")
    batch_shape = tuple(x.shape[:-2])
    n, d_model = x.shape[-2:]
    cols = {}
    for name, what in (("w_q", "d_k"), ("w_k", "d_k"), ("w_v", "d_v")):
        w = arrays[name]
        if w.ndim < 2 or (w.ndim != 2 and tuple(w.shape[:-2]) != batch_shape):
            each = ("(" + ", ".join(str(b) for b in batch_shape) + f", d_model, {what})"
                    if batch_shape else "")
            raise ValueError(
                f"{name}: shape {_shape(w.shape)} does not fit x shape {_shape(x.shape)}: expected "
                f"(d_model, {what})" + (f" or one matrix per batch entry {each}" if each else ""))
        if w.shape[-2] != d_model:
            raise ValueError(f"{name}: shape {_shape(w.shape)} does not fit x shape {_shape(x.shape)}: "
                             f"it needs d_model = {d_model} rows")
        cols[name] = w.shape[-1]
    if cols["w_k"] != cols["w_q"]:
        raise ValueError(f"w_k: shape {_shape(arrays['w_k'].shape)} gives d_k = {cols['w_k']}, but w_q "
                         f"shape {_shape(arrays['w_q'].shape)} gives d_k = {cols['w_q']}")
    if min((n, d_model, cols["w_q"], cols["w_v"]) + batch_shape) < 1:
        raise ValueError(f"x: shape {_shape(x.shape)} (and the weights' columns) must have no empty axis")
    return batch_shape, n, d_model, cols["w_q"], cols["w_v"]


def _scale(scale):
    """scale: a real number in (0, 1e300], as demo's --scale."""
    text = _show(scale)
    if isinstance(scale, (int, float, _np.integer, _np.floating)) and \
            not isinstance(scale, (bool, _np.bool_)):
        try:
            text = repr(float(scale))
        except OverflowError:  # an int beyond float's range: refused as written
            pass
    return _core.parse_real("scale", text, 0, 1e300, True)


def _mask_arguments(mask, lengths, batch_shape, heads, n):
    """mask and lengths as arrays (None where not given), checked against the problem."""
    m = ln = None
    if mask is not None:
        target = batch_shape + (heads, n, n)
        m = _np.asarray(mask)
        if m.dtype != _np.bool_:
            raise ValueError(f"mask: expected booleans (True: may attend), got dtype {m.dtype}")
        if not _broadcasts_to(m.shape, target):
            raise ValueError(f"mask: shape {_shape(m.shape)} does not broadcast to (batch..., heads, n, n) "
                             f"= {_shape(target)}")
    if lengths is not None:
        ln = _np.asarray(lengths)
        allowed = (batch_shape,) if batch_shape else ((), (1,))  # as demo attention --lengths
        if ln.dtype.kind not in "iu" or ln.shape not in allowed:
            want = " or ".join(_shape(s) for s in allowed)
            raise ValueError(f"lengths: expected whole numbers of x's batch shape {want}, "
                             f"got shape {_shape(ln.shape)} dtype {ln.dtype}")
        ln = ln.reshape(batch_shape)
        bad = _np.flatnonzero((ln < 0) | (ln > n))
        if bad.size:
            at = _np.unravel_index(bad[0], ln.shape)
            raise ValueError(f"lengths: entry {tuple(int(i) for i in at)} is {int(ln[at])}, "
                             f"outside 0 to n = {n}")
    return m, ln


def _broadcasts_to(shape, target):
    """Whether an array of shape broadcasts to target, target unchanged."""
    try:
        return _np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def _map_argument(given, target):
    """attention's map=: an array of real numbers that broadcasts to target (None: no map)."""
    if given is None:
        return None
    a = _real_array("map", given)
    if not _broadcasts_to(a.shape, target):
        raise ValueError(f"map: shape {_shape(a.shape)} does not broadcast to the weights' shape "
                         f"{_shape(target)}")
    bad = _np.flatnonzero(~_np.isfinite(a))
    if bad.size:
        at = _np.unravel_index(bad[0], a.shape)
        raise ValueError(f"map: entry {tuple(int(i) for i in at)} is {a[at]}, not a finite number")
    return a


def _dense_mask(m, ln, target):
    """The kernels' mask (batch, heads, n, n), one byte a query-key pair (numpy's booleans read
    as uint8), built in one array: the mask broadcast, then keys at or past the lengths off."""
    keep = _np.empty(target, dtype=_np.bool_)
    keep[...] = True if m is None else m
    if ln is not None:
        keep &= (_np.arange(target[-1]) < ln[..., None])[..., None, None, :]
    return keep.reshape((-1,) + target[-3:]).view(_np.uint8)


def _check_memory(x, need, square_bytes):
    """Refuses, as demo attention does, a call that needs more memory than is available."""
    available = _core.memory_available()
    if need > available:
        alone = (f" (scores and weights alone {_core.human_bytes(square_bytes)})"
                 if square_bytes else "")
        raise ValueError(f"x: shape {_shape(x.shape)}: the problem needs about "
                         f"{_core.human_bytes(need)} of memory{alone}, this machine has "
                         f"{_core.human_bytes(max(available, 0))} available")


def _given_outputs(out, shapes, dtype, need_weights, inputs):
    """attention's out=: {name: array}, each checked against what that output is."""
    if out is None:
        return {}
    if isinstance(out, _np.ndarray):
        items = [("out", out)]
    elif isinstance(out, (dict, AttentionResult)):
        items = [(k, out[k]) for k in out.keys()]
    else:
        raise ValueError(f"out: expected an array (the output) or a mapping of output names to "
                         f"arrays, got {_show(out)}")
    given = {}
    for name, a in items:
        if a is None:
            continue
        where = f"out[{name!r}]"
        if name not in _OUTPUTS:
            raise ValueError(f"out: no output {_show(name)} (the outputs: {', '.join(_OUTPUTS)})")
        if name in ("scores", "weights") and not need_weights:
            raise ValueError(f"{where}: given, but need_weights=False computes no {name} to keep")
        if not isinstance(a, _np.ndarray):
            raise ValueError(f"{where}: expected a numpy array, got {_show(a)}")
        if a.dtype != dtype:
            raise ValueError(f"{where}: dtype {a.dtype}, but the computation's is {dtype} "
                             f"(float32 when every input is float32, else float64)")
        if a.shape != shapes[name]:
            raise ValueError(f"{where}: shape {_shape(a.shape)}, expected {_shape(shapes[name])}")
        if not a.flags.c_contiguous:
            raise ValueError(f"{where}: not C-contiguous (np.empty gives one that is)")
        if not a.flags.writeable:
            raise ValueError(f"{where}: read-only")
        for other in inputs:
            if _np.may_share_memory(a, other):
                raise ValueError(f"{where}: overlaps an input (an output is written while the "
                                 f"inputs are read)")
        for other_name, other in given.items():
            if _np.may_share_memory(a, other):
                raise ValueError(f"{where}: overlaps out[{other_name!r}]")
        given[name] = a
    return given


# ---- tables ---------------------------------------------------------------------------------

_EXPERIMENTS = None


def _experiments():
    global _EXPERIMENTS
    if _EXPERIMENTS is None:
        _EXPERIMENTS = _core.experiments()
    return _EXPERIMENTS


def tables():
    """The names of demo's tables, in the order of ``demo --list``."""
    return [e["name"] for e in _experiments()]


def _experiment(name):
    if isinstance(name, str):
        for e in _experiments():
            if e["name"] == name or e["name"] == name.replace("_", "-"):
                return e
    raise ValueError(f"no table {_show(name)}; the tables: {', '.join(tables())}")


# Options whose Python name is not the flag's: attention-sweep's --map (learned, uniform or known:
# the heads' maps trained or frozen) is map_mode=, as attention()'s map= is a given map array.
_PY_NAMES = {"--map": "map_mode"}


def _flag_name(flag):
    return flag.lstrip("-").replace("-", "_")


def _py_name(flag):
    return _PY_NAMES.get(flag, _flag_name(flag))


def options(name):
    """A table's options: Python name -> {"flag", "default", "help", "kind"}, from the
    table's own declaration (what ``demo --table NAME --help`` shows). The Python name is the
    flag's (--d-k is d_k), but for attention-sweep's --map: map_mode (attention()'s map= is a
    given map). An option whose default
    is "" is off unless given (an output file); an option of kind "on|off" takes True or False
    (a list of them where the option takes a list)."""
    return {_py_name(p["flag"]): {"flag": p["flag"], "default": p["default"], "help": p["help"],
                                  "kind": p["kind"]}
            for p in _experiment(name)["params"]}


def _is_switch(param):
    return set(param["kind"].split("|")) == {"on", "off"}


def _switch_text(key, value):
    """An on|off option's value: True or False, or a list of them (a grid's axis)."""
    if isinstance(value, (bool, _np.bool_)):
        return "on" if value else "off"
    if isinstance(value, (list, tuple)) and value and \
            all(isinstance(v, (bool, _np.bool_)) for v in value):
        return ",".join("on" if v else "off" for v in value)
    raise ValueError(f"{key}: expected True or False (or a list of them), got {_show(value)}")


def _text(key, value, inner=False):
    """An option's value as demo's command line spells it."""
    if isinstance(value, (bool, _np.bool_)):
        raise ValueError(f"{key}: expected a number, a text or a list, got {value!r} (True and "
                         f"False are for on|off options)")
    empty = (isinstance(value, (range, list, tuple)) and len(value) == 0 or
             isinstance(value, _np.ndarray) and value.ndim == 1 and value.size == 0)
    if empty and not inner:
        raise ValueError(f"{key}: {_show(value)} is empty: give at least one value")
    if isinstance(value, range) and not inner:
        # A:B names seeds A .. B-1 with B below 2^64: a range up to 2^64 is its list.
        if value.step != 1 or value.stop >= 1 << 64:
            return ",".join(str(v) for v in value)
        return f"{value.start}:{value.stop}"
    if isinstance(value, _os.PathLike) and not inner:
        return _path(key, value)
    if isinstance(value, str):
        return value
    if isinstance(value, _np.generic):
        value = value.item()
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, (list, tuple, _np.ndarray)) and not inner:
        if isinstance(value, _np.ndarray) and value.ndim != 1:
            raise ValueError(f"{key}: expected a list of values, got an array of shape "
                             f"{_shape(value.shape)}")
        return ",".join(_text(key, v, inner=True) for v in value)
    raise ValueError(f"{key}: expected a number, a text or a list of them, got {_show(value)}")


# Old keyword names, still read as the new one with a DeprecationWarning (as demo reads --dk as --d-k).
_DEPRECATED_NAMES = {"dk": "d_k"}


def _given(e, opts):
    params = {_py_name(p["flag"]): p for p in e["params"]}
    given = {}
    for key, value in opts.items():
        if key in _DEPRECATED_NAMES and _DEPRECATED_NAMES[key] in params:
            new = _DEPRECATED_NAMES[key]
            if new in opts:
                raise ValueError(f"{e['name']}: {key}= and {new}= name one option: give {new}=")
            _warnings.warn(f"{key}= is deprecated: it is read as {new}=, its name now",
                           DeprecationWarning, stacklevel=4)
            key = new
        renamed = [p for p in e["params"]
                   if p["flag"] in _PY_NAMES and _flag_name(p["flag"]) == key]
        if key not in params and renamed:
            raise ValueError(f"{e['name']}: {key}= is {_py_name(renamed[0]['flag'])}= here "
                             f"({renamed[0]['flag']})")
        if key not in params:
            names = ", ".join(params) or "none"
            raise ValueError(f"{e['name']}: no option {key!r} (its options: {names})")
        p = params[key]
        given[p["flag"]] = _switch_text(key, value) if _is_switch(p) else _text(key, value)
    return given


def _command_line(name, given, device, threads):
    words = ["demo", "--table", name]
    for flag, text in given.items():
        words += [flag, text]
    if device != "auto":
        words += ["--device", device]
    if threads:
        words += ["--threads", str(threads)]
    return " ".join(_shlex.quote(w) for w in words)


_SPECIAL = {"nan": _math.nan, "inf": _math.inf, "-inf": -_math.inf}


def _reals(cell):
    """A cell's list of reals ("nan", "inf", "-inf" for the non-finite) as a float64 array."""
    return _np.array([_SPECIAL.get(c, c) if isinstance(c, str) else c for c in cell],
                     dtype=_np.float64)


def _column(values):
    """A column's cells as one array: int64 (uint64 past 2^63), float64 (empty cells NaN; whole
    numbers with empty cells only up to 2^53, which float64 holds exactly), a 2-D float64 array
    for rows of reals of one length, else an object array."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, list) for v in present):
        if len(present) == len(values) and len({len(v) for v in present}) == 1:
            return _np.stack([_reals(v) for v in values])
        out = _np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            out[i] = None if v is None else _reals(v)
        return out
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in present)
    if present and ints and len(present) == len(values):
        if all(-(1 << 63) <= v < (1 << 63) for v in values):
            return _np.array(values, dtype=_np.int64)
        if all(0 <= v < (1 << 64) for v in values):
            return _np.array(values, dtype=_np.uint64)
    if present and ints and any(abs(v) > (1 << 53) for v in present):
        # Empty cells beside whole numbers float64 cannot hold (a seed of 2^64 - 1): the cells
        # as they are (ints and None), never rounded.
        out = _np.empty(len(values), dtype=object)
        out[:] = values
        return out
    numbers = [isinstance(v, (int, float)) and not isinstance(v, bool)
               or isinstance(v, str) and v in _SPECIAL for v in present]
    if all(numbers):
        return _np.array([_math.nan if v is None else float(_SPECIAL.get(v, v)) for v in values],
                         dtype=_np.float64)
    out = _np.empty(len(values), dtype=object)
    for i, v in enumerate(values):  # one by one: a list in a cell stays one cell
        out[i] = _reals(v) if isinstance(v, list) else v
    return out


def _make_table(name, title, columns, values, notes, provenance, extra):
    return Table(name, title, {c: _column(v) for c, v in zip(columns, values)}, notes,
                 provenance, extra)


def table(name, *, device="auto", threads=None, progress=False, **opts):
    """Runs one of demo's tables (``tables()``) with its options (``options(name)``; demo's
    defaults for those not given) and returns it as a Table: column name -> array, the bits
    of ``demo --table NAME`` with the same options. A table that makes several returns a list.

    Values: numbers, texts as demo reads them ("1e6", "0:100"), lists for list options, a
    range for seeds (``seeds=range(0, 100)`` is 0:100), True or False for an on|off option
    (``causal=True``). progress=True reports progress on stderr as demo does. Raises ValueError
    for an unknown option or a value demo refuses (its one-line message), OSError for an output
    file that exists or whose folder is missing.
    """
    return _table(name, device, threads, progress, opts)


def _table(name, device, threads, progress, opts, unrecorded=()):
    """table()'s work; the flags in unrecorded (a temporary file of sweep()'s) are left out of
    the provenance's command line, which is then the demo command that makes the same table."""
    e = _experiment(name)
    device, nthreads = _device(device), _threads(threads)
    progress = _switch("progress", progress)
    given = _given(e, opts)
    shown = {flag: text for flag, text in given.items() if flag not in unrecorded}
    command_line = _command_line(e["name"], shown, device, nthreads)
    provenance_text, made = _core.run_table(e["name"], given, device, nthreads, progress,
                                            _main_thread(), command_line)
    base = _json.loads(provenance_text)
    out = []
    for t in made:
        run = _json.loads(t["run"])
        provenance = dict(base, **run)  # as demo writes NAME.json's provenance
        out.append(_make_table(t["name"], t["title"], t["columns"], t["values"], t["notes"],
                               provenance, _json.loads(t["extra"])))
    return out[0] if len(out) == 1 else out


def dk_std(**opts):
    """The dk-std table (the spread of q . k against d_k): ``table("dk-std", **opts)``."""
    return table("dk-std", **opts)


_PER_SEED = {"attention": (".npy", ".csv"), "training": (".csv",)}


def sweep(kind="attention", **opts):
    """A sweep over seeds: kind "attention" (the attention-sweep table: trains one head per
    seed) or "training" (training-sweep), with table()'s options. Returns the Table with
    ``per_seed``, every seed's arrays in the order of the seeds, read back from the files
    ``--per-seed`` writes (``per_seed=PATH`` keeps them there, else a temporary folder holds
    them), each array or column under its name:

    - attention, PATH.npy: maps (seeds, rows, n) (seeds, heads, rows, n with heads > 1; with
      many inputs an axis of the measured inputs after the seeds), each seed's attention map on
      the loss rows, and each PATH.NAME.npy beside it under NAME: seeds, loss, start_loss,
      test_loss, converged, generalized, diverged, jsd (to the mean map), nudge_jsd (with
      nudge), jsd_to_known and found (tasks with a known map), out (the outputs on the loss
      rows), w_q, w_k, w_v (and w_o with train="qkvo"): the final weights;
    - a CSV (training; attention with PATH.csv): one array per column (config, seed,
      weight_on_apple, out_x, out_y, loss for training).

    attention's map_mode= is demo's --map: "learned" (default), or every head's map frozen,
    "uniform" (over the visible keys) or "known" (the task's known map), W_V (and W_O) alone
    trained; a list of them runs each (a grid).

    Raises ValueError as table() does, OSError when a file per_seed would write exists.
    """
    kind = _choice("kind", kind, list(_PER_SEED))
    keep = opts.get("per_seed")
    with _tempfile.TemporaryDirectory(prefix="attnlab-") as tmp:
        if keep is None:
            path = _os.path.join(tmp, "per-seed" + _PER_SEED[kind][0])
        else:
            path = _path("per_seed", keep)
            suffix = _os.path.splitext(path)[1].lower()
            if suffix not in _PER_SEED[kind]:
                raise ValueError(f"per_seed {path}: a {kind} sweep's per-seed file ends in "
                                 f"{' or '.join(_PER_SEED[kind])}")
            for f in _per_seed_files(path):
                if _os.path.lexists(f):
                    raise OSError(f"per_seed {f} exists")
        opts["per_seed"] = path
        device = opts.pop("device", "auto")
        threads = opts.pop("threads", None)
        progress = opts.pop("progress", False)
        try:
            t = _table(f"{kind}-sweep", device, threads, progress, opts,
                       unrecorded=("--per-seed",) if keep is None else ())
        except ValueError as e:
            if keep is not None or "with a grid of" not in str(e):
                raise
            # The per-seed arrays are of one configuration: a grid is table()'s.
            raise ValueError(f"sweep() returns one configuration's per-seed arrays; "
                             f"{str(e).split(': ')[0].replace('--per-seed with ', '')}: run "
                             f"table('{kind}-sweep', ...) for the grid, or one sweep() per "
                             f"configuration") from None
        t.per_seed = _read_per_seed(path)
    return t


def _per_seed_files(path):
    """The files --per-seed PATH can write: PATH, and for .npy every array that may lie beside it
    (which of them a run writes depends on its request)."""
    return _core.per_seed_files(path) if path.lower().endswith(".npy") else [path]


def _read_per_seed(path):
    if not path.lower().endswith(".npy"):
        return _read_csv(path)
    stem = path[:-4]
    return {("maps" if f == path else f[len(stem) + 1:-4]): _read_npy(f)
            for f in _per_seed_files(path) if f == path or _os.path.lexists(f)}


# ---- reading demo's files -------------------------------------------------------------------
# Every file goes through demo's readers (_core.read_*: a regular file only, opened without
# waiting, at most the memory available; .npy and JSON checked as demo checks them); content
# that is not what demo writes raises ValueError naming the file, an unreadable file OSError.


def _read_npy(path):
    descr, shape, data = _core.read_npy(path)
    if descr == "|b1" and data.size and data.max() > 1:
        raise ValueError(f"{path}: booleans that are neither 0 nor 1: not a .npy numpy writes")
    return data.view(_np.dtype(descr)).reshape(shape)


_INT_TEXT = _re.compile(r"-?[0-9]+")
_REAL_TEXT = _re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?|-?(nan|inf)")


def _csv_cell(text):
    if text == "":
        return None
    if _INT_TEXT.fullmatch(text):
        return int(text)
    if _REAL_TEXT.fullmatch(text):
        return float(text)
    return text


def _is_number_text(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def _read_csv(path):
    """A CSV demo writes (a --per-seed file, one table of --format csv): {column: array}."""
    data = _core.read_bytes(path)
    try:
        rows = list(_csv.reader(_io.StringIO(data.decode("utf-8"), newline="")))
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text: not a CSV of demo's") from None
    except _csv.Error as e:
        raise ValueError(f"{path}: not a CSV of demo's ({e})") from None
    rows = [r for r in rows if r]
    for i, r in enumerate(rows):
        if r[0].startswith("#"):
            raise ValueError(f"{path}: a line starting with '#' ({_show(r[0])}): several tables "
                             f"in one CSV (demo's --format json keeps them apart)")
    if not rows:
        raise ValueError(f"{path}: empty: not a CSV of demo's (a header line, then rows)")
    header = rows[0]
    if all(_is_number_text(h) for h in header):
        raise ValueError(f"{path}: first line {_show(','.join(header))} is numbers, not column "
                         f"names: a matrix (demo attention's input), not a CSV demo writes "
                         f"(numpy.loadtxt(path, delimiter=',') reads it)")
    if len(set(header)) != len(header) or "" in header:
        raise ValueError(f"{path}: header {_show(','.join(header))}: empty or repeated column names")
    for i, r in enumerate(rows[1:]):
        if len(r) != len(header):
            raise ValueError(f"{path}: row {i + 1} has {len(r)} values, the header {len(header)}")
    return {h: _column([_csv_cell(r[c]) for r in rows[1:]]) for c, h in enumerate(header)}


def _read_result(path):
    """A result JSON of demo's as its Tables."""
    return _tables_from_json(_json.loads(_core.read_json(path)), path)


def _cell_ok(v):
    if v is None or isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool)):
        return not isinstance(v, int) or -(1 << 63) <= v < (1 << 64)
    return isinstance(v, list) and all(
        (isinstance(c, (int, float)) and not isinstance(c, bool)) or
        (isinstance(c, str) and c in _SPECIAL) for c in v)


def _tables_from_json(doc, path):
    def bad(why):
        return ValueError(f"{path}: {why}: not a result file of demo's")

    if not isinstance(doc, dict) or not isinstance(doc.get("tables"), list):
        raise bad('no "tables" list')
    base = doc.get("provenance", {})
    if not isinstance(base, dict):
        raise bad('"provenance" is not an object')
    out = []
    for i, t in enumerate(doc["tables"]):
        if not isinstance(t, dict):
            raise bad(f"table {i} is not an object")
        name, columns, rows = t.get("name"), t.get("columns"), t.get("rows")
        title, notes, run = t.get("title", ""), t.get("notes", []), t.get("run", {})
        if not isinstance(name, str):
            raise bad(f'table {i} has no "name" text')
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns) \
                or len(set(columns)) != len(columns):
            raise bad(f'table {_show(name)}: "columns" is not a list of distinct names')
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise bad(f'table {_show(name)}: "rows" is not a list of objects')
        if not isinstance(title, str) or not isinstance(run, dict) or \
                not isinstance(notes, list) or not all(isinstance(s, str) for s in notes):
            raise bad(f'table {_show(name)}: "title", "notes" or "run" is not what demo writes')
        values = [[row.get(c) for row in rows] for c in columns]
        for c, cells in zip(columns, values):
            for r, v in enumerate(cells):
                if not _cell_ok(v):
                    raise bad(f"table {_show(name)}, row {r}, column {_show(c)}: {_show(v)} is "
                              f"not a cell demo writes")
        known = {"name", "title", "columns", "rows", "notes", "run"}
        extra = {k: v for k, v in t.items() if k not in known}
        out.append(_make_table(name, title, columns, values, notes, dict(base, **run), extra))
    if not out:
        raise bad("no tables")
    return out


def _read_attention_folder(path):
    doc_path = _os.path.join(path, "attention.json")
    doc = _json.loads(_core.read_json(doc_path))
    _tables_from_json(doc, doc_path)  # a result of demo's, as any other
    arrays = {n: _read_npy(_os.path.join(path, n + ".npy")) for n in _OUTPUTS}
    dtypes = {a.dtype for a in arrays.values()}
    shapes = {n: a.shape for n, a in arrays.items()}
    fits = (len(dtypes) == 1 and dtypes.pop() in (_np.float32, _np.float64)
            and all(len(s) >= 2 for s in shapes.values())
            and shapes["q"] == shapes["k"] and shapes["v"] == shapes["out"]
            and shapes["scores"] == shapes["weights"] and shapes["q"][:-1] == shapes["v"][:-1])
    if not fits:
        listed = ", ".join(f"{n}.npy {a.dtype} {_shape(a.shape)}" for n, a in arrays.items())
        raise ValueError(f"{path}: {listed}: not the arrays of one demo attention --out")
    return AttentionResult(arrays, doc.get("provenance", {}))


def load(path):
    """Reads what demo wrote: a result JSON (``--format json`` or ``--out``'s NAME.json) as a
    Table (a list when it holds several); ``demo attention --out DIR`` as an AttentionResult;
    a tables' ``--out DIR`` as {name: Table}; a .npy (``--out``'s arrays, ``--per-seed``'s) as
    its array; a CSV (``--per-seed``, ``--format csv`` of one table) as {column: array}.
    Raises OSError for a missing or unreadable file (a FIFO, a device: never waited on),
    ValueError for one that is not demo's (one line naming it)."""
    path = _path("path", path)
    if _os.path.isdir(path):
        if _os.path.lexists(_os.path.join(path, "attention.json")):
            return _read_attention_folder(path)
        found = {}
        for name in sorted(_os.listdir(path)):
            if name.endswith(".json") and not name.endswith(".part.json"):
                for one in _read_result(_os.path.join(path, name)):
                    found[one.name] = one
        if not found:
            raise ValueError(f"{path}: no result JSON of demo's in this folder")
        return found
    suffix = _os.path.splitext(path)[1].lower()
    if suffix == ".npy":
        return _read_npy(path)
    if suffix == ".csv":
        return _read_csv(path)
    if suffix == ".json" or not _os.path.lexists(path):
        made = _read_result(path)  # a missing file: the reader's OSError
        return made[0] if len(made) == 1 else made
    raise ValueError(f"{path}: not a file demo writes (a folder, .json, .npy or .csv)")
