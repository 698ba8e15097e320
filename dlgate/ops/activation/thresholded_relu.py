from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import INF, INF_ONLY


class ThresholdedRelu(Activation):
    onnx_op = "ThresholdedRelu"
    params = (("alpha", -1.0, 3.0, 1.0),)

    def torch(self, a, x):
        y = torch.where(x > a["alpha"], x, torch.zeros_like(x))
        if x.requires_grad:  # inside the input search: a slope below the threshold too
            y = y + L.PROXY_SLOPE * (x - x.detach()) * (x <= a["alpha"])
        return y

    nonfinite = INF_ONLY
    jumps = True

    def value_range(self, a, ranges, ins):
        # x where x > alpha, else exactly 0
        lo, hi, alpha = ranges[0][0], ranges[0][1], a["alpha"]
        if lo > alpha:
            return [(lo, hi)]
        if hi <= alpha:
            return [(0.0, 0.0)]
        return [(min(0.0, alpha), max(0.0, hi))]

    def input_span(self, a, i, span, ins):
        # x itself above the threshold, else 0: the part of the span above alpha, or
        # values just below alpha when the span holds 0
        lo, hi, alpha = span[0], span[1], a["alpha"]
        if hi > max(lo, alpha):
            return (max(lo, alpha) + 1e-3 * (hi - max(lo, alpha)), hi)
        return (alpha - 1.0, alpha) if lo <= 0 <= hi else None

    def preimage(self, a, r):
        # outputs x above alpha, 0 at or below it
        lo, hi, alpha = r[0], r[1], a["alpha"]
        if lo <= 0 <= hi:
            return (-INF, max(alpha, hi))
        return (max(lo, alpha), hi) if hi > alpha else (INF, -INF)  # (INF, -INF): none


OPS = [ThresholdedRelu]
