from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import losses as L
from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import INF_ONLY


class Relu(Activation):
    onnx_op = "Relu"
    types = dt.FLOATS + dt.SIGNED  # the integer types from opset 14
    fn = torch.relu

    def torch(self, a, x):
        return L.proxy_relu(x) if x.requires_grad else torch.relu(x)

    keeps_integers = True
    monotone = 1
    nonfinite = INF_ONLY
    exact_values = True

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        return [(max(0.0, lo), max(0.0, hi))]


OPS = [Relu]
