from __future__ import annotations

from typing import ClassVar

import torch

from dlgate.ops.binary._shared import _divisors
from dlgate.ops.binary.div_int import DivInt


class ModInt(DivInt):
    """Integer ``Mod`` by a constant divisor (see DivInt for the divisors). ``fmod=0``
    (the default): ``x - floor(x / y) * y``, the divisor's sign (Python's ``%``);
    ``fmod=1`` from opset 28: ``x - trunc(x / y) * y``, the dividend's sign (C's ``%``).
    Mod-13 says ``fmod=1`` constrains T to floating-point types, so integers take it only
    from opset 28, which defines it."""

    name = "ModInt"
    onnx_op = "Mod"

    def onnx_attrs(self, a, b):
        return {"fmod": a["fmod"] if a["fmod"] else b.opt(0, 0)}

    def torch(self, a, x):
        d = self.const(a, x)
        return torch.fmod(x, d) if a["fmod"] else torch.remainder(x, d)

    gaps: ClassVar[tuple] = DivInt.gaps + (
        ("integer fmod=1 before opset 28", "Mod-13 constrains fmod=1 to floating-point types"),
    )

    def extra(self, ctx, t):
        return {"fmod": int(ctx.coin()) if ctx.opset >= 28 else 0}

    def value_range(self, a, ranges, ins):
        ds = _divisors(a)
        if not a["fmod"]:
            # the divisor's sign, |x mod d| < |d|
            return [(float(min(0, min(ds) + 1)), float(max(0, max(ds) - 1)))]
        (xlo, xhi), m = ranges[0], max(abs(d) for d in ds) - 1
        return [(0.0 if xlo >= 0 else max(xlo, -m), 0.0 if xhi <= 0 else min(xhi, m))]


OPS = [ModInt]
