from __future__ import annotations

import torch

from dlgate.ops.base import INF, NonZero
from dlgate.ops.unary._shared import Unary


class Reciprocal(NonZero, Unary):
    onnx_op = "Reciprocal"
    safe = (0.5, 4.0)
    fn = torch.reciprocal

    def value_range(self, a, ranges, ins):
        # decreasing on each side of 0; valid runs hold no 0, so a 0 end only tells the sign
        lo, hi = ranges[0]
        if lo >= 0 and hi > 0:
            return [(1.0 / hi, 1.0 / lo if lo > 0 else INF)]
        if hi <= 0 and lo < 0:
            return [(1.0 / hi if hi < 0 else -INF, 1.0 / lo)]
        return None

    def input_span(self, a, i, span, ins):
        lo, hi = span  # 1/x is decreasing on each side of 0
        if lo > 0 or hi < 0:
            return (1.0 / hi, 1.0 / lo)
        # a span around 0: its upper half, [hi / 2, hi], from x in [1 / hi, 2 / hi]
        return (1.0 / hi, 2.0 / hi) if hi > 0 else (2.0 / lo, 1.0 / lo) if lo < 0 else None


OPS = [Reciprocal]
