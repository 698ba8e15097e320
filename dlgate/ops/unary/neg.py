from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import Decreasing
from dlgate.ops.unary._shared import Unary


class Neg(Decreasing, Unary):
    onnx_op = "Neg"
    types = dt.FLOATS + dt.SIGNED
    fn = torch.neg

    keeps_integers = True
    can_overflow = True
    exact_values = True


OPS = [Neg]
