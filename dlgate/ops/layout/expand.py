from __future__ import annotations

import torch

from dlgate.ops import sym
from dlgate.ops.layout._shared import Layout, _concrete


# -- Expand / Tile --------------------------------------------------------------------

class Expand(Layout):
    """Bidirectional broadcasting with the constant ``shape``: it may be shorter than the
    input and hold 1s where the input's dim is kept."""
    onnx_op = "Expand"
    ranks = (0, 1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        shape, r = ins[0].shape, ins[0].rank
        if not _concrete(shape):
            return {"shape": [ctx.dim() for _ in range(r)]}
        out = []
        for k in range(ctx.rng.randint(max(0, r - 2), min(r + 2, ctx.limits.max_rank)), 0, -1):
            if k > r:
                out.append(ctx.choice((1, 2, 3)))
            elif shape[-k] == 1 and ctx.coin(0.6):
                out.append(ctx.dim(8))
            else:
                out.append(1 if ctx.coin(0.3) else shape[-k])
        if ctx.degenerate_draw():  # to the input's own shape
            out = list(shape)
        return {"shape": out}

    def out_shape(self, shape, a):
        return sym.broadcast(shape, tuple(a["shape"]))

    def backward(self, ctx, out):
        r = out.rank
        rx = ctx.rng.randint(max(0, r - 2), r) if ctx.coin(0.5) else r
        xs = (None,) * (r - rx) + tuple(1 if ctx.coin(0.4) else d for d in out.shape[r - rx:])
        # Where the input already has the output's dim, the shape may say 1 ...
        shape = [1 if x == d and ctx.coin(0.3) else d for x, d in zip(xs, out.shape)]
        # ... or, for leading dims, nothing at all.
        while shape and xs[r - len(shape)] == out.shape[r - len(shape)] and ctx.coin(0.2):
            shape = shape[1:]
        return [out.with_shape(xs[r - rx:])], {"shape": shape}

    def requires(self, ins, a):
        return sym.broadcastable(ins[0].shape, tuple(a["shape"]))

    def onnx(self, b, a, xs, ys):
        b.node("Expand", [xs[0], b.ints(a["shape"])], ys)

    def torch(self, a, x):
        return x.expand(torch.broadcast_shapes(tuple(x.shape), tuple(a["shape"]))).contiguous()

    preserves_values = True
    exact_values = True


OPS = [Expand]
