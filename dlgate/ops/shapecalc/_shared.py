"""What the shapecalc operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType


#: Lists kept in the attributes (masks, conditions) stay this small.
MAX_LIST = 256
#: How exporters spell "to the end" in a Slice of a shape.
INT64_MAX = 2 ** 63 - 1


# -- helpers ----------------------------------------------------------------------------

def _spell(ctx, j: int, r: int) -> int:
    """Index ``j`` of ``r``, sometimes spelled negatively."""
    return j - r if ctx.coin(0.3) else j


def _value(ctx, dtype: str):
    """A JSON value of ``dtype`` (as the tensor stores it): small ones mostly, sometimes the
    type's extremes (mask fill values such as float32's lowest, int8's -128)."""
    if dtype == dt.BOOL:
        return bool(ctx.coin())
    if dt.is_int(dtype):
        info = np.iinfo(dt.NUMPY[dtype])
        if ctx.coin(0.15):
            return int(ctx.choice((info.min, info.max)))
        return int(ctx.rng.randint(max(-8, int(info.min)), 15 if dtype == dt.UINT8 else 8))
    # float32's lowest for float64 too: float64's own (-1.8e308) overflows any bound arithmetic
    lowest = float(np.finfo(np.float16 if dtype == dt.FLOAT16 else np.float32).min)
    u = ctx.rng.random()
    if u < 0.15:
        v = float(ctx.choice((lowest, -1e4 if dtype != dt.FLOAT16 else -1e3, 0.0, 1.0)))
    else:
        v = ctx.rng.uniform(-4.0, 4.0)
    return float(np.asarray(v, dtype=dt.NUMPY[dtype]))


def _num(v, dtype: str) -> float:
    return float(np.asarray(v, dtype=dt.NUMPY[dtype]))


def _places(ctx, values: list, extra_hi: int = 4) -> tuple:
    """A shape holding ``values`` at distinct random positions (returned as the second
    item, one per value) plus a few free dims in [1, extra_hi]."""
    k = len(values)
    r = ctx.rng.randint(k, max(k, min(ctx.limits.max_rank, k + 2)))
    pos = ctx.rng.sample(range(r), k)
    shape = [ctx.rng.randint(1, extra_hi) for _ in range(r)]
    for p, v in zip(pos, values):
        shape[p] = v
    return tuple(shape), pos


def _pieces_for(ctx, target: list, p: float = 0.5) -> tuple:
    """Pieces assembling ``target``: each entry (at least one) comes from a fresh y's dims
    with probability ``p`` (a Gather each), the others are constants. Returns (pieces,
    y_shape)."""
    flags = [ctx.coin(p) for _ in target]
    if not any(flags):
        flags[ctx.rng.randrange(len(target))] = True
    vals = [v for v, f in zip(target, flags) if f]
    y_shape, pos = _places(ctx, vals)
    it = iter(pos)
    r = len(y_shape)
    pieces = [{"dim": _spell(ctx, next(it), r)} if f else {"const": v} for v, f in zip(target, flags)]
    return pieces, y_shape


def _slice_piece(ctx, lo: int, hi: int, r: int) -> dict:
    start = lo - r if lo < r and ctx.coin(0.3) else lo
    if hi == r:
        end = ctx.choice((r, INT64_MAX, r + 2))
    else:
        end = hi - r if ctx.coin(0.3) else hi
    return {"dims": [start, end], "lo": lo, "hi": hi}


def _scalar_pieces(ctx, target: list) -> dict:
    """Attributes reading a rank-0 ``y``: the empty Slice of its empty Shape, concatenated
    before ``target`` as constants. The Shape of a scalar is the empty shape, which an
    importer must still know statically for the Slice after it (TVM 0.26 took the runtime
    path meant for unknown shapes and its Slice converter failed)."""
    return {"pieces": [_slice_piece(ctx, 0, 0, 0)] + [{"const": v} for v in target], "y_shape": []}


def _clamp(v: int, r: int) -> int:
    v = v + r if v < 0 else v
    return min(max(v, 0), r)


def _pieces_ok(pieces: list, r: int) -> list:
    """Constraints that every piece names dims y (of rank ``r``) has."""
    ok = [len(pieces) >= 1]
    for p in pieces:
        if "dim" in p:
            ok.append(-r <= p["dim"] < r)
        elif "dims" in p:
            s, e = p["dims"]
            # empty only as a slice of a scalar's (empty) shape, see ReshapeFromShape
            ok += [(_clamp(s, r), _clamp(e, r)) == (p["lo"], p["hi"]), p["hi"] > p["lo"] or r == 0]
    return ok


def _resolve(pieces: list, yshape) -> list:
    """The shape the pieces spell, given y's dims (ints or z3 terms); constants as written."""
    r, out = len(yshape), []
    for p in pieces:
        if "all" in p:
            out += list(yshape)
        elif "dim" in p:
            out.append(yshape[p["dim"] % r])
        elif "dims" in p:
            out += list(yshape[p["lo"]:p["hi"]])
        else:
            out.append(p["const"])
    return out


