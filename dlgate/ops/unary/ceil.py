from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.unary._shared import Unary


class Ceil(Unary):
    onnx_op = "Ceil"
    fn = torch.ceil

    def torch(self, a, x):
        return L.proxy_ceil(x) if x.requires_grad else torch.ceil(x)

    integral_out = True
    monotone = 1
    jumps = True


OPS = [Ceil]
