"""What the binary operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import numpy as np

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import INF_ONLY, UNBOUNDED, Ctx, OpSpec, TensorType


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
        # a partner of the inputs so far broadcast together, so that variadic inputs stay
        # broadcastable with each other, not only with the first
        shapes = [x.shape for x in ins]
        if ctx.symbolic or len(shapes) == 1 or not all_broadcastable(shapes):
            return TensorType(dtype, broadcast_partner(ctx, ins[0].shape))
        return TensorType(dtype, broadcast_partner(ctx, sym.broadcast(*shapes)))

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

    def requires(self, ins, a):
        return sym.broadcastable(*(x.shape for x in ins))

    def infer(self, ins, a):
        shape = sym.broadcast(*(x.shape for x in ins))
        return [TensorType(self.out_dtype or ins[0].dtype, shape)]

    def torch(self, a, *xs):
        return type(self).fn(*xs)

    pointwise = True


class Extremum(Elementwise):
    """Max and Min: the larger (smaller) of any number of broadcast inputs, computed by
    folding ``fn`` over them; ``pick`` (``max`` or ``min``) maps the inputs' bounds to the
    output's. Every output value is one of the inputs', exactly."""

    types = dt.NUMERIC
    pick = None

    def torch(self, a, *xs):
        return fold(type(self).fn, xs)

    keeps_integers = True
    nonfinite = INF_ONLY
    exact_values = True
    siblings = "variadic-extremum"

    def value_range(self, a, ranges, ins):
        pick = type(self).pick
        return [(pick(r[0] for r in ranges), pick(r[1] for r in ranges))]

    def input_span(self, a, i, span, ins):
        return span  # the larger (smaller) of values within the span lies within it


def _divisors(a) -> list:
    return sorted({int(v) for v in np.asarray(a["divisor"]).reshape(-1)})
