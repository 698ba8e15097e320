from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import IEEE, OpSpec
from dlgate.ops.index._shared import MAX_INDICES, _budget, _nested, _spell


class Gather(OpSpec):
    """``indices`` of rank 0..2 with values in [-n, n-1] (n = data.shape[axis])."""

    onnx_op = "Gather"
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)
    symbolic_ok = False

    def _ishape(self, ctx, q):
        shape = [ctx.rng.randint(1, 6) for _ in range(q)]
        return tuple(shape)

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        n = x.shape[ax]
        ishape = self._ishape(ctx, ctx.choice((0, 1, 1, 2)))
        return {"axis": _spell(ctx, ax, x.rank), "indices": _nested(ctx, ishape, -n, n - 1)}

    def backward(self, ctx, out):
        R = out.rank
        qs = [q for q in (0, 1, 2) if q <= R and R - q + 1 <= ctx.limits.max_rank]
        if not qs:
            return None
        q = ctx.choice(qs)
        r = R - q + 1
        ax = ctx.rng.randrange(r)
        ishape = tuple(out.shape[ax:ax + q])
        if sym.prod(ishape) > MAX_INDICES:
            return None
        rest = out.shape[:ax] + out.shape[ax + q:]
        n = ctx.rng.randint(1, max(1, min(ctx.limits.max_dim, _budget(ctx, sym.prod(rest)))))
        x = out.with_shape(out.shape[:ax] + (n,) + out.shape[ax + q:])
        return [x], {"axis": _spell(ctx, ax, r), "indices": _nested(ctx, ishape, -n, n - 1)}

    def backward_ranks(self, out):
        return tuple(out.rank - q + 1 for q in (0, 1, 2) if out.rank - q + 1 >= 1)

    def requires(self, ins, a):
        idx = np.asarray(a["indices"])
        n = ins[0].shape[a["axis"] % ins[0].rank]
        return [idx.size <= MAX_INDICES, int(idx.min()) >= -n, int(idx.max()) <= n - 1]

    def infer(self, ins, a):
        s, ax = ins[0].shape, a["axis"] % ins[0].rank
        return [ins[0].with_shape(s[:ax] + np.shape(a["indices"]) + s[ax + 1:])]

    def onnx(self, b, a, xs, ys):
        b.node(self.onnx_op, [xs[0], b.const(np.asarray(a["indices"], dtype=np.int64))], ys,
               axis=b.opt(a["axis"], 0))

    def torch(self, a, x):
        ax = a["axis"] % x.dim()
        idx = torch.tensor(a["indices"], dtype=torch.int64)
        idx = torch.where(idx < 0, idx + x.shape[ax], idx)
        y = x.index_select(ax, idx.reshape(-1))
        return y.reshape(x.shape[:ax] + idx.shape + x.shape[ax + 1:])

    keeps_range = True
    nonfinite = IEEE
    exact_values = True


OPS = [Gather]
