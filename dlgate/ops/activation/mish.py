from __future__ import annotations

import torch.nn.functional as F

from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import INF


class Mish(Activation):
    onnx_op = "Mish"
    min_opset = 18
    fn = F.mish

    valley = (-1.25, -1.15, -0.3089)  # smallest at about -1.1924: -0.30884
    out_range = (-0.3089, INF)


OPS = [Mish]
