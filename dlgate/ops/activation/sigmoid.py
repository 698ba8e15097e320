from __future__ import annotations

import torch

from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import IEEE


class Sigmoid(Activation):
    onnx_op = "Sigmoid"
    fn = torch.sigmoid

    monotone = 1
    out_range = (0.0, 1.0)
    nonfinite = IEEE


OPS = [Sigmoid]
