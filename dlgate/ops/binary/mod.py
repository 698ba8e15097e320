from __future__ import annotations

from typing import ClassVar

import torch

from dlgate.ops.binary.div import Div


class Mod(Div):
    """Floats, divisor a graph tensor (see DivInt and ModInt for integers). ``fmod=1`` (C
    fmod: the result takes the dividend's sign) at every opset; from opset 28 also
    ``fmod=0`` (``x - floor(x / y) * y``: the result takes the divisor's sign), which
    earlier opsets leave undefined for floats (onnxruntime refuses it: "fmod attribute must
    be true for floating point types before opset 28"). Without the attribute in ``a``
    (instances drawn before opset 28) ``fmod`` is 1."""
    onnx_op = "Mod"

    def sample(self, ctx, ins):
        return {"fmod": int(ctx.coin())} if ctx.opset >= 28 else {}

    def backward(self, ctx, out):
        res = super().backward(ctx, out)
        return None if res is None else (res[0], self.sample(ctx, res[0]))

    def onnx_attrs(self, a, b):
        fmod = a.get("fmod", 1)
        return {"fmod": fmod if fmod else b.opt(0, 0)}

    def torch(self, a, x, y):
        # torch.remainder is Python's %: the divisor's sign, computed from fmod as NumPy
        # (onnx.reference) does, not with the rounding of the literal formula
        return torch.fmod(x, y) if a.get("fmod", 1) else torch.remainder(x, y)

    keeps_integers = True

    nonfinite = frozenset()  # ONNX names C's fmod, not its special values
    jumps = True
    gaps: ClassVar[tuple] = (
        ("float fmod=0 before opset 28", "Mod-13 constrains fmod=0 to integer types; onnxruntime refuses it"),
    )

    def self_range(self, a, r):
        return (0.0, 0.0)  # fmod(x, x), x mod x

    def value_range(self, a, ranges, ins):
        (xlo, xhi), (ylo, yhi) = ranges
        if not a.get("fmod", 1):
            # x mod y has y's sign and |x mod y| <= |y| (= |y| only by rounding)
            return [(min(0.0, ylo), max(0.0, yhi))]
        # fmod(x, y) has x's sign, |fmod(x, y)| <= |x| and < max |y|
        m = max(-ylo, yhi)
        return [(0.0 if xlo >= 0 else max(xlo, -m), 0.0 if xhi <= 0 else min(xhi, m))]

    def input_span(self, a, i, span, ins):
        # fmod(x, y) is x when |x| < |y|; so is x mod y for 0 <= x < y
        m = max(abs(span[0]), abs(span[1]))
        if not a.get("fmod", 1) and span[0] < 0:
            return None
        return span if i == 0 else (m + 1.0, m + 2.0)


OPS = [Mod]
