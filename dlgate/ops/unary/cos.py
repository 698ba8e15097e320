from __future__ import annotations

import math

import torch

from dlgate.ops.unary._shared import Unary, periodic_bounds


class Cos(Unary):
    onnx_op = "Cos"
    fn = torch.cos

    out_range = (-1.0, 1.0)

    def value_range(self, a, ranges, ins):
        return [periodic_bounds(math.cos, ranges[0], 0.0)]

    def input_span(self, a, i, span, ins):
        # on [0, pi] cos falls from 1 to -1: invert there
        lo, hi = max(span[0], -1.0), min(span[1], 1.0)
        return (math.acos(hi), math.acos(lo)) if lo <= hi else None


OPS = [Cos]
