from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import INF, Increasing, Restricted
from dlgate.ops.unary._shared import Unary


class Exp(Restricted, Increasing, Unary):
    onnx_op = "Exp"
    fn = torch.exp

    out_range = (0.0, INF)

    def losses(self, a, x):
        return [L.le0(x - L.log_max(x))]


OPS = [Exp]
