from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import INF
from dlgate.ops.unary._shared import Unary


class Log(Unary):
    onnx_op = "Log"
    safe = (0.5, 4.0)
    fn = torch.log

    monotone = 1
    domain = (0.0, INF)
    restricted = True

    def losses(self, a, x):
        return [L.gt0(x)]


OPS = [Log]
