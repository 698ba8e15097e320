from __future__ import annotations

import math

import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, f32
from dlgate.ops.norm._shared import _wide


class LRN(OpSpec):
    """ONNX LRN over the channel axis of an N x C x H x W tensor:
    ``square_sum[n, c] = sum(x[n, i] ^ 2)`` for ``max(0, c - floor((size - 1) / 2)) <= i
    <= min(C - 1, c + ceil((size - 1) / 2))`` (an even size takes one more channel after c
    than before it), ``y = x / (bias + alpha / size * square_sum) ^ beta``. Rank 4 only
    (the onnx.reference and onnxruntime kernels reject other ranks). bias > 0 and alpha >= 0
    keep the base positive, so the power is always defined. ``torch`` follows the formula
    for any size, odd or even, but only odd sizes are drawn: onnxruntime's CPU kernel
    rejects an even size (``size_ % 2 == 1``) though ONNX allows it."""

    onnx_op = "LRN"
    ranks = (4,)
    dtypes = tuple((t,) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        return {"size": ctx.choice((1, 3, 3, 5, 5, 7, 9)),
                "alpha": ctx.choice((f32(1e-4), f32(1e-4), ctx.uniform(1e-4, 1.0))),
                "beta": ctx.choice((f32(0.75), f32(0.75), ctx.uniform(0.1, 1.0))),
                "bias": ctx.choice((1.0, 1.0, ctx.uniform(0.5, 2.0)))}

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        return [out], self.sample(ctx, [out])

    def infer(self, ins, a):
        return [ins[0]]

    def onnx_attrs(self, a, b):
        return {"size": a["size"], "alpha": b.opt(a["alpha"], f32(1e-4)), "beta": b.opt(a["beta"], f32(0.75)),
                "bias": b.opt(a["bias"], 1.0)}

    def torch(self, a, x):
        n = a["size"]
        before, after = (n - 1) // 2, math.ceil((n - 1) / 2)
        xw = _wide(x)
        sq = xw * xw
        # pad the channel axis (dim 1) with zeros: before channels ahead, after behind
        sq = F.pad(sq, (0, 0, 0, 0, before, after))
        ss = sq.unfold(1, n, 1).sum(dim=-1)
        y = xw / (a["bias"] + (a["alpha"] / n) * ss) ** a["beta"]
        return y.to(x.dtype)

    def reference_defect(self, a, ins, opset):
        x = ins[0].shape
        if x[0] != x[1]:
            # op_lrn.py loops ``for c in range(x.shape[0])``: over the batch, not the channels
            return "onnx.reference's LRN loops over the batch size instead of the channels (wrong unless N == C)"
        return None

    def value_range(self, a, ranges, ins):
        # the divisor is at least bias ** beta (square_sum >= 0, alpha >= 0, beta > 0), so y
        # has x's sign and |y| <= |x| / bias ** beta (with a margin for rounding)
        k = (1.0 / a["bias"] ** a["beta"]) * (1 + 2.0 ** -8)
        lo, hi = ranges[0]
        return [(lo * k if lo < 0 else 0.0, hi * k if hi > 0 else 0.0)]


OPS = [LRN]
