from __future__ import annotations

import math

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import IEEE
from dlgate.ops.binary._shared import Elementwise, mul_bounds


class Mul(Elementwise):
    onnx_op = "Mul"
    types = dt.NUMERIC
    fn = torch.mul

    keeps_integers = True
    can_overflow = True
    nonfinite = IEEE

    def value_range(self, a, ranges, ins):
        return [mul_bounds(*ranges)]

    def exact(self, a, exacts, ins):
        return 0.0 if 0 in exacts else None  # 0 times (a finite) anything

    def input_span(self, a, i, span, ins):
        return sqrt_span(span, i)


def sqrt_span(span: tuple, i: int) -> tuple:
    """A range for factor ``i`` of a product meant to lie in ``span`` (finite): both
    factors within the square roots of a positive span; for a negative one, a positive
    first and a negative second factor; around 0, both within the smaller root."""
    lo, hi = span
    if lo >= 0:
        return (math.sqrt(lo), math.sqrt(hi))
    if hi <= 0:
        r = (math.sqrt(-hi), math.sqrt(-lo))
        return r if i == 0 else (-r[1], -r[0])
    m = math.sqrt(min(-lo, hi))
    return (-m, m)


OPS = [Mul]
