from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate.ops import sym
from dlgate.ops.base import TensorType
from dlgate.ops.shapecalc._shared import FromShape, _scalar_dim, _spell


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
    ranks = (2, 3, 4, 5)

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

    def backward(self, ctx, out):
        if out.rank not in self.ranks or not self.sigs(out.dtype):
            return None
        a = self._attrs(ctx, out.shape)
        return [out, TensorType(out.dtype, tuple(a["y_shape"]))], a

    def requires(self, ins, a):
        r = ins[1].rank
        return [ins[0].rank >= 2, r >= 1] + [-r <= a[t] < r for t in ("plus", "minus") if a[t] is not None]

    def infer(self, ins, a):
        return [ins[0]]

    @staticmethod
    def k(a, yshape):
        r = len(yshape)
        k = a["c"]
        if a["plus"] is not None:
            k = k + yshape[a["plus"] % r]
        if a["minus"] is not None:
            k = k - yshape[a["minus"] % r]
        return k

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

    keeps_integers = True
    gaps: ClassVar[tuple] = (
        ("y of another dtype than x", "schema.allowed binds y to Trilu's data type (see schema_inputs)"),
    )

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


OPS = [TriluComputedK]
