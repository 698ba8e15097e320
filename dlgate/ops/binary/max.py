from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import INF_ONLY
from dlgate.ops.binary._shared import Elementwise, fold


class Max(Elementwise):
    onnx_op = "Max"
    types = dt.NUMERIC
    fn = torch.maximum

    def torch(self, a, *xs):
        return fold(torch.maximum, xs)

    keeps_integers = True
    nonfinite = INF_ONLY
    exact_values = True
    siblings = "variadic-extremum"

    def value_range(self, a, ranges, ins):
        return [(max(r[0] for r in ranges), max(r[1] for r in ranges))]

    def input_span(self, a, i, span, ins):
        return span  # the larger of two values within the span


OPS = [Max]
