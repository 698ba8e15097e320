from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import INF_ONLY
from dlgate.ops.reduce._shared import Reduce


class ReduceMin(Reduce):
    onnx_op = "ReduceMin"
    types = dt.NUMERIC + (dt.BOOL,)
    noop_identity = True

    keeps_range = True
    nonfinite = INF_ONLY
    exact_values = True
    siblings = "reduce-extremum"

    def fn(self, x, dims, keep):
        return torch.amin(x, dims, keepdim=keep)


OPS = [ReduceMin]
