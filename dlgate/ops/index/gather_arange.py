from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import IEEE, OpSpec, TensorType
from dlgate.ops.index._shared import MAX_INDICES, _spell


class GatherArange(OpSpec):
    """``Gather(x, Range(start, Size(t), delta) + shift, axis)``: Gather whose indices a
    Range computes at run time, its limit the element count of a second input ``t``
    (``Size``, which onnxruntime does not fold; only ``t``'s shape matters, not its
    values), as exporters write position ids. ``delta`` >= 1; ``shift`` (usually 0) adds a
    constant to the indices. Every index lies in [-n, n - 1] (n = x.shape[axis]); a
    quarter of the draws start below 0, so the Range crosses 0 (or stays below it) and
    Gather wraps the negative indices from the end of the axis, as ONNX defines."""

    name = "GatherArange"
    onnx_op = "Gather"
    onnx_ops = ("Size", "Range", "Add")
    dtypes = tuple((t, t) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)
    arity = 2
    symbolic_ok = False
    #: Share of draws whose Range starts below 0.
    negative_share = 0.25

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        d = x.shape[ax]
        delta = ctx.choice((1, 1, 2, 3))
        if ctx.coin(self.negative_share):  # from -d up to a limit of at least 1
            start = ctx.rng.randint(-d, -1)
            limit = ctx.rng.randint(1, d)
            lo = -d
        else:
            start = ctx.choice((0, 0, ctx.rng.randint(0, d - 1)))
            limit = ctx.rng.randint(start + 1, d)
            lo = 0
        last = start + delta * ((limit - start - 1) // delta)
        shift = 0
        if ctx.coin(0.2):
            shift = ctx.rng.randint(lo - start, d - 1 - last)
        return {"axis": _spell(ctx, ax, x.rank), "start": start, "limit": limit, "delta": delta, "shift": shift,
                "t1": ctx.coin()}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, (a["limit"],) if a["t1"] else (1, a["limit"]))

    @staticmethod
    def _idx(a) -> list:
        return [v + a["shift"] for v in range(a["start"], a["limit"], a["delta"])]

    def requires(self, ins, a):
        x, t = ins
        if x.rank < 1 or a["delta"] < 1 or a["limit"] < 1:
            return [False]
        idx = self._idx(a)
        n = x.shape[a["axis"] % x.rank]
        return [t.numel == a["limit"], len(idx) >= 1, len(idx) <= MAX_INDICES, min(idx) >= -n, max(idx) <= n - 1]

    def infer(self, ins, a):
        s, ax = ins[0].shape, a["axis"] % ins[0].rank
        return [ins[0].with_shape(s[:ax] + (len(self._idx(a)),) + s[ax + 1:])]

    def onnx(self, b, a, xs, ys):
        i64 = lambda v: b.const(np.asarray(v, dtype=np.int64))  # noqa: E731
        limit = b.node("Size", [xs[1]], 1)[0]
        r = b.node("Range", [i64(a["start"]), limit, i64(a["delta"])], 1)[0]
        if a["shift"]:
            r = b.node("Add", [r, i64(a["shift"])], 1)[0]
        b.node("Gather", [xs[0], r], ys, axis=b.opt(a["axis"], 0))

    def torch(self, a, x, t):
        ax = a["axis"] % x.dim()
        idx = torch.arange(a["start"], t.numel(), a["delta"], dtype=torch.int64) + a["shift"]
        idx = torch.where(idx < 0, idx + x.shape[ax], idx)  # Gather wraps negative indices
        return x.index_select(ax, idx)

    keeps_range = True
    nonfinite = IEEE
    value_inputs = (0,)


OPS = [GatherArange]
