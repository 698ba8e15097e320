from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import INF, abs_bounds
from dlgate.ops.unary._shared import Unary


class Abs(Unary):
    onnx_op = "Abs"
    types = dt.FLOATS + dt.SIGNED + (dt.UINT8,)  # uint8: the identity, as ONNX defines it
    fn = torch.abs

    keeps_integers = True
    valley = (0.0, 0.0, 0.0)  # for input_span: inverted on its rising side
    can_overflow = True
    out_range = (0.0, INF)
    exact_values = True

    def value_range(self, a, ranges, ins):
        return [abs_bounds(ranges[0])]

    def preimage(self, a, r):
        return (-r[1], r[1])  # |x| <= hi


OPS = [Abs]
