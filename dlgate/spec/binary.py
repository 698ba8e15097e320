"""Binary (and variadic) element-wise maths with NumPy-style multidirectional broadcasting.

Variadic operators have one spec per input count (a spec's arity is fixed): Max and Min
(two inputs), Max4 and Min4, Sum and Mean (three), Sum5 and Mean5."""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec import sym
from dlgate.spec.base import IEEE, INF, INF_ONLY, UNBOUNDED, Ctx, OpSpec, TensorType


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


def all_broadcastable(shapes) -> bool:
    """Whether concrete shapes broadcast together (False if any dim is symbolic)."""
    if any(sym.is_sym(d) for sh in shapes for d in sh):
        return False
    return all(bool(c) for c in sym.broadcastable(*shapes))


def fold(fn, xs):
    """``fn`` applied left to right over the inputs (a variadic operator from a binary one)."""
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    return out


def reduced_partner(ctx: Ctx, shape: tuple) -> tuple:
    """A shape that broadcasts *to* ``shape`` (drops leading dims, sets dims to 1)."""
    r = len(shape)
    r2 = ctx.rng.randint(max(0, r - 2), r) if ctx.coin(0.5) else r
    return tuple(1 if ctx.coin(0.3) else d for d in shape[r - r2:])


def _finite_or_unbounded(lo: float, hi: float) -> tuple:
    return UNBOUNDED if lo != lo or hi != hi else (lo, hi)  # NaN from inf - inf, 0 * inf


def add_bounds(rs) -> tuple:
    return _finite_or_unbounded(sum(r[0] for r in rs), sum(r[1] for r in rs))


def mul0(x: float, y: float) -> float:
    """x * y with 0 * inf = 0: an infinite end is never reached by a (finite) value, so a
    factor that is 0 keeps the product 0."""
    return 0.0 if x == 0 or y == 0 else x * y


def mul_bounds(r, q) -> tuple:
    corners = [mul0(x, y) for x in r for y in q]
    return (min(corners), max(corners))


def recip_bounds(q) -> tuple:
    """Bounds on 1 / y for the nonzero y within ``q`` (1 / inf = 0)."""
    lo, hi = q
    if lo > 0 or hi < 0:
        return (1 / hi, 1 / lo)  # 1/y falls on each side of 0
    if lo == 0 < hi:
        return (1 / hi, INF)  # y > 0
    if lo < 0 == hi:
        return (-INF, 1 / lo)  # y < 0
    return UNBOUNDED


def _pow(x: float, y: float) -> float:
    """x ** y for x >= 0 and its limits at the ends (0 ** -1 = inf, inf ** 0 = 1)."""
    if x == 0:
        return 1.0 if y == 0 else 0.0 if y > 0 else INF
    with np.errstate(all="ignore"):
        return float(np.power(np.float64(x), np.float64(y)))


#: Largest divisor ``Div.input_span`` draws (divisors within [1, DIV_SPREAD]).
DIV_SPREAD = 1.5


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


class Elementwise(OpSpec):
    """``y = f(x1, ..., xn)`` over broadcast inputs of one dtype."""

    arity = 2
    pointwise = True
    types: tuple = dt.COMMON
    out_dtype: str | None = None
    fn = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "types" in cls.__dict__ or "arity" in cls.__dict__ or not cls.dtypes:
            cls.dtypes = tuple((t,) * cls.arity for t in cls.types)

    def input_type(self, ctx, i, ins, a, dtype):
        # a partner of the inputs so far broadcast together, so that variadic inputs stay
        # broadcastable with each other, not only with the first
        shapes = [x.shape for x in ins]
        if ctx.symbolic or len(shapes) == 1 or not all_broadcastable(shapes):
            return TensorType(dtype, broadcast_partner(ctx, ins[0].shape))
        return TensorType(dtype, broadcast_partner(ctx, sym.broadcast(*shapes)))

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
    keeps_integers = True

    def value_range(self, a, ranges, ins):
        return [add_bounds(ranges)]

    can_overflow = True
    nonfinite = IEEE
    onnx_op = "Add"
    cancels = True
    types = dt.NUMERIC
    fn = torch.add

    def input_span(self, a, i, span, ins):
        return (span[0] / 2, span[1] / 2)  # two terms, each within half the span


