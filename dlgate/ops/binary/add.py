from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import IEEE
from dlgate.ops.binary._shared import Elementwise, add_bounds


class Add(Elementwise):
    onnx_op = "Add"
    types = dt.NUMERIC
    fn = torch.add

    keeps_integers = True
    can_overflow = True
    nonfinite = IEEE
    cancels = True

    def value_range(self, a, ranges, ins):
        return [add_bounds(ranges)]

    def input_span(self, a, i, span, ins):
        return (span[0] / 2, span[1] / 2)  # two terms, each within half the span


OPS = [Add]
