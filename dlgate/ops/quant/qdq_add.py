from __future__ import annotations

import torch

from dlgate.ops.binary._shared import Elementwise
from dlgate.ops.quant._shared import F32, QTYPES, _Idiom, _Q


class QDQAdd(_Idiom, Elementwise):
    """``DQ(Q(DQ(Q(a)) + DQ(Q(b))))`` with broadcasting: each input quantized with its own
    scale and zero point; the output scale as large as the inputs' or up to four times
    larger (ties: sums of multiples of the smaller scale)."""

    name = "QDQAdd"
    onnx_op = "Add"
    types = (F32,)

    def sample(self, ctx, ins):
        qt = ctx.choice(QTYPES)
        same = ctx.coin(0.75)
        a = _Q.draw(ctx, "a", qt)
        a.update(_Q.draw(ctx, "b", qt if same else None))
        a.update(_Q.draw(ctx, "y", qt if same else None))
        a["ye"] = max(a["ae"], a["be"]) + ctx.choice((0, 1, 1, 2))
        return a

    def backward(self, ctx, out):
        res = Elementwise.backward(self, ctx, out)
        return None if res is None else (res[0], self.sample(ctx, res[0]))

    def onnx(self, b, a, xs, ys):
        da = _Q.nodes(b, a, "a", xs[0])
        db = _Q.nodes(b, a, "b", xs[1])
        (s,) = b.node("Add", [da, db], 1)
        _Q.nodes(b, a, "y", s, out=ys[0])

    def torch(self, a, x, y):
        s = _Q.fake(a, "a", x) + _Q.fake(a, "b", y)
        return _Q.fake(a, "y", s).to(torch.float32)

    def value_range(self, a, ranges, ins):
        return [_Q.bounds(a, "y")]

    def input_span(self, a, i, span, ins):
        return None


OPS = [QDQAdd]
