from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.unary._shared import Unary


class Round(Unary):
    onnx_op = "Round"  # half to even in both ONNX and PyTorch
    fn = torch.round

    def torch(self, a, x):
        return L.proxy_round(x) if x.requires_grad else torch.round(x)

    integral_out = True
    monotone = 1
    jumps = True


OPS = [Round]
