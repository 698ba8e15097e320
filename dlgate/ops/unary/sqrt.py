from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import INF
from dlgate.ops.unary._shared import Unary


class Sqrt(Unary):
    onnx_op = "Sqrt"
    safe = (0.5, 4.0)
    fn = torch.sqrt

    open_domain = False
    monotone = 1
    domain = (0.0, INF)
    out_range = (0.0, INF)
    restricted = True

    def losses(self, a, x):
        return [L.ge0(x)]


OPS = [Sqrt]
