from __future__ import annotations

import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import INF_ONLY, Increasing


class Celu(Increasing, Activation):
    onnx_op = "Celu"
    #: float16 and float64 from opset 28 on (the schema's widening; earlier ones allow float32 only)
    types = (dt.FLOAT32, dt.FLOAT64, dt.FLOAT16)
    params = (("alpha", 0.1, 3.0, 1.0),)

    def torch(self, a, x):
        return F.celu(x, alpha=a["alpha"])

    nonfinite = INF_ONLY


OPS = [Celu]
