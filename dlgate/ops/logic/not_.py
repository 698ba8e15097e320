from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.unary._shared import Unary


class Not(Unary):
    onnx_op = "Not"
    types = (dt.BOOL,)
    fn = torch.logical_not


OPS = [Not]
