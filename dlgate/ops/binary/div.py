from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import IEEE, INF, UNBOUNDED, NonZero
from dlgate.ops.binary._shared import Elementwise, mul_bounds


#: Largest divisor ``Div.input_span`` draws (divisors within [1, DIV_SPREAD]).
DIV_SPREAD = 1.5


class Div(NonZero, Elementwise):
    """Floating-point only: integer division by zero is undefined behaviour."""

    onnx_op = "Div"
    types = dt.FLOATS
    fn = torch.div

    nonfinite = IEEE
    nonzero_input = 1
    safe = {1: (0.5, 4.0)}

    def self_range(self, a, r):
        return (1.0, 1.0)  # x / x (x is never 0 in a valid run)

    def value_range(self, a, ranges, ins):
        return [mul_bounds(ranges[0], recip_bounds(ranges[1]))]  # x * (1 / y), y != 0

    def exact(self, a, exacts, ins):
        return 0.0 if exacts[0] == 0 else None  # 0 / y and fmod(0, y) are 0 for y != 0

    def input_span(self, a, i, span, ins):
        # y within [1, q] and x within [q lo, hi] (a positive span) keep x / y inside it;
        # mirrored for a negative span; a span holding 0 needs only x inside it
        lo, hi = span
        q = min(DIV_SPREAD, hi / lo) if lo > 0 else min(DIV_SPREAD, lo / hi) if hi < 0 else DIV_SPREAD
        if i == 1:
            return (1.0, q)
        return (q * lo, hi) if lo > 0 else (lo, q * hi) if hi < 0 else span


def recip_bounds(q) -> tuple:
    """Bounds on 1 / y for the nonzero y within ``q`` (1 / inf = 0)."""
    lo, hi = q
    if lo > 0 or hi < 0:
        return (1 / hi, 1 / lo)  # 1/y falls on each side of 0
    if lo == 0 < hi:
        return (1 / hi, INF)  # y > 0
    if lo < 0 == hi:
        return (-INF, 1 / lo)  # y < 0
    return UNBOUNDED


OPS = [Div]
