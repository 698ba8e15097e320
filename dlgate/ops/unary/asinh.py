from __future__ import annotations

import torch

from dlgate.ops.base import Increasing
from dlgate.ops.unary._shared import Unary


class Asinh(Increasing, Unary):
    onnx_op = "Asinh"
    fn = torch.asinh


OPS = [Asinh]
