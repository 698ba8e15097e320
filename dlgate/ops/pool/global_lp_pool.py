from __future__ import annotations

import math

import torch

from dlgate.ops.base import abs_bounds
from dlgate.ops.binary._shared import mul0
from dlgate.ops.pool._shared import _GlobalPool


class GlobalLpPool(_GlobalPool):
    """``(sum |x|^p)^(1/p)`` over the spatial dims, p an integer: 1, 2 (the default) or 3.
    onnx.reference has no GlobalLpPool; onnxruntime implements float and float16 only (and
    sums float16 in float32)."""

    onnx_op = "GlobalLpPool"

    def sample(self, ctx, ins):
        return {"p": ctx.choice((1, 2, 2, 3))}

    def backward(self, ctx, out):
        res = super().backward(ctx, out)
        if res is None:
            return None
        return res[0], self.sample(ctx, res[0])

    def onnx_attrs(self, a, b):
        return {"p": b.opt(a["p"], 2)}

    def torch(self, a, x):
        dims = tuple(range(2, x.dim()))
        y = (x.to(torch.float64).abs() ** a["p"]).sum(dim=dims, keepdim=True) ** (1.0 / a["p"])
        return y.to(x.dtype)

    def value_range(self, a, ranges, ins):
        # the p-norm of n elements lies within [n^(1/p) min|x|, n^(1/p) max|x|]
        m, big = abs_bounds(ranges[0])
        n = math.prod(ins[0].shape[2:]) ** (1.0 / a["p"])
        return [(mul0(n, m), mul0(n, big))]

    def exact(self, a, exacts, ins):
        return None

    def reference_defect(self, a, ins, opset):
        return "onnx.reference has no GlobalLpPool"


OPS = [GlobalLpPool]
