from __future__ import annotations

import math

import torch

from dlgate.ops.unary._shared import Unary


class Tan(Unary):
    onnx_op = "Tan"
    fn = torch.tan

    poles = (math.pi / 2, math.pi)

    def value_range(self, a, ranges, ins):
        # increasing within a branch (k*pi - pi/2, k*pi + pi/2); unbounded across a pole
        lo, hi = ranges[0]
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return None
        k = math.floor(lo / math.pi + 0.5)
        tol = 1e-9 * max(1.0, abs(lo), abs(hi))  # poles counted in when rounding leaves doubt
        if (k - 0.5) * math.pi + tol < lo and hi < (k + 0.5) * math.pi - tol:
            return [(math.tan(lo), math.tan(hi))]
        return None


OPS = [Tan]
