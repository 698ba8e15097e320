from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.unary._shared import Unary


class Floor(Unary):
    onnx_op = "Floor"
    fn = torch.floor

    def torch(self, a, x):
        return L.proxy_floor(x) if x.requires_grad else torch.floor(x)

    integral_out = True
    monotone = 1
    jumps = True


OPS = [Floor]
