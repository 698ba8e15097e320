from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.reduce._shared import Reduce, _sum


class ReduceSum(Reduce):
    onnx_op = "ReduceSum"
    types = dt.FLOATS + dt.COMMON_INTS
    noop_identity = True
    axes_input_from = 13

    keeps_integers = True
    can_overflow = True

    def value_range(self, a, ranges, ins):
        # n terms each within [lo, hi] sum to within [n lo, n hi]
        return [self._sum_bounds(a, ranges[0], ins[0])]

    def fn(self, x, dims, keep):
        return _sum(x, dims, keep)

    def input_span(self, a, i, span, ins):
        n = self._count(a, ins[0])
        return (span[0] / n, span[1] / n)  # n terms, each within 1/n of the span


OPS = [ReduceSum]
