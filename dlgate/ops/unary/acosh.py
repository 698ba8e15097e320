from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import INF
from dlgate.ops.unary._shared import Unary


class Acosh(Unary):
    onnx_op = "Acosh"
    safe = (1.1, 4.0)
    fn = torch.acosh

    open_domain = False
    monotone = 1
    domain = (1.0, INF)
    restricted = True

    def losses(self, a, x):
        return [L.ge0(x - 1)]


OPS = [Acosh]
