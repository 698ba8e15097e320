from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import IEEE
from dlgate.ops.binary._shared import Elementwise, _finite_or_unbounded


class Sub(Elementwise):
    onnx_op = "Sub"
    types = dt.NUMERIC
    fn = torch.sub

    keeps_integers = True
    can_overflow = True
    nonfinite = IEEE
    cancels = True

    def self_range(self, a, r):
        return (0.0, 0.0)

    def value_range(self, a, ranges, ins):
        (lo, hi), (qlo, qhi) = ranges
        return [_finite_or_unbounded(lo - qhi, hi - qlo)]

    def input_span(self, a, i, span, ins):
        # x within half the span minus y within half its mirror image
        return (span[0] / 2, span[1] / 2) if i == 0 else (-span[1] / 2, -span[0] / 2)


OPS = [Sub]
