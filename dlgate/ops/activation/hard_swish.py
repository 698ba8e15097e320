from __future__ import annotations

import torch

from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import INF, f32


class HardSwish(Activation):
    onnx_op = "HardSwish"
    min_opset = 14

    def torch(self, a, x):
        # ONNX defines it as x * HardSigmoid(x; alpha=1/6 as a float32 attribute, beta=0.5)
        return x * torch.clamp(f32(1 / 6) * x + 0.5, 0.0, 1.0)

    valley = (-1.55, -1.45, -0.375)  # x * (x/6 + 1/2) is smallest at -1.5: -0.375
    out_range = (-0.375, INF)


OPS = [HardSwish]
