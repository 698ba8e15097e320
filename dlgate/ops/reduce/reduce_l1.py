from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.base import abs_bounds
from dlgate.ops.reduce._shared import Reduce, _sum


class ReduceL1(Reduce):
    onnx_op = "ReduceL1"
    types = dt.FLOATS + dt.COMMON_INTS

    keeps_integers = True
    can_overflow = True
    out_range = (0.0, float("inf"))

    def value_range(self, a, ranges, ins):
        # n terms |x| each within [min|x|, max|x|]
        return [self._sum_bounds(a, abs_bounds(ranges[0]), ins[0])]

    def fn(self, x, dims, keep):
        return _sum(x.abs(), dims, keep)

    def input_span(self, a, i, span, ins):
        lo, hi = span
        n = self._count(a, ins[0])
        return (max(lo, 0.0) / n, hi / n) if hi > 0 else None


OPS = [ReduceL1]
