from __future__ import annotations

import math

from dlgate import dtypes as dt
from dlgate.ops.base import abs_bounds
from dlgate.ops.reduce._shared import SquareSum, _sum


class ReduceSumSquare(SquareSum):
    """No int32: onnx.reference's ReduceSumSquare promotes int32 to int64 (np.sum)."""
    onnx_op = "ReduceSumSquare"
    types = dt.FLOATS + (dt.INT64,)

    keeps_integers = True

    def value_range(self, a, ranges, ins):
        # n terms x^2 each within [min|x|^2, max|x|^2]
        lo, hi = abs_bounds(ranges[0])
        return [self._sum_bounds(a, (lo * lo, hi * hi), ins[0])]

    def fn(self, x, dims, keep):
        return _sum(x * x, dims, keep)

    def input_span(self, a, i, span, ins):
        lo, hi = span
        n = self._count(a, ins[0])
        return (math.sqrt(max(lo, 0.0) / n), math.sqrt(hi / n)) if hi > 0 else None


OPS = [ReduceSumSquare]
