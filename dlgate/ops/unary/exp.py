from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import INF
from dlgate.ops.unary._shared import Unary


class Exp(Unary):
    onnx_op = "Exp"
    fn = torch.exp

    monotone = 1
    out_range = (0.0, INF)
    restricted = True

    def losses(self, a, x):
        return [L.le0(x - L.log_max(x))]


OPS = [Exp]
