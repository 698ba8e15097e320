from __future__ import annotations

from typing import ClassVar

import torch

from dlgate.ops import sym
from dlgate.ops.base import TensorType
from dlgate.ops.shapecalc._shared import FromShape, _pieces_for, _pieces_ok, _resolve, _scalar_pieces, _shape_tensor


class ExpandFromShape(FromShape):
    """``Expand(x, shape)``, ``shape`` y's whole shape (``expand_as``, bidirectional) or some
    of y's dims with constants (1s where x keeps its dim), or constants after the empty
    Slice of a rank-0 y's Shape; the target may be shorter or longer than x's rank. y has
    x's dtype (``schema_inputs``, as for Reshape)."""

    name = "ExpandFromShape"
    onnx_op = "Expand"

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

    def onnx(self, b, a, xs, ys):
        b.node("Expand", [xs[0], _shape_tensor(b, xs[1], a["pieces"])], ys)

    def torch(self, a, x, y):
        t = _resolve(a["pieces"], tuple(y.shape))
        return x.expand(torch.broadcast_shapes(tuple(x.shape), tuple(t))).contiguous()

    preserves_values = True
    keeps_range = True
    gaps: ClassVar[tuple] = (
        ("y of another dtype than x", "schema.allowed binds y to Expand's data type (see schema_inputs)"),
    )


OPS = [ExpandFromShape]
