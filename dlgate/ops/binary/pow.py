from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import losses as L
from dlgate.ops.base import INF, Restricted
from dlgate.ops.binary._shared import Elementwise


class Pow(Restricted, Elementwise):
    onnx_op = "Pow"
    types = dt.FLOATS
    fn = torch.pow

    # the base must be positive (see losses): a negative one is NaN for most exponents,
    # and 0 ** y is inf for negative y
    domain = (0.0, INF)
    safe = {0: (0.5, 2.0), 1: (-2.0, 2.0)}

    def value_range(self, a, ranges, ins):
        (xlo, xhi), (ylo, yhi) = ranges
        if xlo < 0:
            return None  # negative bases: integral exponents flip signs
        # for x >= 0, x ** y is monotone in x for each y and in y for each x: the
        # extremes over the box lie at its corners
        corners = [_pow(x, y) for x in (xlo, xhi) for y in (ylo, yhi)]
        return [(min(corners), max(corners))]

    def exact(self, a, exacts, ins):
        return 1.0 if exacts[1] == 0 or exacts[0] == 1 else None  # x ** 0 and 1 ** y

    def input_span(self, a, i, span, ins):
        # exponents within [1/2, 1] keep b ** e between b and sqrt(b): bases above 1
        # within [max(lo^2, 1), hi], or below 1 within [lo, min(hi^2, 1)]
        if span[1] <= 0:
            return None  # a positive base gives positive powers
        if i == 1:
            return (0.5, 1.0)
        lo, hi = max(span[0], 0.0), span[1]
        if max(lo * lo, 1.0) <= hi:
            return (max(lo * lo, 1.0), hi)
        top = min(hi * hi, 1.0)
        return (max(lo, 1e-3), top) if max(lo, 1e-3) <= top else None

    def losses(self, a, x, y):
        xd, yd = x.double(), y.double()
        return [L.gt0(xd), L.le0(yd * torch.log(xd.clamp(min=1e-40)) - L.log_max(x))]


def _pow(x: float, y: float) -> float:
    """x ** y for x >= 0 and its limits at the ends (0 ** -1 = inf, inf ** 0 = 1)."""
    if x == 0:
        return 1.0 if y == 0 else 0.0 if y > 0 else INF
    with np.errstate(all="ignore"):
        return float(np.power(np.float64(x), np.float64(y)))


OPS = [Pow]
