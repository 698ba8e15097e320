from __future__ import annotations

import math

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import UNBOUNDED, Restricted
from dlgate.ops.reduce._shared import Reduce, _sum


INF = float("inf")


class ReduceLogSum(Restricted, Reduce):
    """Floats only; restricted to a positive sum (log of a non-positive sum is -inf/NaN)."""

    onnx_op = "ReduceLogSum"
    safe = (0.1, 4.0)

    def input_possible(self, a, i, r, t):
        return r[1] > 0  # a positive sum needs some positive element

    def value_range(self, a, ranges, ins):
        # log of ReduceSum's bounds; a sum never positive has no finite logarithm at all
        lo, hi = self._sum_bounds(a, ranges[0], ins[0])
        if hi <= 0:
            return [UNBOUNDED]
        return [(math.log(lo) if lo > 0 else -INF, math.log(hi))]

    def fn(self, x, dims, keep):
        return torch.log(_sum(x, dims, keep))

    def losses(self, a, x):
        s = x.double().sum(self._dims(a, x)) if x.dim() else x.double()
        return [L.gt0(s)]

    def input_span(self, a, i, span, ins):
        # n positive terms summing to within exp(span)
        n = self._count(a, ins[0])
        return (math.exp(min(span[0], 700.0)) / n, math.exp(min(span[1], 700.0)) / n)


OPS = [ReduceLogSum]
