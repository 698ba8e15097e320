from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.unary._shared import Unary


class Acos(Unary):
    onnx_op = "Acos"
    safe = (-0.9, 0.9)
    fn = torch.acos

    open_domain = False
    monotone = -1
    domain = (-1.0, 1.0)
    out_range = (0.0, 3.2)
    restricted = True

    def losses(self, a, x):
        return [L.le0(x.abs() - 1)]


OPS = [Acos]
