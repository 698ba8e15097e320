"""Shape computation as data: operators whose outputs are shaped by values (ConstantOfShape,
Range, NonZero, Compress, Unique), CumProd, and the idioms exporters write to compute a
shape from another tensor at run time (Shape -> Gather/Slice -> Unsqueeze/Concat -> the
consumer).

dlgate's graphs have static shapes, so every value that decides a shape is fixed at
generation time by construction:

* ConstantOfShape and Range read only constants (made by the lowering). dlgate's generator
  gives every node at least one tensor input, so these two specs take an *anchor*: a graph
  tensor whose values (and shape) do not reach the output (``value_inputs = ()``) and that
  the ONNX node does not read (the model keeps it as an unused input, or a dead branch).
  The anchor's dtype is the one the ONNX schema checks against the operator's first formal
  input (``schema.allowed``): int64 for ConstantOfShape, Range's T for Range.
* The ``...FromShape`` specs (and ``TriluComputedK``) read the *shape* of a tensor ``y``
  (its values never reach the output) and assemble a shape tensor from its dims and
  constants, spelled as exporters do: ``Shape(y)``, ``Gather`` with a scalar int64 index
  then ``Unsqueeze`` (axes as an input), or ``Slice`` of the shape, and ``Concat`` along
  axis 0 with int64 constant pieces. ``requires``/``infer`` are written in terms of y's
  dims with :mod:`dlgate.spec.sym`; sampling is concrete (``symbolic_ok = False``) and
  every spec has a ``backward``. Pieces are JSON: ``{"all": 1}`` (the whole shape),
  ``{"dim": j}`` (one dim, j possibly negative), ``{"dims": [start, end], "lo": lo, "hi":
  hi}`` (a Slice of the shape, spelled ``start``/``end``, meaning dims ``lo:hi``), ``{"const":
  c}``. ``y_shape`` is the shape sampling chose for a fresh ``y`` (a reused tensor may have
  another shape that satisfies ``requires``).
* NonZero and Compress select with a mask whose number of nonzeros is known: a constant
  mask made by the lowering, or (NonZero, float inputs) the one-per-row mask exporters
  build from an arg-max, ``Equal(ArgMax(x, axis, keepdims=1), positions)``; NonZero is
  lowered as the boolean-mask indexing idiom ``x[mask]`` (NonZero -> Transpose ->
  GatherND). Unique reads labels built from the input whose set of distinct values is
  fixed by construction (arg-max labels along an axis of size n, concatenated with
  ``0..n-1``), so its output shapes are known while their values depend on the data.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from onnx import numpy_helper

from dlgate import dtypes as dt
from dlgate.spec import sym
from dlgate.spec.base import INF, OpSpec, TensorType
from dlgate.spec.index import cumulative, cumulative_onnx
from dlgate.spec.layout import factor

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


def _reads_y(p: dict) -> bool:
    return "const" not in p


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


class ConstantOfShape(_Filled):
    """A tensor of the constant ``shape`` (rank 0..4; sometimes the anchor's own shape, as a
    constant-folded ``Shape(x)``) filled with ``value`` of ``dtype`` (any of dlgate's
    dtypes; the attribute is left out, meaning float32 0, half the time it is float32 0):
    small values and the types' extremes (float32's lowest stands in for float64's, whose
    magnitude overflows bound arithmetic). The anchor ``x`` (int64, see the module
    docstring) is not read: anchors of other dtypes are not generated, as
    ``schema.allowed`` checks the anchor against the int64 shape input. Non-finite fill
    values (-inf masks) are not generated: the checkers skip non-finite outputs."""

    onnx_op = "ConstantOfShape"
    dtypes = ((dt.INT64,),)
    ranks = (0, 1, 2, 3, 4, 5)
    value_inputs = ()
    gaps: ClassVar[tuple] = (
        ("anchor inputs of other dtypes than int64",
         "schema.allowed checks the anchor against ConstantOfShape's int64 shape input"),
        ("non-finite fill values (-inf masks)", "the checkers skip non-finite outputs"),
    )

    @staticmethod
    def _attrs(ctx, shape, dtype) -> dict:
        return {"shape": list(shape), "dtype": dtype, "value": _value(ctx, dtype)}

    def sample(self, ctx, ins):
        x = ins[0]
        if ctx.coin(0.3) and not any(sym.is_sym(d) for d in x.shape) and x.rank <= 4:
            shape = x.shape
        else:
            shape = ctx.shape(ctx.rng.randint(0, 4))
        return self._attrs(ctx, shape, ctx.choice(list(ctx.dtypes)))

    def requires(self, ins, a):
        return [d >= 1 for d in a["shape"]]

    def infer(self, ins, a):
        return [TensorType(a["dtype"], tuple(a["shape"]))]

    def backward(self, ctx, out):
        x = TensorType(dt.INT64, out.shape if ctx.coin(0.3) else ctx.shape(ctx.rng.randint(0, 3)))
        return [x], self._attrs(ctx, out.shape, out.dtype)

    def onnx(self, b, a, xs, ys):
        value = self._value(b, a)
        b.node("ConstantOfShape", [b.ints(a["shape"])], ys, value=value)

    def torch(self, a, x):
        return torch.full(tuple(a["shape"]), a["value"], dtype=dt.torch_dtype(a["dtype"]))


def _range_attrs(ctx, n: int, dtype: str) -> dict | None:
    """start, limit, delta (of ``dtype``) whose element count is exactly ``n``. Integers:
    limit = start + (n - 1) delta + a remainder in [1, |delta|]. Floats: multiples of 1/16,
    exact in every float type (float16: all below 64 in magnitude), with (limit - start) /
    delta = n - 1/2 (non-integral) or exactly n (the limit excluded), so no rounding can
    change the count."""
    neg = ctx.coin(0.35)
    if dt.is_int(dtype):
        delta = ctx.choice((1, 1, 2, 3, 5))
        start = ctx.rng.randint(-20, 20)
        rem = ctx.rng.randint(1, delta)
        if neg:
            delta, rem = -delta, -rem
        return {"dtype": dtype, "start": start, "limit": start + (n - 1) * delta + rem, "delta": delta}
    q = ctx.choice((1, 2, 3, 4, 5, 8, 12))
    start = ctx.rng.randint(-64, 64) / 8
    if dtype == dt.FLOAT16:
        q = max(1, min(q, int(8 * 48 // (n + 1))))
        start = 0.0 if abs(start) + q * (n + 1) / 8 >= 56 else start
        if abs(start) + q * (n + 1) / 8 >= 64:
            return None
    delta = -q / 8 if neg else q / 8
    limit = start + delta * (n - 1 + ctx.choice((0.5, 1.0)))
    return {"dtype": dtype, "start": start, "limit": limit, "delta": delta}


def _range_count(start, limit, delta) -> int:
    return max(int(np.ceil((limit - start) / delta)), 0)


class Range(OpSpec):
    """``start``, ``limit`` and ``delta``: scalar constants of the anchor's dtype (Range's T;
    float16 from opset 27, where ``stash_type`` is defined), positive and negative deltas,
    integral and non-integral float ratios (see ``_range_attrs``). The output has at least
    one element (empty ranges would be zero-sized), and float ranges whose count depends
    on rounding are not generated (runtimes compute the count in different precisions).
    The anchor ``x`` (see the module docstring) is not read."""

    onnx_op = "Range"
    dtypes = tuple((t,) for t in (dt.FLOAT32, dt.FLOAT64, dt.INT32, dt.INT64, dt.FLOAT16))
    ranks = (0, 1, 2, 3, 4, 5)
    value_inputs = ()
    gaps: ClassVar[tuple] = (
        ("empty ranges", "zero-sized tensors are not generated"),
        ("float ranges whose count depends on rounding", "runtimes may compute the count in different precisions"),
    )

    def sample(self, ctx, ins):
        return _range_attrs(ctx, ctx.int(1, 32), ins[0].dtype)  # never None for n <= 32

    def requires(self, ins, a):
        n = _range_count(a["start"], a["limit"], a["delta"])
        return [a["dtype"] == ins[0].dtype, n >= 1, a["delta"] != 0]

    def infer(self, ins, a):
        return [TensorType(a["dtype"], (_range_count(a["start"], a["limit"], a["delta"]),))]

    def backward(self, ctx, out):
        if out.rank != 1 or not self.sigs(out.dtype):
            return None
        a = _range_attrs(ctx, out.shape[0], out.dtype)
        if a is None:
            return None
        return [TensorType(out.dtype, ctx.shape(ctx.rng.randint(0, 3)))], a

    def value_range(self, a, ranges, ins):
        n = _range_count(a["start"], a["limit"], a["delta"])
        ends = (a["start"], a["start"] + (n - 1) * a["delta"])
        return [(float(min(ends)), float(max(ends)))]

    def exact(self, a, exacts, ins):
        return float(a["start"])

    def onnx(self, b, a, xs, ys):
        t = dt.NUMPY[a["dtype"]]
        ins = [b.const(np.array(a[k], dtype=t)) for k in ("start", "limit", "delta")]
        stash = None
        if a["dtype"] == dt.FLOAT16 and b.opset >= 27:
            stash = b.opt(1, 1)
        b.node("Range", ins, ys, stash_type=stash)

    def torch(self, a, x):
        n = _range_count(a["start"], a["limit"], a["delta"])
        i = torch.arange(n, dtype=torch.float64)
        return (a["start"] + i * a["delta"]).to(dt.torch_dtype(a["dtype"]))


class CumProd(OpSpec):
    """Like CumSum (opset 26): products accumulated sequentially in the input's dtype, along
    ``axis`` (an int32 or int64 scalar constant), ``exclusive`` (the first product is the
    empty one, 1) and ``reverse``. Signed integer overflow is reported ``undefined``."""

    onnx_op = "CumProd"
    min_opset = 26
    can_overflow = True
    keeps_integers = True
    dtypes = tuple((t,) for t in dt.FLOATS + dt.COMMON_INTS)
    ranks = (1, 2, 3, 4, 5)
    gaps: ClassVar[tuple] = (
        ("int8/uint8/bool inputs", "CumProd's schema does not define them"),
    )

    def sample(self, ctx, ins):
        return {"axis": _spell(ctx, ctx.rng.randrange(ins[0].rank), ins[0].rank),
                "exclusive": int(ctx.coin(0.3)), "reverse": int(ctx.coin(0.3))}

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.rank not in self.ranks or not self.sigs(out.dtype):
            return None
        return [out], self.sample(ctx, [out])

    def _terms(self, a, ins):
        n = ins[0].shape[a["axis"] % ins[0].rank]
        if sym.is_sym(n):
            return None
        return (0, n - 1) if a["exclusive"] else (1, n)

    def value_range(self, a, ranges, ins):
        terms = self._terms(a, ins)
        if terms is None:
            return None
        m0, m1 = terms
        lo, hi = ranges[0]

        def pw(v, m):  # v ** m for v >= 0 (0 ** 0 is the empty product, 1)
            try:
                return float(v) ** m
            except OverflowError:
                return INF

        # x^m is monotone in m for x >= 0: the extremes are at m0 or m1
        if lo >= 0:
            return [(min(pw(lo, m0), pw(lo, m1)), max(pw(hi, m0), pw(hi, m1)))]
        big = max(-lo, abs(hi))
        bound = max(pw(big, m0), pw(big, m1))
        return [(-bound, bound)]

    def exact(self, a, exacts, ins):
        return 1.0 if a["exclusive"] else None

    def onnx(self, b, a, xs, ys):
        cumulative_onnx(b, "CumProd", a, xs, ys)

    def torch(self, a, x):
        return cumulative(a, x, torch.ones_like, torch.mul)


# -- shapes computed from another tensor ------------------------------------------------

class FromShape(OpSpec):
    """Two inputs: ``x`` (data) and ``y`` (only its shape is read)."""

    arity = 2
    symbolic_ok = False
    value_inputs = (0,)
    #: ``schema.allowed`` reads y as a second data input (y has x's dtype): y is no formal
    #: input of the consumer.
    schema_inputs = (0, 0)
    dtypes = _same_dtype(dt.ALL)
    ranks = (0, 1, 2, 3, 4, 5)
    onnx_ops = ("Shape", "Gather", "Unsqueeze", "Slice", "Concat")

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, tuple(a["y_shape"]))

    def value_range(self, a, ranges, ins):
        return [tuple(ranges[0])]


class ReshapeFromShape(FromShape):
    """``Reshape(x, Concat(pieces))``: a target shape assembled from y's dims and constants,
    one entry sometimes -1 (inferred), and 0 (x's dim at that position) only where it
    copies x's dim. Regimes: ``reshape_as`` (``Shape(y)`` whole), keeping a prefix of x's
    own dims (y x-shaped, so ``x`` itself is often reused as ``y``: ``x.view(x.size(0),
    -1)``), dims taken from an unrelated ``y``, and a rank-0 ``y`` whose empty shape is
    sliced and concatenated before constants (Shape of a scalar: the importer must keep
    the empty shape static). Some piece always reads y. Not
    generated: y of another dtype than x (``schema.allowed`` binds y to Reshape's data
    type through ``schema_inputs``), ``allowzero=1`` (it matters only for zero-sized
    shapes, which are not generated)."""

    name = "ReshapeFromShape"
    onnx_op = "Reshape"
    preserves_values = True
    keeps_range = True
    gaps: ClassVar[tuple] = (
        ("y of another dtype than x", "schema.allowed binds y to Reshape's data type (see schema_inputs)"),
        ("allowzero=1 and zero-sized shapes", "zero-sized tensors are not generated"),
    )

    @staticmethod
    def _minus_one(ctx, pieces: list) -> list:
        """Sometimes one entry (a constant or a gathered dim, y still read) is written -1."""
        readers = [i for i, p in enumerate(pieces) if _reads_y(p)]
        idx = [i for i, p in enumerate(pieces) if ("const" in p and p["const"] != 0)
               or ("dim" in p and len(readers) > 1)]
        if idx and ctx.coin(0.4):
            pieces = list(pieces)
            pieces[ctx.choice(idx)] = {"const": -1}
        return pieces

    def _attrs(self, ctx, x_shape, target) -> dict:
        u, r = ctx.rng.random(), len(x_shape)
        if u < 0.2:
            return {"pieces": [{"all": 1}], "y_shape": list(target)}
        if u < 0.28:
            a = _scalar_pieces(ctx, list(target))
            return dict(a, pieces=self._minus_one(ctx, a["pieces"]))
        keep = 0  # how many leading dims target shares with x
        while keep < min(r, len(target)) and target[keep] == x_shape[keep]:
            keep += 1
        if u < 0.6 and keep:
            # y = x-shaped: its leading dims gathered (or sliced, or written 0), the rest constant
            k = ctx.rng.randint(1, keep)
            if ctx.coin(0.35):
                pieces = [_slice_piece(ctx, 0, k, r)]
            else:
                pieces = [{"dim": _spell(ctx, i, r)} if i == 0 or ctx.coin(0.8) else {"const": 0} for i in range(k)]
            pieces += [{"const": v} for v in target[k:]]
            return {"pieces": self._minus_one(ctx, pieces), "y_shape": list(x_shape)}
        pieces, y_shape = _pieces_for(ctx, list(target))
        return {"pieces": self._minus_one(ctx, pieces), "y_shape": list(y_shape)}

    @staticmethod
    def _target(ctx, x_shape) -> tuple:
        """A shape of x's element count, often keeping a prefix of x's dims."""
        r, top = len(x_shape), ctx.limits.max_rank
        for _ in range(3):
            if r and ctx.coin(0.5):
                k = ctx.rng.randint(1, r)
                rest = sym.prod(x_shape[k:])
                m = ctx.rng.randint(0 if rest == 1 else 1, max(1, top - k))
                tail = factor(ctx, rest, m)
                if tail is not None and k + len(tail) <= top:
                    return tuple(x_shape[:k]) + tail
            shape = factor(ctx, sym.prod(x_shape), ctx.rng.randint(1, top))
            if shape is not None:
                return shape
        return (sym.prod(x_shape),)

    def sample(self, ctx, ins):
        x = ins[0]
        return self._attrs(ctx, x.shape, self._target(ctx, x.shape))

    @staticmethod
    def _dims(x_shape, y_shape, pieces) -> list:
        """The target as written, 0 replaced by x's dim (-1 kept)."""
        dims = _resolve(pieces, y_shape)
        return [x_shape[i] if (isinstance(d, int) and d == 0 and i < len(x_shape)) else d for i, d in enumerate(dims)]

    @staticmethod
    def _free(dims) -> list:
        return [i for i, d in enumerate(dims) if isinstance(d, int) and d == -1]

    def requires(self, ins, a):
        x, y = ins
        ok = _pieces_ok(a["pieces"], y.rank)
        if not all(c is True for c in ok):
            return [False]
        raw = _resolve(a["pieces"], y.shape)
        if any(isinstance(d, int) and d == 0 and i >= x.rank for i, d in enumerate(raw)):
            return [False]  # 0 copies x's dim at that position
        dims = self._dims(x.shape, y.shape, a["pieces"])
        free = self._free(dims)
        if len(free) > 1 or any(isinstance(d, int) and d < -1 for d in dims) or len(dims) > 5:
            return [False]
        n = sym.prod(x.shape)
        if free:
            known = sym.prod(d for i, d in enumerate(dims) if i != free[0])
            return [sym.mod(n, known) == 0]
        return [sym.prod(dims) == n]

    def infer(self, ins, a):
        x, y = ins
        dims = self._dims(x.shape, y.shape, a["pieces"])
        for k in self._free(dims):
            dims[k] = sym.div(sym.prod(x.shape), sym.prod(d for i, d in enumerate(dims) if i != k))
        return [x.with_shape(dims)]

    def backward(self, ctx, out):
        if out.rank == 0 or not self.sigs(out.dtype):
            return None
        x_shape = None
        for _ in range(3):
            x_shape = factor(ctx, out.numel, ctx.rng.randint(1, ctx.limits.max_rank))
            if x_shape is not None:
                break
        x_shape = x_shape or (out.numel,)
        if ctx.coin(0.4):  # keep a prefix of the output's dims
            k = ctx.rng.randint(1, out.rank)
            tail = factor(ctx, sym.prod(out.shape[k:]), ctx.rng.randint(0, ctx.limits.max_rank - k))
            if tail is not None:
                x_shape = tuple(out.shape[:k]) + tail
        a = self._attrs(ctx, x_shape, out.shape)
        return [out.with_shape(x_shape), TensorType(out.dtype, tuple(a["y_shape"]))], a

    def onnx(self, b, a, xs, ys):
        shape = _shape_tensor(b, xs[1], a["pieces"])
        b.node("Reshape", [xs[0], shape], ys, allowzero=b.opt(0, 0) if b.opset >= 14 else None)

    def torch(self, a, x, y):
        dims = self._dims(tuple(x.shape), tuple(y.shape), a["pieces"])
        return x.reshape(dims)


class ExpandFromShape(FromShape):
    """``Expand(x, shape)``, ``shape`` y's whole shape (``expand_as``, bidirectional) or some
    of y's dims with constants (1s where x keeps its dim), or constants after the empty
    Slice of a rank-0 y's Shape; the target may be shorter or longer than x's rank. y has
    x's dtype (``schema_inputs``, as for Reshape)."""

    name = "ExpandFromShape"
    onnx_op = "Expand"
    preserves_values = True
    keeps_range = True
    gaps: ClassVar[tuple] = (
        ("y of another dtype than x", "schema.allowed binds y to Expand's data type (see schema_inputs)"),
    )

    def _partner(self, ctx, xs):
        """A shape that broadcasts with ``xs``, within the element cap."""
        r = len(xs)
        rt = ctx.rng.randint(max(1, r - 2), max(1, min(r + 2, ctx.limits.max_rank)))
        for _ in range(4):
            t = []
            for k in range(rt, 0, -1):
                if k > r:
                    t.append(ctx.choice((1, 2, 3)))
                elif xs[-k] == 1:
                    t.append(ctx.dim(8) if ctx.coin(0.6) else 1)
                else:
                    t.append(1 if ctx.coin(0.3) else xs[-k])
            if sym.prod(sym.broadcast(tuple(xs), tuple(t))) <= ctx.limits.max_elems:
                return t
        return [1] * rt

    def _attrs(self, ctx, target) -> dict:
        u = ctx.rng.random()
        if u < 0.4:
            return {"pieces": [{"all": 1}], "y_shape": list(target)}
        if u < 0.48:
            return _scalar_pieces(ctx, list(target))
        pieces, y_shape = _pieces_for(ctx, list(target), 0.6)
        return {"pieces": pieces, "y_shape": list(y_shape)}

    def sample(self, ctx, ins):
        return self._attrs(ctx, self._partner(ctx, ins[0].shape))

    def requires(self, ins, a):
        x, y = ins
        ok = _pieces_ok(a["pieces"], y.rank)
        if not all(c is True for c in ok):
            return [False]
        t = _resolve(a["pieces"], y.shape)
        if any(isinstance(d, int) and d < 1 for d in t):
            return [False]
        return ok + sym.broadcastable(tuple(x.shape), tuple(t))

    def infer(self, ins, a):
        t = _resolve(a["pieces"], ins[1].shape)
        return [ins[0].with_shape(sym.broadcast(tuple(ins[0].shape), tuple(t)))]

    def backward(self, ctx, out):
        R = out.rank
        if R == 0 or not self.sigs(out.dtype):
            return None
        rx = ctx.rng.randint(max(0, R - 2), R) if ctx.coin(0.5) else R
        xs = tuple(1 if ctx.coin(0.4) else d for d in out.shape[R - rx:])
        target = []
        for i, d in enumerate(out.shape):
            j = i - (R - rx)
            target.append(1 if j >= 0 and xs[j] == d and ctx.coin(0.3) else d)
        # a leading entry where x already has the output's dim may be left out
        while 1 < len(target) <= rx and xs[rx - len(target)] == out.shape[R - len(target)] and ctx.coin(0.2):
            target = target[1:]
        a = self._attrs(ctx, target)
        return [out.with_shape(xs), TensorType(out.dtype, tuple(a["y_shape"]))], a

    def onnx(self, b, a, xs, ys):
        b.node("Expand", [xs[0], _shape_tensor(b, xs[1], a["pieces"])], ys)

    def torch(self, a, x, y):
        t = _resolve(a["pieces"], tuple(y.shape))
        return x.expand(torch.broadcast_shapes(tuple(x.shape), tuple(t))).contiguous()


class ConstantOfShapeFromShape(_Filled):
    """``ConstantOfShape(shape)`` with ``shape`` y's whole shape (``zeros_like``/``full_like``;
    a rank-0 y gives a scalar) or some of its dims with constants; the fill ``value`` of
    any of dlgate's dtypes (the output's), left out half the time it is float32 0. y is
    int64: ``schema.allowed`` checks it against ConstantOfShape's int64 shape input."""

    name = "ConstantOfShapeFromShape"
    onnx_op = "ConstantOfShape"
    onnx_ops = FromShape.onnx_ops
    symbolic_ok = False
    value_inputs = ()
    dtypes = ((dt.INT64,),)
    ranks = (0, 1, 2, 3, 4, 5)
    gaps: ClassVar[tuple] = (
        ("y of other dtypes than int64", "schema.allowed checks y against ConstantOfShape's int64 shape input"),
    )

    def _pieces(self, ctx, y_shape) -> list:
        r = len(y_shape)
        if r == 0 or ctx.coin(0.45):
            return [{"all": 1}]
        if r >= 2 and ctx.coin(0.3):
            lo = ctx.rng.randrange(r - 1)
            hi = ctx.rng.randint(lo + 1, r)
            return [_slice_piece(ctx, lo, hi, r)]
        pos = ctx.rng.sample(range(r), ctx.rng.randint(1, r))
        pieces = [{"dim": _spell(ctx, j, r)} for j in pos]
        if ctx.coin(0.3) and len(pieces) < ctx.limits.max_rank:
            pieces.insert(ctx.rng.randint(0, len(pieces)), {"const": ctx.choice((1, 2, 3))})
        return pieces

    def sample(self, ctx, ins):
        dtype = ctx.choice(list(ctx.dtypes))
        return {"pieces": self._pieces(ctx, ins[0].shape), "dtype": dtype, "value": _value(ctx, dtype)}

    def requires(self, ins, a):
        ok = _pieces_ok(a["pieces"], ins[0].rank)
        if not all(c is True for c in ok):
            return [False]
        return [d >= 1 for d in _resolve(a["pieces"], ins[0].shape)]

    def infer(self, ins, a):
        return [TensorType(a["dtype"], tuple(_resolve(a["pieces"], ins[0].shape)))]

    def backward(self, ctx, out):
        if out.rank == 0 or ctx.coin(0.4):
            pieces, y_shape = [{"all": 1}], out.shape
        else:
            pieces, y_shape = _pieces_for(ctx, list(out.shape), 0.7)
        return [TensorType(dt.INT64, tuple(y_shape))], {"pieces": pieces, "dtype": out.dtype,
                                                         "value": _value(ctx, out.dtype)}

    def onnx(self, b, a, xs, ys):
        value = self._value(b, a)
        b.node("ConstantOfShape", [_shape_tensor(b, xs[0], a["pieces"])], ys, value=value)

    def torch(self, a, y):
        return torch.full(tuple(_resolve(a["pieces"], tuple(y.shape))), a["value"], dtype=dt.torch_dtype(a["dtype"]))


#: Cast targets for computed positions (values stay below 2 * 64, exact in each).
POSITION_CASTS = (dt.FLOAT32, dt.FLOAT64, dt.FLOAT16, dt.INT32)


class RangeFromShape(OpSpec):
    """Positions from a dim of y, as exporters write ``arange``: ``Range(start, d_j, delta)``
    with ``start`` 0 or a constant below d_j and ``delta`` 1 (sometimes 2 or 3); ``Range(d_i,
    d_i + d_j, 1)`` (positions after a past length); ``Range(d_j - 1, -1, -1)`` (reversed).
    Scalars are int64 (Gather with a scalar index, Add/Sub of scalars); the positions are
    sometimes Cast to float32/float64/float16/int32 (not to int8/uint8/bool: positions past
    127 would wrap). y's dtype is one of Range's T, which ``schema.allowed`` checks it
    against."""

    name = "RangeFromShape"
    onnx_op = "Range"
    onnx_ops = ("Shape", "Gather", "Squeeze", "Slice", "Add", "Sub", "Cast")
    symbolic_ok = False
    value_inputs = ()
    integral_out = True
    dtypes = tuple((t,) for t in (dt.FLOAT32, dt.FLOAT64, dt.INT32, dt.INT64))
    ranks = (1, 2, 3, 4, 5)
    gaps: ClassVar[tuple] = (
        ("y of dtypes outside Range's T (bool, int8, uint8, float16)",
         "schema.allowed checks y against Range's start input"),
        ("casts of positions to int8/uint8/bool", "positions past 127 would wrap"),
    )

    def _cast(self, ctx):
        casts = [t for t in POSITION_CASTS if t in ctx.dtypes]
        return ctx.choice(casts) if casts and ctx.coin(0.4) else None

    def sample(self, ctx, ins):
        r = ins[0].rank
        j = ctx.rng.randrange(r)
        kind = ctx.choice(("arange", "arange", "offset", "reverse"))
        a = {"kind": kind, "j": _spell(ctx, j, r), "i": None, "start": 0, "delta": 1, "cast": self._cast(ctx)}
        if kind == "arange":
            d = ins[0].shape[j]
            a["delta"] = ctx.choice((1, 1, 1, 2, 3))
            a["start"] = 0 if ctx.coin(0.6) else ctx.rng.randint(0, max(0, d - 1))
        elif kind == "offset":
            a["i"] = _spell(ctx, ctx.rng.randrange(r), r)
        return a

    @staticmethod
    def _bounds(a, shape):
        """(first value, delta, count) given y's dims."""
        r = len(shape)
        d = shape[a["j"] % r]
        if a["kind"] == "offset":
            return shape[a["i"] % r], 1, d
        if a["kind"] == "reverse":
            return d - 1, -1, d
        return a["start"], a["delta"], sym.ceildiv(d - a["start"], a["delta"])

    def requires(self, ins, a):
        r = ins[0].rank
        ok = [r >= 1, -r <= a["j"] < r]
        if a["i"] is not None:
            ok.append(-r <= a["i"] < r)
        if not all(ok):
            return [False]
        d = ins[0].shape[a["j"] % r]
        return ok + [a["delta"] >= 1, a["start"] >= 0, d - a["start"] >= 1]

    def infer(self, ins, a):
        return [TensorType(a["cast"] or dt.INT64, (self._bounds(a, ins[0].shape)[2],))]

    def backward(self, ctx, out):
        if out.rank != 1 or (out.dtype != dt.INT64 and out.dtype not in POSITION_CASTS):
            return None
        types = [s[0] for s in self.dtypes if s[0] in ctx.dtypes]
        if not types:
            return None
        n = out.shape[0]
        kind = ctx.choice(("arange", "arange", "offset", "reverse"))
        a = {"kind": kind, "j": 0, "i": None, "start": 0, "delta": 1,
             "cast": None if out.dtype == dt.INT64 else out.dtype}
        vals = [n]
        if kind == "arange":
            a["delta"] = ctx.choice((1, 1, 1, 2, 3))
            a["start"] = 0 if ctx.coin(0.6) else ctx.rng.randint(0, 6)
            d = a["start"] + (n - 1) * a["delta"] + ctx.rng.randint(1, a["delta"])
            if d > 4 * ctx.limits.max_dim:
                a["delta"], a["start"], d = 1, 0, n
            vals = [d]
        elif kind == "offset":
            vals = [n, ctx.dim(16)]
        y_shape, pos = _places(ctx, vals)
        r = len(y_shape)
        a["j"] = _spell(ctx, pos[0], r)
        if kind == "offset":
            a["i"] = _spell(ctx, pos[1], r)
        return [TensorType(ctx.choice(types), y_shape)], a

    def value_range(self, a, ranges, ins):
        first, delta, n = self._bounds(a, ins[0].shape)
        if sym.is_sym(first) or sym.is_sym(n):
            return [(0.0, INF)]
        last = first + (n - 1) * delta
        return [(float(min(first, last)), float(max(first, last)))]

    def exact(self, a, exacts, ins):
        first = self._bounds(a, ins[0].shape)[0]
        return None if sym.is_sym(first) else float(first)

    def onnx(self, b, a, xs, ys):
        s = b.node("Shape", [xs[0]], 1)[0]

        def i64(v):
            return b.const(np.array(v, dtype=np.int64))

        d = _scalar_dim(b, s, a["j"])
        if a["kind"] == "offset":
            start = _scalar_dim(b, s, a["i"])
            ins = [start, b.node("Add", [start, d], 1)[0], i64(1)]
        elif a["kind"] == "reverse":
            ins = [b.node("Sub", [d, i64(1)], 1)[0], i64(-1), i64(-1)]
        else:
            ins = [i64(a["start"]), d, i64(a["delta"])]
        if a["cast"] is None:
            b.node("Range", ins, ys)
        else:
            pos = b.node("Range", ins, 1)[0]
            b.node("Cast", [pos], ys, to=dt.ONNX[a["cast"]])

    def torch(self, a, y):
        first, delta, n = self._bounds(a, tuple(y.shape))
        out = first + torch.arange(n, dtype=torch.int64) * delta
        return out.to(dt.torch_dtype(a["cast"])) if a["cast"] else out


class TriluComputedK(FromShape):
    """``Trilu(x, k)`` with ``k`` a scalar int64 computed from y's dims: ``d_i``, ``d_i -
    d_j`` (+ c) (the causal mask over a past length: ``triu(mask, kv_len - q_len + 1)``), or
    ``c - d_j``; each dim a scalar Gather of ``Shape(y)``, or a 1-D Gather / Slice then
    Squeeze. y is often x-shaped (x itself is then reused); it has x's dtype
    (``schema_inputs``, as for Reshape)."""

    name = "TriluComputedK"
    onnx_op = "Trilu"
    onnx_ops = ("Shape", "Gather", "Slice", "Squeeze", "Sub", "Add")
    min_opset = 14
    keeps_integers = True
    ranks = (2, 3, 4, 5)
    gaps: ClassVar[tuple] = (
        ("y of another dtype than x", "schema.allowed binds y to Trilu's data type (see schema_inputs)"),
    )

    def _k_attrs(self, ctx, y_shape, like_x: bool) -> dict:
        r = len(y_shape)
        if like_x and r >= 2:
            return {"plus": _spell(ctx, r - 1, r), "minus": _spell(ctx, r - 2, r), "c": ctx.choice((0, 0, 1, -1)),
                    "upper": int(ctx.coin()), "y_shape": list(y_shape)}
        kind = ctx.choice(("dim", "sub", "neg"))
        plus = _spell(ctx, ctx.rng.randrange(r), r) if kind != "neg" else None
        minus = _spell(ctx, ctx.rng.randrange(r), r) if kind != "dim" else None
        c = 0 if kind == "dim" else ctx.choice((0, 1, -1, ctx.rng.randint(-4, 4)))
        return {"plus": plus, "minus": minus, "c": c, "upper": int(ctx.coin()), "y_shape": list(y_shape)}

    def _attrs(self, ctx, x_shape) -> dict:
        if ctx.coin(0.5):
            return self._k_attrs(ctx, x_shape, True)
        return self._k_attrs(ctx, ctx.shape(ctx.rng.randint(1, 4), 64), False)

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0].shape)

    @staticmethod
    def k(a, yshape):
        r = len(yshape)
        k = a["c"]
        if a["plus"] is not None:
            k = k + yshape[a["plus"] % r]
        if a["minus"] is not None:
            k = k - yshape[a["minus"] % r]
        return k

    def requires(self, ins, a):
        r = ins[1].rank
        return [ins[0].rank >= 2, r >= 1] + [-r <= a[t] < r for t in ("plus", "minus") if a[t] is not None]

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.rank not in self.ranks or not self.sigs(out.dtype):
            return None
        a = self._attrs(ctx, out.shape)
        return [out, TensorType(out.dtype, tuple(a["y_shape"]))], a

    def zeroed(self, a, ins):
        """("none" | "some" | "all") elements of each matrix written 0, or None if unknown."""
        rows, cols = ins[0].shape[-2:]
        k = self.k(a, ins[1].shape)
        if any(sym.is_sym(v) for v in (rows, cols, k)):
            return None
        dmin, dmax = 1 - rows, cols - 1
        if a["upper"]:
            return "all" if dmax < k else "some" if dmin < k else "none"
        return "all" if dmin > k else "some" if dmax > k else "none"

    def value_range(self, a, ranges, ins):
        z = self.zeroed(a, ins)
        lo, hi = ranges[0]
        with_zero = (min(lo, 0.0), max(hi, 0.0))
        return [{"none": (lo, hi), "some": with_zero, "all": (0.0, 0.0)}.get(z, with_zero)]

    def exact(self, a, exacts, ins):
        z = self.zeroed(a, ins)
        if z in ("some", "all"):
            return 0.0
        return exacts[0] if z == "none" else None

    def onnx(self, b, a, xs, ys):
        s = b.node("Shape", [xs[1]], 1)[0]
        k = None
        if a["plus"] is not None:
            k = _scalar_dim(b, s, a["plus"])
        if a["minus"] is not None:
            m = _scalar_dim(b, s, a["minus"])
            first = k if k is not None else b.const(np.array(a["c"], dtype=np.int64))
            k = b.node("Sub", [first, m], 1)[0]
            if a["plus"] is not None and a["c"] != 0:
                k = b.node("Add", [k, b.const(np.array(a["c"], dtype=np.int64))], 1)[0]
        b.node("Trilu", [xs[0], k], ys, upper=b.opt(a["upper"], 1))

    def torch(self, a, x, y):
        k = self.k(a, tuple(y.shape))
        return torch.triu(x, k) if a["upper"] else torch.tril(x, k)


