from __future__ import annotations

import torch

from dlgate.ops.base import Increasing
from dlgate.ops.unary._shared import Unary


class Atan(Increasing, Unary):
    onnx_op = "Atan"
    fn = torch.atan

    out_range = (-1.6, 1.6)


OPS = [Atan]
