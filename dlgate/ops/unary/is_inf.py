from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.unary._shared import Unary


class IsInf(Unary):
    onnx_op = "IsInf"
    min_opset = 20  # float16 support arrived in opset 20
    out_dtype = dt.BOOL
    fn = torch.isinf


OPS = [IsInf]