class Sub(Elementwise):
    keeps_integers = True

    def self_range(self, a, r):
        return (0.0, 0.0)

    def value_range(self, a, ranges, ins):
        (lo, hi), (qlo, qhi) = ranges
        return [_finite_or_unbounded(lo - qhi, hi - qlo)]

    can_overflow = True
    nonfinite = IEEE
    onnx_op = "Sub"
    cancels = True
    types = dt.NUMERIC
    fn = torch.sub

    def input_span(self, a, i, span, ins):
        # x within half the span minus y within half its mirror image
        return (span[0] / 2, span[1] / 2) if i == 0 else (-span[1] / 2, -span[0] / 2)


class Mul(Elementwise):
    keeps_integers = True

    def value_range(self, a, ranges, ins):
        return [mul_bounds(*ranges)]

    def exact(self, a, exacts, ins):
        return 0.0 if 0 in exacts else None  # 0 times (a finite) anything

    can_overflow = True
    nonfinite = IEEE
    onnx_op = "Mul"
    types = dt.NUMERIC
    fn = torch.mul

    def input_span(self, a, i, span, ins):
        return sqrt_span(span, i)


class Div(Elementwise):
    """Floating-point only: integer division by zero is undefined behaviour."""

    nonfinite = IEEE
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

    def value_range(self, a, ranges, ins):
        return [mul_bounds(ranges[0], recip_bounds(ranges[1]))]  # x * (1 / y), y != 0

    def exact(self, a, exacts, ins):
        return 0.0 if exacts[0] == 0 else None  # 0 / y and fmod(0, y) are 0 for y != 0

    def losses(self, a, x, y):
        return [L.gt0(y.abs())]

    def input_span(self, a, i, span, ins):
        # y within [1, q] and x within [q lo, hi] (a positive span) keep x / y inside it;
        # mirrored for a negative span; a span holding 0 needs only x inside it
        lo, hi = span
        q = min(DIV_SPREAD, hi / lo) if lo > 0 else min(DIV_SPREAD, lo / hi) if hi < 0 else DIV_SPREAD
        if i == 1:
            return (1.0, q)
        return (q * lo, hi) if lo > 0 else (lo, q * hi) if hi < 0 else span


class Mod(Div):
    """Floats, divisor a graph tensor (see DivInt and ModInt for integers). ``fmod=1`` (C
    fmod: the result takes the dividend's sign) at every opset; from opset 28 also
    ``fmod=0`` (``x - floor(x / y) * y``: the result takes the divisor's sign), which
    earlier opsets leave undefined for floats (onnxruntime refuses it: "fmod attribute must
    be true for floating point types before opset 28"). Without the attribute in ``a``
    (instances drawn before opset 28) ``fmod`` is 1."""
    keeps_integers = True

    nonfinite = frozenset()  # ONNX names C's fmod, not its special values
    onnx_op = "Mod"
    jumps = True
    gaps: ClassVar[tuple] = (
        ("float fmod=0 before opset 28", "Mod-13 constrains fmod=0 to integer types; onnxruntime refuses it"),
    )

    def sample(self, ctx, ins):
        return {"fmod": int(ctx.coin())} if ctx.opset >= 28 else {}

    def backward(self, ctx, out):
        res = super().backward(ctx, out)
        return None if res is None else (res[0], self.sample(ctx, res[0]))

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

    def onnx_attrs(self, a, b):
        fmod = a.get("fmod", 1)
        return {"fmod": fmod if fmod else b.opt(0, 0)}

    def torch(self, a, x, y):
        # torch.remainder is Python's %: the divisor's sign, computed from fmod as NumPy
        # (onnx.reference) does, not with the rounding of the literal formula
        return torch.fmod(x, y) if a.get("fmod", 1) else torch.remainder(x, y)

    def input_span(self, a, i, span, ins):
        # fmod(x, y) is x when |x| < |y|; so is x mod y for 0 <= x < y
        m = max(abs(span[0]), abs(span[1]))
        if not a.get("fmod", 1) and span[0] < 0:
            return None
        return span if i == 0 else (m + 1.0, m + 2.0)


