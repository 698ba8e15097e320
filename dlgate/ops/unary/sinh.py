from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import Increasing, Restricted
from dlgate.ops.unary._shared import Unary


class Sinh(Restricted, Increasing, Unary):
    onnx_op = "Sinh"
    fn = torch.sinh

    def losses(self, a, x):
        return [L.le0(x.abs() - L.log_max(x))]


OPS = [Sinh]
