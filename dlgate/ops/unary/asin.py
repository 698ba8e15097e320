from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import Increasing, Restricted
from dlgate.ops.unary._shared import Unary


class Asin(Restricted, Increasing, Unary):
    onnx_op = "Asin"
    safe = (-0.9, 0.9)
    fn = torch.asin

    open_domain = False
    domain = (-1.0, 1.0)
    out_range = (-1.6, 1.6)

    def losses(self, a, x):
        return [L.le0(x.abs() - 1)]


OPS = [Asin]
