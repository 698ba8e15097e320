from __future__ import annotations

import torch

from dlgate.ops.base import INF, Increasing, Restricted
from dlgate.ops.unary._shared import Unary


class Acosh(Restricted, Increasing, Unary):
    onnx_op = "Acosh"
    safe = (1.1, 4.0)
    fn = torch.acosh

    open_domain = False
    domain = (1.0, INF)


OPS = [Acosh]
