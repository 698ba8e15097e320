from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import Decreasing, Restricted
from dlgate.ops.unary._shared import Unary


class Acos(Restricted, Decreasing, Unary):
    onnx_op = "Acos"
    safe = (-0.9, 0.9)
    fn = torch.acos

    open_domain = False
    domain = (-1.0, 1.0)
    out_range = (0.0, 3.2)

    def losses(self, a, x):
        return [L.le0(x.abs() - 1)]


OPS = [Acos]
