from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import INF, OpSpec, TensorType
from dlgate.ops.index._shared import _budget, _spell


class TopK(OpSpec):
    """``sorted=1`` only (the order of an unsorted result is implementation-defined). Ties
    are defined by ONNX (lower index first), which a stable sort reproduces."""
    onnx_op = "TopK"
    n_outputs = 2
    dtypes = tuple((t,) for t in dt.NUMERIC)
    ranks = (1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        return {"axis": _spell(ctx, ax, x.rank), "k": ctx.int(1, x.shape[ax]), "largest": int(ctx.coin(0.7))}

    def backward(self, ctx, out):
        if out.rank < 1 or out.dtype not in dt.NUMERIC:
            return None
        ax = ctx.rng.randrange(out.rank)
        k = out.shape[ax]
        d = k + ctx.rng.randint(0, max(0, min(ctx.limits.max_dim, _budget(ctx, out.numel // k) * k) - k))
        x = out.with_shape(out.shape[:ax] + (d,) + out.shape[ax + 1:])
        return [x], {"axis": _spell(ctx, ax, out.rank), "k": k, "largest": int(ctx.coin(0.7))}

    def requires(self, ins, a):
        d = ins[0].shape[a["axis"] % ins[0].rank]
        return [a["k"] >= 1, a["k"] <= d]

    def infer(self, ins, a):
        s = list(ins[0].shape)
        s[a["axis"] % len(s)] = a["k"]
        return [ins[0].with_shape(s), TensorType(dt.INT64, tuple(s))]

    def onnx(self, b, a, xs, ys):
        b.node("TopK", [xs[0], b.ints([a["k"]])], ys, axis=b.opt(a["axis"], -1),
               largest=b.opt(a["largest"], 1), sorted=b.opt(1, 1))

    def torch(self, a, x):
        ax = a["axis"] % x.dim()
        v, i = torch.sort(x, dim=ax, descending=bool(a["largest"]), stable=True)
        return v.narrow(ax, 0, a["k"]), i.narrow(ax, 0, a["k"])

    keeps_range = True  # the values output; ``value_range`` bounds the indices apart
    jumps = True  # the indices output

    def value_range(self, a, ranges, ins):
        # values are some of the input's; indices point along an axis of size d
        d = ins[0].shape[a["axis"] % ins[0].rank]
        hi = float(d - 1) if not sym.is_sym(d) else INF
        return [tuple(ranges[0]), (0.0, hi)]


OPS = [TopK]
