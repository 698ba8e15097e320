"""What the index operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import INF, OpSpec, TensorType


#: Indices lists are kept this small, so attributes stay readable.
MAX_INDICES = 256


def _nested(ctx, shape: tuple, lo: int, hi: int):
    if not shape:
        return ctx.rng.randint(lo, hi)
    return [_nested(ctx, shape[1:], lo, hi) for _ in range(shape[0])]


def _spell(ctx, ax: int, rank: int) -> int:
    return ax - rank if ctx.coin(0.3) else ax


def _budget(ctx, numel) -> int:
    return max(1, ctx.limits.max_elems // max(1, numel))


class Same(OpSpec):
    """Output of the input's type and shape."""

    def backward(self, ctx, out):
        if out.rank not in self.ranks or not self.sigs(out.dtype):
            return None
        return [out], self.sample(ctx, [out])

    def infer(self, ins, a):
        return [ins[0]]


#: ScatterND / ScatterElements reductions and the opset that first defines each.
REDUCTIONS = (("none", 11), ("add", 16), ("mul", 16), ("max", 18), ("min", 18))


def _reduction(ctx, dtype: str) -> str:
    if dtype == dt.BOOL:
        return "none"  # the arithmetic reductions are not defined on bool
    if dtype == dt.FLOAT16:
        # ONNX defines them, but onnxruntime's CPU provider rejects float16 reductions at
        # run time, which its (operator, dtype, opset) probe cannot tell apart from "none"
        return "none"
    return ctx.choice([r for r, v in REDUCTIONS if v <= ctx.opset] + ["none"])


class Scatter(OpSpec):
    """Data and updates from the graph, indices a constant in the attributes. With
    reduction "none" no two updates write one element (ONNX leaves that undefined); the
    other reductions apply repeated indices in turn."""

    arity = 2
    dtypes = tuple((t, t) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)
    symbolic_ok = False

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self.updates_shape(ins[0].shape, a))

    def backward(self, ctx, out):
        if out.rank not in self.ranks or not self.sigs(out.dtype):
            return None
        a = self.sample(ctx, [out])
        if a is None:
            return None
        return [out, TensorType(out.dtype, self.updates_shape(out.shape, a))], a

    def infer(self, ins, a):
        return [ins[0]]

    def onnx(self, b, a, xs, ys):
        red = None if b.opset < 16 else b.opt(a["reduction"], "none")
        b.node(self.onnx_op, [xs[0], b.const(np.asarray(a["indices"], dtype=np.int64)), xs[1]], ys,
               reduction=red, **self.extra_attrs(a, b))

    def extra_attrs(self, a, b):
        return {}

    can_overflow = True  # add and mul of integers
    keeps_integers = True  # selections, sums and products of integers

    def value_range(self, a, ranges, ins):
        if a["reduction"] in ("none", "max", "min"):
            known = [r for r in ranges if r is not None]
            lo = min((r[0] for r in known), default=-INF)
            hi = max((r[1] for r in known), default=INF)
            return [(lo, hi)]  # every element is a data or an updates value
        return None

    def undefined(self, a, ins, out_types):
        if a["reduction"] not in ("add", "mul"):
            return None
        return super().undefined(a, ins, out_types)


def _reduce_into(out, lin, upd, reduction):
    """``out`` (flattened along dim 0) with ``upd`` rows applied at rows ``lin``."""
    if reduction == "none":
        out[lin] = upd
        return out
    combine = {"add": torch.add, "mul": torch.mul, "max": torch.maximum}.get(reduction, torch.minimum)
    for r in range(len(lin)):  # in turn, as ONNX reads: a repeated index adds twice
        row = combine(out[lin[r]], upd[r])
        # the input search differentiates: mul, max and min keep their operands, so the row
        # just read must not be overwritten in place, also where only the updates need gradients
        if out.requires_grad or row.requires_grad:
            out = out.clone()
        out[lin[r]] = row
    return out
