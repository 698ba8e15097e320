from __future__ import annotations

import torch

from dlgate.ops.unary._shared import Unary


class Asinh(Unary):
    onnx_op = "Asinh"
    fn = torch.asinh

    monotone = 1


OPS = [Asinh]