# -- integer division and modulo, by constant divisors ------------------------------------------
#: Largest constant operand (elements) a spec writes into its attributes.
MAX_CONST = 64


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


class ConstOperand(OpSpec):
    """``y = x <op> c``: a graph tensor and a constant second operand of its dtype, chosen
    in ``sample`` (attribute ``key``, a nested list broadcasting to x) and written by the
    lowering. For operators whose second operand must stay within bounds a graph tensor
    cannot be kept to (integer divisors that must not be 0, shift amounts below the bit
    width): integer graph inputs are drawn from small ranges holding 0."""

    key: ClassVar[str] = "c"
    symbolic_ok = False
    pointwise = True

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

    def requires(self, ins, a):
        return fits_into(np.shape(a[self.key]), ins[0].shape) + [ins[0].dtype == a["dtype"]]

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if (out.dtype,) not in self.dtypes or out.rank not in self.ranks:
            return None
        return [out], self.sample(ctx, [out])

    def operand(self, a):
        return np.asarray(a[self.key], dtype=dt.NUMPY[a["dtype"]])

    def const(self, a, x):
        """The constant as a tensor like ``x`` (of x's dtype: float64 when ``undefined``
        recomputes the result wide)."""
        return torch.from_numpy(self.operand(a)).to(x.dtype)

    def onnx(self, b, a, xs, ys):
        b.node(self.onnx_op, [xs[0], b.const(self.operand(a))], ys, **self.onnx_attrs(a, b))


def _int_divisor(ctx: Ctx, t: str) -> int:
    """A nonzero divisor of dtype ``t``, never -1 (see DivInt)."""
    hi = 255 if t == dt.UINT8 else 127 if t == dt.INT8 else 1000
    small = ctx.rng.randint(1, 9) if ctx.coin(0.8) else ctx.rng.randint(10, hi)
    if t == dt.UINT8 or ctx.coin(0.6):
        return small
    return -small if small != 1 else ctx.choice((-2, -3, -hi - (t == dt.INT8)))


def _divisors(a) -> list:
    return sorted({int(v) for v in np.asarray(a["divisor"]).reshape(-1)})


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
    key = "divisor"
    dtypes = tuple((t,) for t in dt.INTS)
    keeps_integers = True
    gaps: ClassVar[tuple] = (
        ("integer divisor 0", "undefined (division by zero traps)"),
        ("integer divisor -1", "INT_MIN / -1 traps (SIGFPE) in onnxruntime and LLVM code instead of giving a "
                               "value the oracle could excuse"),
        ("integer divisor as a graph tensor", "integer graph inputs are drawn around 0; nothing keeps them nonzero"),
    )

    def draw(self, ctx, t):
        return _int_divisor(ctx, t)

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return None
        # trunc(x / d) is monotone in x for each d
        ys = [math.trunc(v / d) for v in (lo, hi) for d in _divisors(a)]
        return [(float(min(ys)), float(max(ys)))]

    def torch(self, a, x):
        d = self.const(a, x)
        if x.is_floating_point():  # the wide recomputation for ``undefined``
            return torch.trunc(x / d)
        return torch.div(x, d, rounding_mode="trunc")


