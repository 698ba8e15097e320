from __future__ import annotations

import torch

from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import IEEE, Increasing


class Sigmoid(Increasing, Activation):
    onnx_op = "Sigmoid"
    fn = torch.sigmoid

    out_range = (0.0, 1.0)
    nonfinite = IEEE


OPS = [Sigmoid]
