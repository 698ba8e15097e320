from __future__ import annotations

import math

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import INF_ONLY
from dlgate.ops.unary._shared import Unary


class Sign(Unary):
    onnx_op = "Sign"
    types = dt.FLOATS + dt.SIGNED + (dt.UINT8,)  # uint8: 0 or 1
    fn = torch.sign

    #: Positive (negative) bounds closer to 0 than this may still hold values that
    #: underflowed to 0 (Sigmoid of -100 in float32), so they only bound the sign by 0.
    TINY = 1e-4

    integral_out = True
    out_range = (-1.0, 1.0)
    nonfinite = INF_ONLY
    jumps = True
    steerable = False

    def value_range(self, a, ranges, ins):
        # non-decreasing: the input's bounds give the output's
        lo, hi = ranges[0]
        return [(1.0 if lo > self.TINY else 0.0 if lo >= 0 else -1.0,
                 -1.0 if hi < -self.TINY else 0.0 if hi <= 0 else 1.0)]

    def anchor(self, a, anchors, ins):
        # min <= x <= max gives sign(min) <= sign(x) <= sign(max)
        x = anchors[0]
        if x is None or (0 < abs(x) <= self.TINY):
            return None
        return float(math.copysign(1.0, x)) if x else 0.0


OPS = [Sign]
