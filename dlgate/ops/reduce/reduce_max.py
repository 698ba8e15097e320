from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import INF_ONLY
from dlgate.ops.reduce._shared import Reduce


class ReduceMax(Reduce):
    onnx_op = "ReduceMax"
    types = dt.NUMERIC + (dt.BOOL,)  # bool from opset 20 (the schema filter applies it)
    noop_identity = True

    keeps_range = True
    nonfinite = INF_ONLY
    exact_values = True
    siblings = "reduce-extremum"

    def fn(self, x, dims, keep):
        return torch.amax(x, dims, keepdim=keep)


OPS = [ReduceMax]
