from __future__ import annotations

import torch

from dlgate.ops.base import Increasing
from dlgate.ops.unary._shared import UnitInterval


class Asin(Increasing, UnitInterval):
    onnx_op = "Asin"
    fn = torch.asin

    out_range = (-1.6, 1.6)


OPS = [Asin]
