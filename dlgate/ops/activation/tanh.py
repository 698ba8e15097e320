from __future__ import annotations

import torch

from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import IEEE, Increasing


class Tanh(Increasing, Activation):
    onnx_op = "Tanh"
    fn = torch.tanh

    out_range = (-1.0, 1.0)
    nonfinite = IEEE


OPS = [Tanh]
