from __future__ import annotations

import torch

from dlgate.ops.base import INF, Increasing, Restricted
from dlgate.ops.unary._shared import Unary


class Log(Restricted, Increasing, Unary):
    onnx_op = "Log"
    safe = (0.5, 4.0)
    fn = torch.log

    domain = (0.0, INF)


OPS = [Log]
