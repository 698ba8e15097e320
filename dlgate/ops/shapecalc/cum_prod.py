from __future__ import annotations

from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import INF, OpSpec
from dlgate.ops.index.cum_sum import cumulative, cumulative_onnx
from dlgate.ops.shapecalc._shared import _spell


class CumProd(OpSpec):
    """Like CumSum (opset 26): products accumulated sequentially in the input's dtype, along
    ``axis`` (an int32 or int64 scalar constant), ``exclusive`` (the first product is the
    empty one, 1) and ``reverse``. Signed integer overflow is reported ``undefined``."""

    onnx_op = "CumProd"
    min_opset = 26
    dtypes = tuple((t,) for t in dt.FLOATS + dt.COMMON_INTS)
    ranks = (1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        return {"axis": _spell(ctx, ctx.rng.randrange(ins[0].rank), ins[0].rank),
                "exclusive": int(ctx.coin(0.3)), "reverse": int(ctx.coin(0.3))}

    def backward(self, ctx, out):
        if out.rank not in self.ranks or not self.sigs(out.dtype):
            return None
        return [out], self.sample(ctx, [out])

    def infer(self, ins, a):
        return [ins[0]]

    def onnx(self, b, a, xs, ys):
        cumulative_onnx(b, "CumProd", a, xs, ys)

    def torch(self, a, x):
        return cumulative(a, x, torch.ones_like, torch.mul)

    can_overflow = True
    keeps_integers = True
    gaps: ClassVar[tuple] = (
        ("int8/uint8/bool inputs", "CumProd's schema does not define them"),
    )

    def _terms(self, a, ins):
        n = ins[0].shape[a["axis"] % ins[0].rank]
        if sym.is_sym(n):
            return None
        return (0, n - 1) if a["exclusive"] else (1, n)

    def value_range(self, a, ranges, ins):
        terms = self._terms(a, ins)
        if terms is None:
            return None
        m0, m1 = terms
        lo, hi = ranges[0]

        def pw(v, m):  # v ** m for v >= 0 (0 ** 0 is the empty product, 1)
            try:
                return float(v) ** m
            except OverflowError:
                return INF

        # x^m is monotone in m for x >= 0: the extremes are at m0 or m1
        if lo >= 0:
            return [(min(pw(lo, m0), pw(lo, m1)), max(pw(hi, m0), pw(hi, m1)))]
        big = max(-lo, abs(hi))
        bound = max(pw(big, m0), pw(big, m1))
        return [(-bound, bound)]

    def exact(self, a, exacts, ins):
        return 1.0 if a["exclusive"] else None


OPS = [CumProd]
