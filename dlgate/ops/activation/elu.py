from __future__ import annotations

import torch.nn.functional as F

from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import INF_ONLY, Increasing


class Elu(Increasing, Activation):
    onnx_op = "Elu"
    params = (("alpha", 0.1, 3.0, 1.0),)

    def torch(self, a, x):
        return F.elu(x, alpha=a["alpha"])

    nonfinite = INF_ONLY


OPS = [Elu]
