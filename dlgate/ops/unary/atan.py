from __future__ import annotations

import torch

from dlgate.ops.unary._shared import Unary


class Atan(Unary):
    onnx_op = "Atan"
    fn = torch.atan

    monotone = 1
    out_range = (-1.6, 1.6)


OPS = [Atan]
