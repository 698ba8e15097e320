from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import INF_ONLY, Increasing


class HardSigmoid(Increasing, Activation):
    onnx_op = "HardSigmoid"
    params = (("alpha", 0.05, 1.0, 0.2), ("beta", 0.0, 1.0, 0.5))

    def torch(self, a, x):
        y = a["alpha"] * x + a["beta"]
        if y.requires_grad:  # the input search: slope 0.1 on the flat sides
            return L.proxy_clip(y, 0.0, 1.0)
        return torch.clamp(y, 0.0, 1.0)

    out_range = (0.0, 1.0)
    nonfinite = INF_ONLY


OPS = [HardSigmoid]