# -- data-dependent output shapes, made static -------------------------------------------

def _mask(ctx, size: int, count: int) -> list:
    """``size`` flags, ``count`` of them set, at random positions."""
    on = set(ctx.rng.sample(range(size), count))
    return [int(i in on) for i in range(size)]


class Compress(OpSpec):
    """``condition``: a 1-D bool constant made by the lowering, with at least one true
    entry, as long as the dim along ``axis`` (or the flattened input, without ``axis``) or
    shorter (the rest is dropped); ``axis`` given or left out, sometimes negative. Not
    generated: conditions computed from data (their count must be known at generation),
    all-false conditions (zero-sized outputs)."""

    onnx_op = "Compress"
    keeps_range = True
    symbolic_ok = False
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)
    gaps: ClassVar[tuple] = (
        ("conditions computed from data", "the number of true entries must be known at generation"),
        ("all-false conditions", "zero-sized tensors are not generated"),
    )

    @staticmethod
    def _cond(ctx, n: int, count: int | None = None) -> list:
        length = n if ctx.coin(0.5) else ctx.rng.randint(1, n)
        if count is not None:
            length = max(length, count)
        count = ctx.rng.randint(1, length) if count is None else count
        return _mask(ctx, length, count)

    def sample(self, ctx, ins):
        x = ins[0]
        if ctx.coin(0.3):
            return {"axis": None, "cond": self._cond(ctx, min(x.numel, MAX_LIST))}
        ax = ctx.rng.randrange(x.rank)
        return {"axis": _spell(ctx, ax, x.rank), "cond": self._cond(ctx, min(x.shape[ax], MAX_LIST))}

    def requires(self, ins, a):
        x, cond = ins[0], a["cond"]
        ok = [1 <= len(cond) <= MAX_LIST, sum(cond) >= 1]
        if a["axis"] is None:
            return ok + [len(cond) <= x.numel]
        return ok + [-x.rank <= a["axis"] < x.rank, len(cond) <= x.shape[a["axis"] % x.rank]]

    def infer(self, ins, a):
        x, n = ins[0], sum(a["cond"])
        if a["axis"] is None:
            return [x.with_shape((n,))]
        ax = a["axis"] % x.rank
        return [x.with_shape(tuple(x.shape[:ax]) + (n,) + tuple(x.shape[ax + 1:]))]

    def backward(self, ctx, out):
        if out.rank < 1 or not self.sigs(out.dtype):
            return None
        if out.rank == 1 and ctx.coin(0.3):
            n = out.shape[0]
            for _ in range(3):
                total = n + ctx.rng.randint(0, 16)
                shape = factor(ctx, total, ctx.rng.randint(1, 4))
                if shape is not None:
                    cond = self._cond(ctx, min(total, MAX_LIST), n)
                    return [out.with_shape(shape)], {"axis": None, "cond": cond}
            return None
        ax = ctx.rng.randrange(out.rank)
        c = out.shape[ax]
        rest = out.numel // c
        d = c + ctx.rng.randint(0, max(0, min(8, ctx.limits.max_elems // rest - c)))
        cond = self._cond(ctx, d, c)
        shape = tuple(out.shape[:ax]) + (d,) + tuple(out.shape[ax + 1:])
        return [out.with_shape(shape)], {"axis": _spell(ctx, ax, out.rank), "cond": cond}

    def onnx(self, b, a, xs, ys):
        cond = b.const(np.array(a["cond"], dtype=np.bool_))
        b.node("Compress", [xs[0], cond], ys, axis=a["axis"])

    def torch(self, a, x):
        keep = torch.tensor([i for i, c in enumerate(a["cond"]) if c], dtype=torch.int64)
        if a["axis"] is None:
            return x.reshape(-1).index_select(0, keep)
        return x.index_select(a["axis"] % x.dim(), keep)


#: Mask dtypes for NonZero's constant masks: those onnxruntime's NonZero implements.
MASK_DTYPES = (dt.BOOL, dt.FLOAT32, dt.FLOAT16, dt.INT32, dt.INT64, dt.UINT8)


def _positions(n: int, ax: int, rank: int) -> np.ndarray:
    """0..n-1 shaped to broadcast along axis ``ax`` of a rank-``rank`` tensor."""
    shape = [1] * rank
    shape[ax] = n
    return np.arange(n, dtype=np.int64).reshape(shape)


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


class NonZero(OpSpec):
    """``x[mask]`` as exporters write it: ``GatherND(x, Transpose(NonZero(mask)))``; outputs
    the selected values (nnz,) + x.shape[k:] and NonZero's indices (k, nnz). The mask
    (rank k >= 1) is either a constant made by the lowering (``mode`` "const", over x's
    leading dims, of ``mdtype``: any nonzero value counts, a float -0.0 does not) or, for
    float inputs, ``Equal(ArgMax(x, axis, keepdims=1), positions)`` (``mode`` "argmax",
    positions a constant 0..n-1 along ``axis``): exactly one true entry per line along
    ``axis`` (its first maximum), so nnz = numel / n is known while the positions depend on
    the data. Not generated: rank-0 masks (NonZero of a scalar is (0, nnz): zero-sized),
    float64/int8 masks (onnxruntime's NonZero lacks them), arg-max masks of integer inputs
    (integer ties are frequent, see ArgMax)."""

    onnx_op = "NonZero"
    onnx_ops = ("Transpose", "GatherND", "ArgMax", "Equal")
    n_outputs = 2
    symbolic_ok = False
    jumps = True
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)
    gaps: ClassVar[tuple] = (
        ("rank-0 masks", "NonZero of a scalar has shape (0, nnz): zero-sized tensors are not generated"),
        ("masks of float64/int8", "onnxruntime's NonZero does not implement them"),
        ("masks computed from data with a data-dependent count", "shapes must be known at generation"),
        ("arg-max masks of integer inputs", "integer ties are frequent; see ArgMax"),
    )

    @staticmethod
    def _mask_values(ctx, flags: list, mdtype: str) -> list:
        if mdtype == dt.BOOL:
            return [bool(f) for f in flags]
        if dt.is_float(mdtype):
            zero, on = (0.0, -0.0), (1.0, -2.5, 0.5, 3.0)
        else:
            zero, on = (0,), ((1, 2, 7) if mdtype == dt.UINT8 else (1, -3, 2, 5))
        return [ctx.choice(on) if f else ctx.choice(zero) for f in flags]

    def _const(self, ctx, x_shape, nnz: int | None = None, k: int | None = None) -> dict | None:
        ks = [j for j in range(1, len(x_shape) + 1) if sym.prod(x_shape[:j]) <= MAX_LIST
              and (nnz is None or sym.prod(x_shape[:j]) >= nnz) and (k is None or j == k)]
        if not ks:
            return None
        k = ctx.choice(ks)
        size = sym.prod(x_shape[:k])
        nnz = ctx.rng.randint(1, size) if nnz is None else nnz
        mdtype = ctx.choice(MASK_DTYPES)
        vals = self._mask_values(ctx, _mask(ctx, size, nnz), mdtype)
        mask = np.empty(size, dtype=object)
        mask[:] = vals
        return {"mode": "const", "mask": mask.reshape(tuple(x_shape[:k])).tolist(), "mdtype": mdtype}

    def sample(self, ctx, ins):
        x = ins[0]
        if dt.is_float(x.dtype) and ctx.coin(0.5):
            return dict(mode="argmax", **_argmax_attrs(ctx, x.shape, ctx.rng.randrange(x.rank)))
        return self._const(ctx, x.shape) or {"mode": "const", "mask": [], "mdtype": dt.BOOL}

    def _nnz(self, a, x):
        if a["mode"] == "argmax":
            return sym.div(sym.prod(x.shape), a["n"]), x.rank
        m = np.asarray(a["mask"], dtype=np.float64)
        return int(np.count_nonzero(m)), m.ndim

    def requires(self, ins, a):
        x = ins[0]
        if a["mode"] == "argmax":
            return _argmax_ok(x, a)
        m = np.asarray(a["mask"], dtype=np.float64)
        return [1 <= m.ndim <= x.rank, m.size <= MAX_LIST, tuple(m.shape) == tuple(x.shape[:m.ndim]),
                int(np.count_nonzero(m)) >= 1]

    def infer(self, ins, a):
        x = ins[0]
        nnz, k = self._nnz(a, x)
        return [x.with_shape((nnz,) + tuple(x.shape[k:])), TensorType(dt.INT64, (k, nnz))]

    def backward(self, ctx, out):
        if out.rank < 1 or not self.sigs(out.dtype):
            return None
        nnz, rest = out.shape[0], tuple(out.shape[1:])
        if out.rank == 1 and dt.is_float(out.dtype) and ctx.coin(0.5):
            n = ctx.dim(8)
            lead = factor(ctx, nnz, ctx.rng.randint(0, min(3, ctx.limits.max_rank - 1)))
            if lead is not None and nnz * n <= ctx.limits.max_elems and max(lead, default=1) <= 4 * ctx.limits.max_dim:
                ax = ctx.rng.randint(0, len(lead))
                shape = tuple(lead[:ax]) + (n,) + tuple(lead[ax:])
                return [out.with_shape(shape)], dict(mode="argmax", **_argmax_attrs(ctx, shape, ax))
        k = ctx.rng.randint(1, max(1, min(3, ctx.limits.max_rank - len(rest))))
        budget = min(MAX_LIST, max(1, ctx.limits.max_elems // max(1, sym.prod(rest))))
        for _ in range(3):
            size = nnz + ctx.rng.randint(0, 12)
            size = nnz if size > budget else size
            lead = factor(ctx, size, k)
            if lead is None or size > MAX_LIST:
                continue
            x = out.with_shape(tuple(lead) + rest)
            a = self._const(ctx, x.shape, nnz, k)
            if a is not None:
                return [x], a
        return None

    def value_range(self, a, ranges, ins):
        x = ins[0]
        hi = max(x.shape)
        return [tuple(ranges[0]), (0.0, INF if sym.is_sym(hi) else float(hi - 1))]

    def onnx(self, b, a, xs, ys):
        if a["mode"] == "argmax":
            am = _argmax(b, xs[0], a, 1)
            pos = b.const(_positions(a["n"], a["axis"] % a["rank"], a["rank"]))
            mask = b.node("Equal", [am, pos], 1)[0]
        else:
            mask = b.const(np.array(a["mask"], dtype=dt.NUMPY[a["mdtype"]]))
        b.node("NonZero", [mask], [ys[1]])
        idx = b.node("Transpose", [ys[1]], 1, perm=[1, 0])[0]
        b.node("GatherND", [xs[0], idx], [ys[0]], batch_dims=b.opt(0, 0))

    def mask(self, a, x):
        if a["mode"] == "argmax":
            ax = a["axis"] % x.dim()
            am = torch.argmax(x, dim=ax, keepdim=True)  # the first maximum, as ONNX
            return am == torch.from_numpy(_positions(a["n"], ax, x.dim()))
        return torch.tensor(np.array(a["mask"], dtype=dt.NUMPY[a["mdtype"]])) != 0

    def torch(self, a, x):
        m = self.mask(a, x)
        return x[m], m.nonzero().T.contiguous()


#: Unique's input dtypes: those onnxruntime's Unique implements.
UNIQUE_DTYPES = (dt.INT64, dt.FLOAT32, dt.FLOAT64, dt.FLOAT16, dt.INT8)
LAYOUTS = ("flat", "rows", "cols")


def unique(t, axis, sorted_: bool) -> tuple:
    """ONNX's Unique: (Y, indices, inverse_indices, counts); slices along ``axis`` (None:
    the flattened elements) compared lexicographically when sorted, else in order of first
    occurrence."""
    if axis is None:
        rows, ax = t.reshape(-1, 1), 0
    else:
        ax = axis % t.dim()
        rows = t.movedim(ax, 0).reshape(t.shape[ax], -1)
    u, inv, cnt = torch.unique(rows.to(torch.float64), dim=0, sorted=True, return_inverse=True, return_counts=True)
    m, k = rows.shape[0], u.shape[0]
    first = torch.full((k,), m, dtype=torch.int64).scatter_reduce(0, inv, torch.arange(m), "amin")
    if not sorted_:
        order = torch.argsort(first, stable=True)
        remap = torch.empty(k, dtype=torch.int64)
        remap[order] = torch.arange(k)
        first, cnt, inv = first[order], cnt[order], remap[inv]
    if axis is None:
        y = t.reshape(-1).index_select(0, first)
    else:
        y = t.index_select(ax, first)
    return y, first, inv.to(torch.int64), cnt.to(torch.int64)


class Unique(OpSpec):
    """Unique of labels whose set of distinct values is fixed by construction: the arg-max
    positions along ``axis`` (of size n) of a float input, flattened and concatenated with
    0..n-1, so exactly n labels are distinct while which come first, where each occurs and
    how often depend on the data. ``layout`` "flat": Unique of the labels (no ``axis``;
    Cast to ``udtype`` when not int64); "rows"/"cols": Unique along ``uaxis`` of their one-hot
    rows (m, n) / columns (n, m) (``Equal`` with 0..n-1, Cast to ``udtype``), exactly the n
    one-hot slices. Both ``sorted`` values; all four outputs. Not generated: Unique of data
    whose number of distinct values depends on the data (shapes must be known), integer
    inputs (arg-max ties), int32/uint8/bool labels (onnxruntime's Unique lacks them), fewer
    outputs (a spec's outputs are fixed)."""

    onnx_op = "Unique"
    onnx_ops = ("ArgMax", "Reshape", "Concat", "Cast", "Unsqueeze", "Equal")
    n_outputs = 4
    symbolic_ok = False
    jumps = True
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (1, 2, 3, 4, 5)
    gaps: ClassVar[tuple] = (
        ("Unique of data with a data-dependent number of distinct values",
         "shapes must be known at generation"),
        ("integer inputs", "their arg-max ties are frequent; see ArgMax"),
        ("labels of dtypes int32, uint8, bool", "onnxruntime's Unique does not implement them"),
        ("fewer than four outputs", "a spec's outputs are fixed"),
    )

    @staticmethod
    def _attrs(ctx, shape, ax: int, layout: str | None = None) -> dict:
        a = _argmax_attrs(ctx, shape, ax)
        layout = layout or ctx.choice(LAYOUTS)
        udtypes = [t for t in UNIQUE_DTYPES if t in ctx.dtypes] or [dt.INT64]
        a.update(layout=layout, sorted=int(ctx.coin(0.6)), udtype=ctx.choice(udtypes),
                 uaxis={"flat": None, "rows": ctx.choice((0, -2)), "cols": ctx.choice((1, -1))}[layout])
        return a

    def sample(self, ctx, ins):
        shape = ins[0].shape
        n = sym.prod(shape)
        # inverse_indices has numel / n + n entries: prefer axes that keep it within limits
        fit = [i for i in range(len(shape)) if n // shape[i] + shape[i] <= 4 * ctx.limits.max_dim]
        return self._attrs(ctx, shape, ctx.choice(fit) if fit else ctx.rng.randrange(len(shape)))

    def requires(self, ins, a):
        ok = _argmax_ok(ins[0], a)
        return ok + [a["udtype"] in UNIQUE_DTYPES, a["n"] <= 64]

    def infer(self, ins, a):
        n = a["n"]
        m = sym.div(sym.prod(ins[0].shape), n) + n
        y = (n,) if a["layout"] == "flat" else (n, n)
        return [TensorType(a["udtype"], y), TensorType(dt.INT64, (n,)), TensorType(dt.INT64, (m,)),
                TensorType(dt.INT64, (n,))]

    def backward(self, ctx, out):
        if out.dtype not in UNIQUE_DTYPES or out.rank not in (1, 2) or (out.rank == 2 and out.shape[0] != out.shape[1]):
            return None
        types = [t for t in self.dtypes if t[0] in ctx.dtypes]
        n = out.shape[0]
        if not types or n > 64:
            return None
        rest = factor(ctx, ctx.rng.randint(1, max(1, min(64, ctx.limits.max_elems // n))), ctx.rng.randint(0, 3))
        if rest is None:
            return None
        ax = ctx.rng.randint(0, len(rest))
        shape = tuple(rest[:ax]) + (n,) + tuple(rest[ax:])
        layout = "flat" if out.rank == 1 else ctx.choice(("rows", "cols"))
        a = self._attrs(ctx, shape, ax, layout)
        a["udtype"] = out.dtype
        return [TensorType(ctx.choice(types)[0], shape)], a

    def value_range(self, a, ranges, ins):
        n = a["n"]
        m = sym.prod(ins[0].shape) // n + n
        y = (0.0, float(n - 1)) if a["layout"] == "flat" else (0.0, 1.0)
        return [y, (0.0, float(m - 1)), (0.0, float(n - 1)), (1.0, float(m - n + 1))]

    def reference_defect(self, a, ins, opset):
        if not a["sorted"] and a["layout"] == "cols":
            return "onnx.reference's Unique with sorted=0 takes the unique slices along axis 0 whatever the axis"
        return None

    def onnx(self, b, a, xs, ys):
        n = a["n"]
        am = _argmax(b, xs[0], a, 0)
        flat = b.node("Reshape", [am, b.ints([-1])], 1)[0]
        lab = b.node("Concat", [flat, b.ints(range(n))], 1, axis=0)[0]
        if a["layout"] == "flat":
            u = lab
        else:
            rows = a["layout"] == "rows"
            col = b.node("Unsqueeze", [lab, b.ints([1 if rows else 0])], 1)[0]
            pos = b.const(np.arange(n, dtype=np.int64).reshape((1, n) if rows else (n, 1)))
            u = b.node("Equal", [col, pos], 1)[0]
        if a["udtype"] != dt.INT64 or a["layout"] != "flat":
            u = b.node("Cast", [u], 1, to=dt.ONNX[a["udtype"]])[0]
        b.node("Unique", [u], ys, axis=a["uaxis"], sorted=b.opt(a["sorted"], 1))

    def labels(self, a, x):
        ax = a["axis"] % x.dim()
        lab = torch.cat([torch.argmax(x, dim=ax).reshape(-1), torch.arange(a["n"])])
        if a["layout"] == "rows":
            lab = lab.unsqueeze(1) == torch.arange(a["n"]).unsqueeze(0)
        elif a["layout"] == "cols":
            lab = lab.unsqueeze(0) == torch.arange(a["n"]).unsqueeze(1)
        return lab.to(dt.torch_dtype(a["udtype"]))

    def torch(self, a, x):
        return unique(self.labels(a, x), a["uaxis"], bool(a["sorted"]))


OPS = [ConstantOfShape, Range, CumProd, ReshapeFromShape, ExpandFromShape, ConstantOfShapeFromShape,
       RangeFromShape, TriluComputedK, Compress, NonZero, Unique]
