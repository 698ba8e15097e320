from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import Increasing
from dlgate.ops.unary._shared import Unary


class Erf(Increasing, Unary):
    onnx_op = "Erf"
    fn = torch.erf

    out_range = (-1.0, 1.0)

    def reference_defect(self, a, ins, opset):
        if ins and ins[0].dtype == dt.FLOAT64:
            return "onnx.reference's Erf returns float32 values (np.vectorize(math.erf, otypes=['f']))"
        return None


OPS = [Erf]
