from __future__ import annotations

import math

import torch

from dlgate.ops.unary._shared import Unary, periodic_bounds


class Sin(Unary):
    onnx_op = "Sin"
    fn = torch.sin

    out_range = (-1.0, 1.0)

    def value_range(self, a, ranges, ins):
        return [periodic_bounds(math.sin, ranges[0], math.pi / 2)]

    def input_span(self, a, i, span, ins):
        # on [-pi/2, pi/2] sin rises from -1 to 1: invert there
        lo, hi = max(span[0], -1.0), min(span[1], 1.0)
        return (math.asin(lo), math.asin(hi)) if lo <= hi else None


OPS = [Sin]