class ModInt(DivInt):
    """Integer ``Mod`` by a constant divisor (see DivInt for the divisors). ``fmod=0``
    (the default): ``x - floor(x / y) * y``, the divisor's sign (Python's ``%``);
    ``fmod=1`` from opset 28: ``x - trunc(x / y) * y``, the dividend's sign (C's ``%``).
    Mod-13 says ``fmod=1`` constrains T to floating-point types, so integers take it only
    from opset 28, which defines it."""

    name = "ModInt"
    onnx_op = "Mod"
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

    def onnx_attrs(self, a, b):
        return {"fmod": a["fmod"] if a["fmod"] else b.opt(0, 0)}

    def torch(self, a, x):
        d = self.const(a, x)
        return torch.fmod(x, d) if a["fmod"] else torch.remainder(x, d)


class Pow(Elementwise):
    onnx_op = "Pow"
    types = dt.FLOATS
    restricted = True
    fn = torch.pow

    def input_range(self, a, i):
        return (0.5, 2.0) if i == 0 else (-2.0, 2.0)

    def input_domain(self, a, i):
        # the base must be positive (see losses): a negative one is NaN for most
        # exponents, and 0 ** y is inf for negative y
        return (0.0, INF) if i == 0 else None

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


class Max(Elementwise):
    keeps_integers = True
    nonfinite = INF_ONLY
    onnx_op = "Max"
    exact_values = True
    siblings = "variadic-extremum"
    types = dt.NUMERIC
    fn = torch.maximum

    def torch(self, a, *xs):
        return fold(torch.maximum, xs)

    def value_range(self, a, ranges, ins):
        return [(max(r[0] for r in ranges), max(r[1] for r in ranges))]

    def input_span(self, a, i, span, ins):
        return span  # the larger of two values within the span


class Min(Elementwise):
    keeps_integers = True
    nonfinite = INF_ONLY
    onnx_op = "Min"
    exact_values = True
    siblings = "variadic-extremum"
    types = dt.NUMERIC
    fn = torch.minimum

    def torch(self, a, *xs):
        return fold(torch.minimum, xs)

    def value_range(self, a, ranges, ins):
        return [(min(r[0] for r in ranges), min(r[1] for r in ranges))]

    def input_span(self, a, i, span, ins):
        return span


class Sum(Elementwise):
    """Variadic: three inputs."""
    keeps_integers = True

    can_overflow = True
    onnx_op = "Sum"
    cancels = True
    arity = 3
    types = dt.FLOATS

    def value_range(self, a, ranges, ins):
        return [add_bounds(ranges)]

    def torch(self, a, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out

    def input_span(self, a, i, span, ins):
        return (span[0] / len(ins), span[1] / len(ins))


class Mean(Sum):
    """Variadic: three inputs."""

    onnx_op = "Mean"
    keeps_range = True
    cancels = False  # a mean keeps its operands' range; the oracle has not needed more for it

    def value_range(self, a, ranges, ins):
        lo, hi = add_bounds(ranges)
        return [(lo / len(ranges), hi / len(ranges))]  # the sum's bounds over n

    def torch(self, a, *xs):
        return super().torch(a, *xs) / len(xs)

    def reference_defect(self, a, ins, opset):
        if tuple(ins[0].shape) != tuple(sym.broadcast(*(x.shape for x in ins))):
            return "onnx.reference's Mean adds in place into its first input, so it cannot broadcast it"
        return None

    def input_span(self, a, i, span, ins):
        return span  # a mean of values within the span


class Max4(Max):
    """Variadic Max with four broadcast inputs."""
    name = "Max4"
    arity = 4


class Min4(Min):
    """Variadic Min with four broadcast inputs."""
    name = "Min4"
    arity = 4


class Sum5(Sum):
    """Variadic Sum with five broadcast inputs."""
    name = "Sum5"
    arity = 5


class Mean5(Mean):
    """Variadic Mean with five broadcast inputs."""
    name = "Mean5"
    arity = 5


OPS = [Add, Sub, Mul, Div, Mod, DivInt, ModInt, Pow, Max, Min, Sum, Mean, Max4, Min4, Sum5, Mean5]
