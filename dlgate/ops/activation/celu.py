from __future__ import annotations

import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.ops.activation._shared import Exponential


class Celu(Exponential):
    onnx_op = "Celu"
    #: float16 and float64 from opset 28 on (the schema's widening; earlier ones allow float32 only)
    types = (dt.FLOAT32, dt.FLOAT64, dt.FLOAT16)
    fn = F.celu


OPS = [Celu]
