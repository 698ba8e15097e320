from __future__ import annotations

import math

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import INF, Restricted, abs_bounds
from dlgate.ops.unary._shared import Unary


class Cosh(Restricted, Unary):
    onnx_op = "Cosh"
    fn = torch.cosh

    valley = (0.0, 0.0, 1.0)  # for input_span: inverted on its rising side
    out_range = (1.0, INF)

    def value_range(self, a, ranges, ins):
        lo, hi = abs_bounds(ranges[0])
        return [(max(1.0, float(torch.cosh(torch.tensor(lo, dtype=torch.float64)))),
                 float(torch.cosh(torch.tensor(hi, dtype=torch.float64))))]

    def losses(self, a, x):
        return [L.le0(x.abs() - L.log_max(x))]

    def preimage(self, a, r):
        m = math.acosh(r[1]) if r[1] >= 1 else -1.0  # |x| <= acosh(hi); none below 1
        return (-m, m) if math.isfinite(m) else None


OPS = [Cosh]
