from __future__ import annotations

from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops.binary.div_int import ConstOperand
from dlgate.ops.bitwise._shared import SHIFT_DEFINED, bit_shift


class BitShift(ConstOperand):
    """``y = x << s`` or ``x >> s`` (``direction`` LEFT or RIGHT), ``s`` a constant of x's
    dtype broadcasting to x: below the bit width before opset 28 (BitShift-11 does not
    define more; uint8 only), and from opset 28 (every integer type) sometimes at or beyond
    it, or negative for signed types."""

    onnx_op = "BitShift"
    dtypes = tuple((t,) for t in dt.INTS)
    key = "shift"

    def extra(self, ctx, t):
        return {"direction": ctx.choice(("LEFT", "RIGHT"))}

    def draw(self, ctx, t):
        w = bits(t)
        if ctx.opset >= SHIFT_DEFINED and ctx.coin(0.2):
            out = [w, w + ctx.rng.randint(1, 8), 2 * w]
            if t != dt.UINT8:
                out += [-1, -ctx.rng.randint(2, w)]
            return ctx.choice(out)
        return ctx.choice((0, 1, w - 1, ctx.rng.randint(0, w - 1), ctx.rng.randint(0, min(w - 1, 7))))

    def onnx_attrs(self, a, b):
        return {"direction": a["direction"]}

    def torch(self, a, x):
        return bit_shift(x, self.const(a, x), a["direction"] == "LEFT")

    gaps: ClassVar[tuple] = (
        ("shift amounts >= the bit width before opset 28", "BitShift-11 does not define them (C++/LLVM: undefined)"),
        ("signed types before opset 28", "BitShift-11 allows unsigned types only (dlgate has uint8)"),
    )


def bits(dtype: str) -> int:
    return torch.iinfo(dt.torch_dtype(dtype)).bits


OPS = [BitShift]
