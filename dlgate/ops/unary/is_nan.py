from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.unary._shared import Unary


class IsNaN(Unary):
    onnx_op = "IsNaN"
    out_dtype = dt.BOOL
    fn = torch.isnan


OPS = [IsNaN]
