"""Bitwise operators on integers: BitShift, BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot.

BitShift-11 is defined for unsigned types only (dlgate's one is uint8) and says nothing of
shift amounts at or beyond the bit width, which C++ and LLVM leave undefined (an LLVM
``shl`` by the width is poison). BitShift-28 adds the signed types, makes the right shift
of a signed value arithmetic, discards bits shifted past the sign bit, and defines every
amount: one that is negative or at least the width gives what the sign extension alone
gives (-1 for a right shift of a negative value, else 0). Hence two specs:

* ``BitShift``: the amounts are a constant operand (chosen in ``sample``), below the width
  at every opset, and from opset 28 sometimes at or beyond it (or negative).
* ``BitShiftByTensor`` (opset 28): the amounts are a graph tensor; every value is defined.
"""
from __future__ import annotations

from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.spec.binary import ConstOperand, Elementwise
from dlgate.spec.unary import Unary

#: The opset from which BitShift defines signed types and every shift amount.
SHIFT_DEFINED = 28


def bits(dtype: str) -> int:
    return torch.iinfo(dt.torch_dtype(dtype)).bits


def bit_shift(x, s, left: bool):
    """ONNX BitShift-28: shift ``x`` by ``s`` (broadcast); an amount that is negative or at
    least the bit width gives the sign fill (-1 for a right shift of a negative x, else 0).
    Signed left shifts wrap: bits shifted past the sign bit are discarded."""
    width = torch.iinfo(x.dtype).bits
    valid = (s >= 0) & (s < width)
    s0 = torch.where(valid, s, torch.zeros_like(s))
    if left:
        shifted, fill = torch.bitwise_left_shift(x, s0), torch.zeros_like(x)
    else:
        shifted = torch.bitwise_right_shift(x, s0)  # arithmetic for signed types
        fill = torch.where(x < 0, -torch.ones_like(x), torch.zeros_like(x)) if x.dtype != torch.uint8 \
            else torch.zeros_like(x)
    return torch.where(valid, shifted, fill)


class BitShift(ConstOperand):
    """``y = x << s`` or ``x >> s`` (``direction`` LEFT or RIGHT), ``s`` a constant of x's
    dtype broadcasting to x: below the bit width before opset 28 (BitShift-11 does not
    define more; uint8 only), and from opset 28 (every integer type) sometimes at or beyond
    it, or negative for signed types."""

    onnx_op = "BitShift"
    key = "shift"
    dtypes = tuple((t,) for t in dt.INTS)
    gaps: ClassVar[tuple] = (
        ("shift amounts >= the bit width before opset 28", "BitShift-11 does not define them (C++/LLVM: undefined)"),
        ("signed types before opset 28", "BitShift-11 allows unsigned types only (dlgate has uint8)"),
    )

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


class BitShiftByTensor(Elementwise):
    """BitShift-28 with the shift amounts a graph tensor of x's dtype (multidirectional
    broadcasting): every amount is defined from opset 28. Not generated before opset 28,
    where an amount at or beyond the bit width is undefined and integer graph inputs
    cannot be kept below it."""

    name = "BitShiftByTensor"
    onnx_op = "BitShift"
    min_opset = SHIFT_DEFINED
    types = dt.INTS
    gaps: ClassVar[tuple] = (
        ("shift amounts as a graph tensor before opset 28", "integer graph inputs cannot be kept below the bit "
                                                             "width, which BitShift-11 requires"),
    )

    def sample(self, ctx, ins):
        return {"direction": ctx.choice(("LEFT", "RIGHT"))}

    def backward(self, ctx, out):
        res = super().backward(ctx, out)
        return None if res is None else (res[0], self.sample(ctx, res[0]))

    def onnx_attrs(self, a, b):
        return {"direction": a["direction"]}

    def torch(self, a, x, s):
        return bit_shift(x, s, a["direction"] == "LEFT")


class Bitwise(Elementwise):
    """``y = x1 <op> x2`` on integers of one dtype (opset 18), broadcast."""

    min_opset = 18
    types = dt.INTS


class BitwiseAnd(Bitwise):
    onnx_op = "BitwiseAnd"
    siblings = "bitwise"
    fn = torch.bitwise_and


class BitwiseOr(Bitwise):
    onnx_op = "BitwiseOr"
    siblings = "bitwise"
    fn = torch.bitwise_or


class BitwiseXor(Bitwise):
    onnx_op = "BitwiseXor"
    siblings = "bitwise"
    fn = torch.bitwise_xor


class BitwiseNot(Unary):
    """``~x``: ``-x - 1`` for signed types, ``255 - x`` for uint8."""

    onnx_op = "BitwiseNot"
    min_opset = 18
    types = dt.INTS
    fn = torch.bitwise_not

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        top = 255.0 if ins[0].dtype == dt.UINT8 else -1.0
        return [(top - hi, top - lo)]


OPS = [BitShift, BitShiftByTensor, BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot]
