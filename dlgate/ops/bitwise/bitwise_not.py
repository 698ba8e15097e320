from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.unary._shared import Unary


class BitwiseNot(Unary):
    """``~x``: ``-x - 1`` for signed types, ``255 - x`` for uint8."""

    onnx_op = "BitwiseNot"
    min_opset = 18
    types = dt.INTS
    fn = torch.bitwise_not

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        top = 255.0 if ins[0].dtype == dt.UINT8 else -1.0
        return [(top - hi, top - lo)]


OPS = [BitwiseNot]
