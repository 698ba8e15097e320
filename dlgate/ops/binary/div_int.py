from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import Ctx, OpSpec
from dlgate.ops.binary._shared import _divisors, reduced_partner


# -- integer division and modulo, by constant divisors ------------------------------------------
#: Largest constant operand (elements) a spec writes into its attributes.
MAX_CONST = 64


class ConstOperand(OpSpec):
    """``y = x <op> c``: a graph tensor and a constant second operand of its dtype, chosen
    in ``sample`` (attribute ``key``, a nested list broadcasting to x) and written by the
    lowering. For operators whose second operand must stay within bounds a graph tensor
    cannot be kept to (integer divisors that must not be 0, shift amounts below the bit
    width): integer graph inputs are drawn from small ranges holding 0."""

    symbolic_ok = False
    key: ClassVar[str] = "c"

    def draw(self, ctx: Ctx, dtype: str):
        """One value of the constant."""
        raise NotImplementedError

    def extra(self, ctx: Ctx, dtype: str) -> dict:
        """Further attributes (chosen before the constant's values)."""
        return {}

    def sample(self, ctx, ins):
        t = ins[0].dtype
        a = {"dtype": t, **self.extra(ctx, t)}
        a[self.key] = nested(const_shape(ctx, ins[0].shape), lambda: self.draw(ctx, t))
        return a

    def backward(self, ctx, out):
        if (out.dtype,) not in self.dtypes or out.rank not in self.ranks:
            return None
        return [out], self.sample(ctx, [out])

    def requires(self, ins, a):
        return fits_into(np.shape(a[self.key]), ins[0].shape) + [ins[0].dtype == a["dtype"]]

    def infer(self, ins, a):
        return [ins[0]]

    def operand(self, a):
        return np.asarray(a[self.key], dtype=dt.NUMPY[a["dtype"]])

    def const(self, a, x):
        """The constant as a tensor like ``x`` (of x's dtype: float64 when ``undefined``
        recomputes the result wide)."""
        return torch.from_numpy(self.operand(a)).to(x.dtype)

    def onnx(self, b, a, xs, ys):
        b.node(self.onnx_op, [xs[0], b.const(self.operand(a))], ys, **self.onnx_attrs(a, b))

    pointwise = True


class DivInt(ConstOperand):
    """Integer ``Div``: truncating division (rounding toward zero), as the ONNX text says
    and onnx.reference computes. The divisor is a constant operand (a scalar or a tensor
    broadcasting to the dividend) with nonzero values of both signs.

    Not generated: a divisor of 0 (undefined: C++ and LLVM division by zero traps); a
    divisor of -1, since ``INT_MIN / -1`` overflows and traps on x86 (``idiv`` raises
    SIGFPE) in onnxruntime and in compiled code: one such value upstream would crash the
    backend rather than give a result the oracle can excuse. Without -1, ``|x / d| <=
    |x|``: no result overflows. Divisors that are graph tensors are not generated either:
    integer graph inputs are drawn from small ranges holding 0 and the input search cannot
    steer integers away from it."""

    name = "DivInt"
    onnx_op = "Div"
    dtypes = tuple((t,) for t in dt.INTS)
    key = "divisor"

    def draw(self, ctx, t):
        return _int_divisor(ctx, t)

    def torch(self, a, x):
        d = self.const(a, x)
        if x.is_floating_point():  # the wide recomputation for ``undefined``
            return torch.trunc(x / d)
        return torch.div(x, d, rounding_mode="trunc")

    keeps_integers = True
    gaps: ClassVar[tuple] = (
        ("integer divisor 0", "undefined (division by zero traps)"),
        ("integer divisor -1", "INT_MIN / -1 traps (SIGFPE) in onnxruntime and LLVM code instead of giving a "
                               "value the oracle could excuse"),
        ("integer divisor as a graph tensor", "integer graph inputs are drawn around 0; nothing keeps them nonzero"),
    )

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return None
        # trunc(x / d) is monotone in x for each d
        ys = [math.trunc(v / d) for v in (lo, hi) for d in _divisors(a)]
        return [(float(min(ys)), float(max(ys)))]


def const_shape(ctx: Ctx, shape: tuple, cap: int = MAX_CONST) -> tuple:
    """The shape of a constant operand that broadcasts to ``shape``: a scalar, or a suffix
    of it with some dims set to 1, at most ``cap`` elements."""
    if ctx.coin(0.25):
        return ()
    out = list(reduced_partner(ctx, shape))
    while out and math.prod(out) > cap:
        out[max(range(len(out)), key=lambda k: out[k])] = 1
    return tuple(out)


def nested(shape: tuple, draw):
    """A nested list of ``shape`` (a plain value for a scalar) filled by ``draw()``."""
    if not shape:
        return draw()
    return [nested(shape[1:], draw) for _ in range(shape[0])]


def fits_into(cshape: tuple, shape: tuple) -> list:
    """Conditions for a constant of ``cshape`` to broadcast to ``shape`` unchanged."""
    if len(cshape) > len(shape):
        return [False]
    return [c == 1 or c == d for c, d in zip(cshape[::-1], tuple(shape)[::-1])]


def _int_divisor(ctx: Ctx, t: str) -> int:
    """A nonzero divisor of dtype ``t``, never -1 (see DivInt)."""
    hi = 255 if t == dt.UINT8 else 127 if t == dt.INT8 else 1000
    small = ctx.rng.randint(1, 9) if ctx.coin(0.8) else ctx.rng.randint(10, hi)
    if t == dt.UINT8 or ctx.coin(0.6):
        return small
    return -small if small != 1 else ctx.choice((-2, -3, -hi - (t == dt.INT8)))


OPS = [DivInt]
