from __future__ import annotations

import torch

from dlgate.ops.base import INF, Increasing, Restricted
from dlgate.ops.unary._shared import Unary


class Sqrt(Restricted, Increasing, Unary):
    onnx_op = "Sqrt"
    safe = (0.5, 4.0)
    fn = torch.sqrt

    open_domain = False
    domain = (0.0, INF)
    out_range = (0.0, INF)


OPS = [Sqrt]
