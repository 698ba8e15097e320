from __future__ import annotations

import torch

from dlgate.ops.base import Decreasing
from dlgate.ops.unary._shared import UnitInterval


class Acos(Decreasing, UnitInterval):
    onnx_op = "Acos"
    fn = torch.acos

    out_range = (0.0, 3.2)


OPS = [Acos]
