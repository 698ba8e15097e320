from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.unary._shared import Unary


class Atanh(Unary):
    onnx_op = "Atanh"
    safe = (-0.9, 0.9)
    fn = torch.atanh

    monotone = 1
    domain = (-1.0, 1.0)
    restricted = True

    def losses(self, a, x):
        return [L.lt0(x.abs() - 1)]


OPS = [Atanh]
