from __future__ import annotations

import math

import torch

from dlgate.ops.base import abs_bounds
from dlgate.ops.binary._shared import mul0
from dlgate.ops.reduce._shared import SquareSum, _sum


class ReduceL2(SquareSum):
    """Floats only: the square root of an integer sum truncates differently per backend."""

    onnx_op = "ReduceL2"

    def value_range(self, a, ranges, ins):
        # sqrt of n terms x^2 each within [min|x|^2, max|x|^2]: sqrt(n) * [min|x|, max|x|]
        lo, hi = abs_bounds(ranges[0])
        n = math.sqrt(self._count(a, ins[0]))
        return [(mul0(n, lo), mul0(n, hi))]

    def fn(self, x, dims, keep):
        return torch.sqrt(_sum(x * x, dims, keep))

    def input_span(self, a, i, span, ins):
        lo, hi = span
        n = math.sqrt(self._count(a, ins[0]))
        return (max(lo, 0.0) / n, hi / n) if hi > 0 else None


OPS = [ReduceL2]
