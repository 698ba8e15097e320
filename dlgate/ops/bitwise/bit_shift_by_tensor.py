from __future__ import annotations

from typing import ClassVar

from dlgate import dtypes as dt
from dlgate.ops.binary._shared import Elementwise
from dlgate.ops.bitwise._shared import SHIFT_DEFINED, bit_shift


class BitShiftByTensor(Elementwise):
    """BitShift-28 with the shift amounts a graph tensor of x's dtype (multidirectional
    broadcasting): every amount is defined from opset 28. Not generated before opset 28,
    where an amount at or beyond the bit width is undefined and integer graph inputs
    cannot be kept below it."""

    name = "BitShiftByTensor"
    onnx_op = "BitShift"
    min_opset = SHIFT_DEFINED
    types = dt.INTS

    def sample(self, ctx, ins):
        return {"direction": ctx.choice(("LEFT", "RIGHT"))}

    def backward(self, ctx, out):
        res = super().backward(ctx, out)
        return None if res is None else (res[0], self.sample(ctx, res[0]))

    def onnx_attrs(self, a, b):
        return {"direction": a["direction"]}

    def torch(self, a, x, s):
        return bit_shift(x, s, a["direction"] == "LEFT")

    gaps: ClassVar[tuple] = (
        ("shift amounts as a graph tensor before opset 28", "integer graph inputs cannot be kept below the bit "
                                                             "width, which BitShift-11 requires"),
    )


OPS = [BitShiftByTensor]