def _gather_dim(b, s: str, j: int, keep_1d: bool) -> str:
    """Dim ``j`` of shape tensor ``s``: a scalar (Gather with a scalar index) or, with
    ``keep_1d``, a 1-element 1-D tensor (scalar Gather then Unsqueeze, as PyTorch's exporter
    writes; sometimes a Gather with a 1-D index, as other converters do)."""
    if keep_1d and b.rng.random() < 0.05:
        return b.node("Gather", [s, b.ints([j])], 1, axis=b.opt(0, 0))[0]
    g = b.node("Gather", [s, b.const(np.array(j, dtype=np.int64))], 1, axis=b.opt(0, 0))[0]
    if keep_1d:
        return b.node("Unsqueeze", [g, b.ints([0])], 1)[0]
    return g


def _scalar_dim(b, s: str, j: int) -> str:
    """Dim ``j`` of shape tensor ``s`` as a scalar: a scalar Gather, or a 1-D Gather (or a
    Slice) then Squeeze."""
    u = b.rng.random()
    if u < 0.6:
        return _gather_dim(b, s, j, keep_1d=False)
    if u < 0.8:
        one = b.node("Gather", [s, b.ints([j])], 1, axis=b.opt(0, 0))[0]
    else:
        end = j + 1 if j != -1 else INT64_MAX
        one = b.node("Slice", [s, b.ints([j]), b.ints([end]), b.ints([0])], 1)[0]
    if b.rng.random() < 0.5:
        return b.node("Squeeze", [one, b.ints([0])], 1)[0]
    return b.node("Squeeze", [one], 1)[0]


def _shape_tensor(b, y: str, pieces: list) -> str:
    """The 1-D int64 shape tensor the pieces spell, read from ``Shape(y)``."""
    s = b.node("Shape", [y], 1)[0]
    parts, consts = [], []

    def flush():
        if consts:
            parts.append(b.ints(consts))
            consts.clear()

    for p in pieces:
        if "const" in p:
            consts.append(p["const"])
            continue
        flush()
        if "all" in p:
            parts.append(s)
        elif "dim" in p:
            parts.append(_gather_dim(b, s, p["dim"], keep_1d=True))
        else:
            start, end = p["dims"]
            ins = [s, b.ints([start]), b.ints([end])]
            if b.rng.random() < 0.7:
                ins.append(b.ints([0]))
            parts.append(b.node("Slice", ins, 1)[0])
    flush()
    if len(parts) == 1:
        return parts[0]
    return b.node("Concat", parts, 1, axis=0)[0]


def _same_dtype(types) -> tuple:
    return tuple((t, t) for t in types)


# -- ConstantOfShape / Range / CumProd ---------------------------------------------------

class _Filled(OpSpec):
    """ConstantOfShape of ``a["value"]`` (of ``a["dtype"]``): its value range and exact value,
    and its value attribute (omitted half the time where it is the default 0.0)."""

    def value_range(self, a, ranges, ins):
        v = _num(a["value"], a["dtype"])
        return [(v, v)]

    def exact(self, a, exacts, ins):
        return _num(a["value"], a["dtype"])

    @staticmethod
    def _value(b, a):
        """The node's value attribute (drawn before its shape input is built)."""
        t, v = a["dtype"], a["value"]
        omit = t == dt.FLOAT32 and v == 0 and b.rng.random() < 0.5
        return None if omit else numpy_helper.from_array(np.array([v], dtype=dt.NUMPY[t]))


# -- shapes computed from another tensor ------------------------------------------------

class FromShape(OpSpec):
    """Two inputs: ``x`` (data) and ``y`` (only its shape is read)."""

    arity = 2
    symbolic_ok = False
    #: ``schema.allowed`` reads y as a second data input (y has x's dtype): y is no formal
    #: input of the consumer.
    schema_inputs = (0, 0)
    dtypes = _same_dtype(dt.ALL)
    ranks = (0, 1, 2, 3, 4, 5)
    onnx_ops = ("Shape", "Gather", "Unsqueeze", "Slice", "Concat")

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, tuple(a["y_shape"]))

    value_inputs = (0,)

    def value_range(self, a, ranges, ins):
        return [tuple(ranges[0])]


# -- data-dependent output shapes, made static -------------------------------------------

def _mask(ctx, size: int, count: int) -> list:
    """``size`` flags, ``count`` of them set, at random positions."""
    on = set(ctx.rng.sample(range(size), count))
    return [int(i in on) for i in range(size)]


def _argmax_attrs(ctx, shape, ax: int) -> dict:
    r = len(shape)
    return {"axis": _spell(ctx, ax, r), "n": shape[ax], "rank": r}


def _argmax_ok(x, a) -> list:
    r = x.rank
    if not (dt.is_float(x.dtype) and r == a["rank"] and -r <= a["axis"] < r):
        return [False]
    return [x.shape[a["axis"] % r] == a["n"]]


def _argmax(b, x: str, a: dict, keepdims: int) -> str:
    return b.node("ArgMax", [x], 1, axis=a["axis"], keepdims=b.opt(keepdims, 1),
                  select_last_index=b.opt(0, 0))[0]
