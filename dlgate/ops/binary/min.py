from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import INF_ONLY
from dlgate.ops.binary._shared import Elementwise, fold


class Min(Elementwise):
    onnx_op = "Min"
    types = dt.NUMERIC
    fn = torch.minimum

    def torch(self, a, *xs):
        return fold(torch.minimum, xs)

    keeps_integers = True
    nonfinite = INF_ONLY
    exact_values = True
    siblings = "variadic-extremum"

    def value_range(self, a, ranges, ins):
        return [(min(r[0] for r in ranges), min(r[1] for r in ranges))]

    def input_span(self, a, i, span, ins):
        return span


OPS = [Min]
