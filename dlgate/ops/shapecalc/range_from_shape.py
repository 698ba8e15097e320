from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import INF, OpSpec, TensorType
from dlgate.ops.shapecalc._shared import _places, _scalar_dim, _spell


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
    dtypes = tuple((t,) for t in (dt.FLOAT32, dt.FLOAT64, dt.INT32, dt.INT64))
    ranks = (1, 2, 3, 4, 5)

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

    value_inputs = ()
    integral_out = True
    gaps: ClassVar[tuple] = (
        ("y of dtypes outside Range's T (bool, int8, uint8, float16)",
         "schema.allowed checks y against Range's start input"),
        ("casts of positions to int8/uint8/bool", "positions past 127 would wrap"),
    )

    def value_range(self, a, ranges, ins):
        first, delta, n = self._bounds(a, ins[0].shape)
        if sym.is_sym(first) or sym.is_sym(n):
            return [(0.0, INF)]
        last = first + (n - 1) * delta
        return [(float(min(first, last)), float(max(first, last)))]

    def exact(self, a, exacts, ins):
        first = self._bounds(a, ins[0].shape)[0]
        return None if sym.is_sym(first) else float(first)


OPS = [RangeFromShape]
