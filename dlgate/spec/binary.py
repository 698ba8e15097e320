"""Binary (and variadic) element-wise maths with NumPy-style multidirectional broadcasting."""
from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec import sym
from dlgate.spec.base import UNBOUNDED, Ctx, OpSpec, TensorType


def broadcast_partner(ctx: Ctx, shape: tuple) -> tuple:
    """A shape that broadcasts with ``shape``: a suffix of it, some dims set to 1, size-1
    dims sometimes widened, and sometimes new leading dims."""
    r = len(shape)
    if ctx.symbolic or ctx.coin(0.35):
        return tuple(shape)
    lo, hi = max(0, r - 2), min(r + 1, ctx.limits.max_rank)
    r2 = ctx.rng.randint(lo, hi)
    out = []
    for k in range(r2, 0, -1):
        if k > r:
            out.append(ctx.choice((1, 2, 3)))
        else:
            d = shape[-k]
            if d == 1 and ctx.coin(0.2):
                out.append(ctx.dim(8))
            elif ctx.coin(0.25):
                out.append(1)
            else:
                out.append(d)
    return tuple(out)


def reduced_partner(ctx: Ctx, shape: tuple) -> tuple:
    """A shape that broadcasts *to* ``shape`` (drops leading dims, sets dims to 1)."""
    r = len(shape)
    r2 = ctx.rng.randint(max(0, r - 2), r) if ctx.coin(0.5) else r
    return tuple(1 if ctx.coin(0.3) else d for d in shape[r - r2:])


def _finite_or_unbounded(lo: float, hi: float) -> tuple:
    return UNBOUNDED if lo != lo or hi != hi else (lo, hi)  # NaN from inf - inf, 0 * inf


def add_bounds(rs) -> tuple:
    return _finite_or_unbounded(sum(r[0] for r in rs), sum(r[1] for r in rs))


def mul_bounds(r, q) -> tuple:
    corners = [x * y for x in r for y in q]
    if any(c != c for c in corners):
        return UNBOUNDED
    return (min(corners), max(corners))


class Elementwise(OpSpec):
    """``y = f(x1, ..., xn)`` over broadcast inputs of one dtype."""

    arity = 2
    types: tuple = dt.COMMON
    out_dtype: str | None = None
    fn = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "types" in cls.__dict__ or "arity" in cls.__dict__ or not cls.dtypes:
            cls.dtypes = tuple((t,) * cls.arity for t in cls.types)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, broadcast_partner(ctx, ins[0].shape))

    def requires(self, ins, a):
        return sym.broadcastable(*(x.shape for x in ins))

    def infer(self, ins, a):
        shape = sym.broadcast(*(x.shape for x in ins))
        return [TensorType(self.out_dtype or ins[0].dtype, shape)]

    def backward(self, ctx, out):
        if self.out_dtype is not None and out.dtype != self.out_dtype:
            return None
        sigs = [s for s in self.dtypes if self.out_dtype is not None or s[0] == out.dtype]
        if not sigs:
            return None
        sig = ctx.choice(sigs)
        full = ctx.rng.randrange(self.arity)
        shapes = [out.shape if i == full else reduced_partner(ctx, out.shape) for i in range(self.arity)]
        return [TensorType(t, s) for t, s in zip(sig, shapes)], {}

    def torch(self, a, *xs):
        return type(self).fn(*xs)


class Add(Elementwise):
    def value_range(self, a, ranges, ins):
        return [add_bounds(ranges)]

    can_overflow = True
    onnx_op = "Add"
    types = dt.NUMERIC
    fn = torch.add


class Sub(Elementwise):
    def self_range(self, a, r):
        return (0.0, 0.0)

    def value_range(self, a, ranges, ins):
        (lo, hi), (qlo, qhi) = ranges
        return [_finite_or_unbounded(lo - qhi, hi - qlo)]

    can_overflow = True
    onnx_op = "Sub"
    types = dt.NUMERIC
    fn = torch.sub


class Mul(Elementwise):
    def value_range(self, a, ranges, ins):
        return [mul_bounds(*ranges)]

    can_overflow = True
    onnx_op = "Mul"
    types = dt.NUMERIC
    fn = torch.mul


class Div(Elementwise):
    """Floating-point only: integer division by zero is undefined behaviour."""

    onnx_op = "Div"
    types = dt.FLOATS
    restricted = True
    fn = torch.div

    def input_range(self, a, i):
        return (0.5, 4.0) if i == 1 else None

    def input_nonzero(self, a, i):
        return i == 1

    def self_range(self, a, r):
        return (1.0, 1.0)  # x / x (x is never 0 in a valid run)

    def losses(self, a, x, y):
        return [L.gt0(y.abs())]


class Mod(Div):
    """C fmod semantics (``fmod=1``); floats only, for the reason given for Div."""

    onnx_op = "Mod"
    jumps = True

    def self_range(self, a, r):
        return (0.0, 0.0)  # fmod(x, x)

    def onnx_attrs(self, a, b):
        return {"fmod": 1}

    def torch(self, a, x, y):
        return torch.fmod(x, y)


class Pow(Elementwise):
    onnx_op = "Pow"
    types = dt.FLOATS
    restricted = True
    fn = torch.pow

    def input_range(self, a, i):
        return (0.5, 2.0) if i == 0 else (-2.0, 2.0)

    def losses(self, a, x, y):
        xd, yd = x.double(), y.double()
        return [L.gt0(xd), L.le0(yd * torch.log(xd.clamp(min=1e-40)) - L.log_max(x))]


class Max(Elementwise):
    onnx_op = "Max"
    types = dt.NUMERIC
    fn = torch.maximum

    def value_range(self, a, ranges, ins):
        return [(max(r[0] for r in ranges), max(r[1] for r in ranges))]


class Min(Elementwise):
    onnx_op = "Min"
    types = dt.NUMERIC
    fn = torch.minimum

    def value_range(self, a, ranges, ins):
        return [(min(r[0] for r in ranges), min(r[1] for r in ranges))]


class Sum(Elementwise):
    """Variadic: three inputs."""

    can_overflow = True
    onnx_op = "Sum"
    arity = 3
    types = dt.FLOATS

    def value_range(self, a, ranges, ins):
        return [add_bounds(ranges)]

    def torch(self, a, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out


class Mean(Sum):
    """Variadic: three inputs."""

    onnx_op = "Mean"
    keeps_range = True

    def value_range(self, a, ranges, ins):
        return OpSpec.value_range(self, a, ranges, ins)

    def torch(self, a, *xs):
        return super().torch(a, *xs) / len(xs)


OPS = [Add, Sub, Mul, Div, Mod, Pow, Max, Min, Sum, Mean]
