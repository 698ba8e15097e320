from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec
from dlgate.ops.layout._shared import factor
from dlgate.ops.shapecalc._shared import MAX_LIST, _mask, _spell


class Compress(OpSpec):
    """``condition``: a 1-D bool constant made by the lowering, with at least one true
    entry, as long as the dim along ``axis`` (or the flattened input, without ``axis``) or
    shorter (the rest is dropped); ``axis`` given or left out, sometimes negative. Not
    generated: conditions computed from data (their count must be known at generation),
    all-false conditions (zero-sized outputs)."""

    onnx_op = "Compress"
    symbolic_ok = False
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)

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

    def onnx(self, b, a, xs, ys):
        cond = b.const(np.array(a["cond"], dtype=np.bool_))
        b.node("Compress", [xs[0], cond], ys, axis=a["axis"])

    def torch(self, a, x):
        keep = torch.tensor([i for i, c in enumerate(a["cond"]) if c], dtype=torch.int64)
        if a["axis"] is None:
            return x.reshape(-1).index_select(0, keep)
        return x.index_select(a["axis"] % x.dim(), keep)

    keeps_range = True
    gaps: ClassVar[tuple] = (
        ("conditions computed from data", "the number of true entries must be known at generation"),
        ("all-false conditions", "zero-sized tensors are not generated"),
    )


OPS = [Compress]
