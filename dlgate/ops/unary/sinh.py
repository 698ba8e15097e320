from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.unary._shared import Unary


class Sinh(Unary):
    onnx_op = "Sinh"
    fn = torch.sinh

    monotone = 1
    restricted = True

    def losses(self, a, x):
        return [L.le0(x.abs() - L.log_max(x))]


OPS = [Sinh]
