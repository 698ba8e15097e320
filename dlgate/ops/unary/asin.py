from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.unary._shared import Unary


class Asin(Unary):
    onnx_op = "Asin"
    safe = (-0.9, 0.9)
    fn = torch.asin

    open_domain = False
    monotone = 1
    domain = (-1.0, 1.0)
    out_range = (-1.6, 1.6)
    restricted = True

    def losses(self, a, x):
        return [L.le0(x.abs() - 1)]


OPS = [Asin]
