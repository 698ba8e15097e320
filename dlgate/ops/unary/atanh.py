from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import Increasing, Restricted
from dlgate.ops.unary._shared import Unary


class Atanh(Restricted, Increasing, Unary):
    onnx_op = "Atanh"
    safe = (-0.9, 0.9)
    fn = torch.atanh

    domain = (-1.0, 1.0)

    def losses(self, a, x):
        return [L.lt0(x.abs() - 1)]


OPS = [Atanh]
