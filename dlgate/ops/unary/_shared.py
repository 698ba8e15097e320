"""What the unary operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import math

from dlgate import dtypes as dt
from dlgate.ops.base import IEEE, OpSpec, Restricted, TensorType


class Unary(OpSpec):
    """Element-wise ``y = f(x)``: the whole core from ``types`` and ``fn`` (signatures,
    inference, backward insertion, the PyTorch semantics; ONNX's lowering is the default
    single node). ``out_dtype`` None keeps the input dtype. An operator adds the parts it
    needs: ``Increasing``/``Decreasing``/``Stepwise`` (dlgate.ops.values), ``Restricted``
    with its ``domain``, ``safe`` range and ``losses`` (dlgate.ops.domains)."""

    types: tuple = dt.FLOATS
    out_dtype: str | None = None
    fn = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.dtypes = tuple((t,) for t in cls.types)

    def backward(self, ctx, out):
        if self.out_dtype is None:
            return ([out], {}) if out.dtype in self.types else None
        if out.dtype != self.out_dtype:
            return None
        return [TensorType(ctx.choice(self.types), out.shape)], {}

    def infer(self, ins, a):
        return [TensorType(self.out_dtype or ins[0].dtype, ins[0].shape)]

    def torch(self, a, x):
        return type(self).fn(x)

    elementwise = True
    #: IEEE 754 functions: NaN, +/-Inf, overflow and poles have defined results
    nonfinite = IEEE



class UnitInterval(Restricted, Unary):
    """Inverse sine, cosine and hyperbolic tangent: defined on [-1, 1] (Atanh's ends
    excluded), their losses derived from that domain, starting values well inside it."""

    safe = (-0.9, 0.9)
    open_domain = False
    domain = (-1.0, 1.0)

def periodic_bounds(f, r: tuple, peak: float) -> tuple:
    """Bounds of ``f`` (sin or cos: 2*pi-periodic, 1 at ``peak``, -1 at ``peak + pi``, and
    monotone between) over ``r``: its ends' values, widened to +-1 where a peak or trough
    may lie inside (counted in when rounding leaves it in doubt)."""
    lo, hi = r
    if not hi - lo < 2 * math.pi or max(abs(lo), abs(hi)) > 1e15:
        # infinite ends, or magnitudes where float spacing exceeds the period: anything goes
        return (-1.0, 1.0)
    tol = 1e-9 * max(1.0, abs(lo), abs(hi))
    ends = (f(lo), f(hi))

    def holds(c):  # some c + 2*k*pi within [lo - tol, hi + tol]
        return c + 2 * math.pi * math.ceil((lo - tol - c) / (2 * math.pi)) <= hi + tol

    return (-1.0 if holds(peak + math.pi) else min(ends), 1.0 if holds(peak) else max(ends))
