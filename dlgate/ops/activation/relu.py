from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import losses as L
from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import INF_ONLY, Increasing, Proxied


class Relu(Proxied, Increasing, Activation):
    onnx_op = "Relu"
    types = dt.FLOATS + dt.SIGNED  # the integer types from opset 14
    fn = torch.relu
    proxy = L.proxy_relu

    keeps_integers = True
    nonfinite = INF_ONLY
    exact_values = True

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        return [(max(0.0, lo), max(0.0, hi))]


OPS = [Relu]
