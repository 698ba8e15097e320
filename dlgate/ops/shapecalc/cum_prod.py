from __future__ import annotations

from typing import ClassVar

import torch

from dlgate.ops.base import INF
from dlgate.ops.index.cum_sum import Cumulative


class CumProd(Cumulative):
    """Like CumSum (opset 26), with products; the empty product is 1."""

    onnx_op = "CumProd"
    min_opset = 26
    identity = torch.ones_like
    combine = torch.mul
    empty = 1.0

    gaps: ClassVar[tuple] = (
        ("int8/uint8/bool inputs", "CumProd's schema does not define them"),
    )

    def _accumulated(self, m0, m1, lo, hi):
        def pw(v, m):  # v ** m for v >= 0 (0 ** 0 is the empty product, 1)
            try:
                return float(v) ** m
            except OverflowError:
                return INF

        # x^m is monotone in m for x >= 0: the extremes are at m0 or m1
        if lo >= 0:
            return (min(pw(lo, m0), pw(lo, m1)), max(pw(hi, m0), pw(hi, m1)))
        big = max(-lo, abs(hi))
        bound = max(pw(big, m0), pw(big, m1))
        return (-bound, bound)


OPS = [CumProd]
