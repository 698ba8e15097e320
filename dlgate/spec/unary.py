"""Unary element-wise maths: one input, one output of the same shape."""
from __future__ import annotations

import math

import torch

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec.base import IEEE, INF, INF_ONLY, OpSpec, TensorType, abs_bounds


class Unary(OpSpec):
    """Element-wise ``y = f(x)``; ``out_dtype`` None keeps the input dtype."""

    elementwise = True
    #: IEEE 754 functions: NaN, +/-Inf, overflow and poles have defined results
    nonfinite = IEEE
    types: tuple = dt.FLOATS
    out_dtype: str | None = None
    fn = None
    safe: tuple | None = None  # a range inside the domain, for starting values

    def input_range(self, a, i):
        return self.safe

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.dtypes = tuple((t,) for t in cls.types)

    def infer(self, ins, a):
        return [TensorType(self.out_dtype or ins[0].dtype, ins[0].shape)]

    def backward(self, ctx, out):
        if self.out_dtype is None:
            return ([out], {}) if out.dtype in self.types else None
        if out.dtype != self.out_dtype:
            return None
        return [TensorType(ctx.choice(self.types), out.shape)], {}

    def torch(self, a, x):
        return type(self).fn(x)


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


class Abs(Unary):
    keeps_integers = True
    valley = (0.0, 0.0, 0.0)  # for input_span: inverted on its rising side
    can_overflow = True
    out_range = (0.0, INF)
    onnx_op = "Abs"
    exact_values = True
    types = dt.FLOATS + dt.SIGNED + (dt.UINT8,)  # uint8: the identity, as ONNX defines it
    fn = torch.abs

    def value_range(self, a, ranges, ins):
        return [abs_bounds(ranges[0])]

    def preimage(self, a, r):
        return (-r[1], r[1])  # |x| <= hi


class Neg(Unary):
    keeps_integers = True
    monotone = -1
    can_overflow = True
    onnx_op = "Neg"
    exact_values = True
    types = dt.FLOATS + dt.SIGNED
    fn = torch.neg


class Sign(Unary):
    integral_out = True
    out_range = (-1.0, 1.0)
    nonfinite = INF_ONLY
    onnx_op = "Sign"
    jumps = True
    steerable = False
    types = dt.FLOATS + dt.SIGNED + (dt.UINT8,)  # uint8: 0 or 1
    fn = torch.sign

    #: Positive (negative) bounds closer to 0 than this may still hold values that
    #: underflowed to 0 (Sigmoid of -100 in float32), so they only bound the sign by 0.
    TINY = 1e-4

    def value_range(self, a, ranges, ins):
        # non-decreasing: the input's bounds give the output's
        lo, hi = ranges[0]
        return [(1.0 if lo > self.TINY else 0.0 if lo >= 0 else -1.0,
                 -1.0 if hi < -self.TINY else 0.0 if hi <= 0 else 1.0)]

    def anchor(self, a, anchors, ins):
        # min <= x <= max gives sign(min) <= sign(x) <= sign(max)
        x = anchors[0]
        if x is None or (0 < abs(x) <= self.TINY):
            return None
        return float(math.copysign(1.0, x)) if x else 0.0


class Exp(Unary):
    monotone = 1
    out_range = (0.0, INF)
    onnx_op = "Exp"
    restricted = True
    fn = torch.exp

    def losses(self, a, x):
        return [L.le0(x - L.log_max(x))]


class Log(Unary):
    monotone = 1
    domain = (0.0, INF)
    onnx_op = "Log"
    safe = (0.5, 4.0)
    restricted = True
    fn = torch.log

    def losses(self, a, x):
        return [L.gt0(x)]


class Sqrt(Unary):
    open_domain = False
    monotone = 1
    domain = (0.0, INF)
    out_range = (0.0, INF)
    onnx_op = "Sqrt"
    safe = (0.5, 4.0)
    restricted = True
    fn = torch.sqrt

    def losses(self, a, x):
        return [L.ge0(x)]


class Reciprocal(Unary):
    onnx_op = "Reciprocal"
    safe = (0.5, 4.0)
    restricted = True
    fn = torch.reciprocal

    def value_range(self, a, ranges, ins):
        # decreasing on each side of 0; valid runs hold no 0, so a 0 end only tells the sign
        lo, hi = ranges[0]
        if lo >= 0 and hi > 0:
            return [(1.0 / hi, 1.0 / lo if lo > 0 else INF)]
        if hi <= 0 and lo < 0:
            return [(1.0 / hi if hi < 0 else -INF, 1.0 / lo)]
        return None

    def input_nonzero(self, a, i):
        return True

    def losses(self, a, x):
        return [L.gt0(x.abs())]

    def input_span(self, a, i, span, ins):
        lo, hi = span  # 1/x is decreasing on each side of 0
        if lo > 0 or hi < 0:
            return (1.0 / hi, 1.0 / lo)
        # a span around 0: its upper half, [hi / 2, hi], from x in [1 / hi, 2 / hi]
        return (1.0 / hi, 2.0 / hi) if hi > 0 else (2.0 / lo, 1.0 / lo) if lo < 0 else None


class Sin(Unary):
    out_range = (-1.0, 1.0)
    onnx_op = "Sin"
    fn = torch.sin

    def value_range(self, a, ranges, ins):
        return [periodic_bounds(math.sin, ranges[0], math.pi / 2)]

    def input_span(self, a, i, span, ins):
        # on [-pi/2, pi/2] sin rises from -1 to 1: invert there
        lo, hi = max(span[0], -1.0), min(span[1], 1.0)
        return (math.asin(lo), math.asin(hi)) if lo <= hi else None


class Cos(Unary):
    out_range = (-1.0, 1.0)
    onnx_op = "Cos"
    fn = torch.cos

    def value_range(self, a, ranges, ins):
        return [periodic_bounds(math.cos, ranges[0], 0.0)]

    def input_span(self, a, i, span, ins):
        # on [0, pi] cos falls from 1 to -1: invert there
        lo, hi = max(span[0], -1.0), min(span[1], 1.0)
        return (math.acos(hi), math.acos(lo)) if lo <= hi else None


class Tan(Unary):
    onnx_op = "Tan"
    poles = (math.pi / 2, math.pi)
    fn = torch.tan

    def value_range(self, a, ranges, ins):
        # increasing within a branch (k*pi - pi/2, k*pi + pi/2); unbounded across a pole
        lo, hi = ranges[0]
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return None
        k = math.floor(lo / math.pi + 0.5)
        tol = 1e-9 * max(1.0, abs(lo), abs(hi))  # poles counted in when rounding leaves doubt
        if (k - 0.5) * math.pi + tol < lo and hi < (k + 0.5) * math.pi - tol:
            return [(math.tan(lo), math.tan(hi))]
        return None


class Asin(Unary):
    open_domain = False
    monotone = 1
    domain = (-1.0, 1.0)
    out_range = (-1.6, 1.6)
    onnx_op = "Asin"
    safe = (-0.9, 0.9)
    restricted = True
    fn = torch.asin

    def losses(self, a, x):
        return [L.le0(x.abs() - 1)]


class Acos(Unary):
    open_domain = False
    monotone = -1
    domain = (-1.0, 1.0)
    out_range = (0.0, 3.2)
    onnx_op = "Acos"
    safe = (-0.9, 0.9)
    restricted = True
    fn = torch.acos

    def losses(self, a, x):
        return [L.le0(x.abs() - 1)]


class Atan(Unary):
    monotone = 1
    out_range = (-1.6, 1.6)
    onnx_op = "Atan"
    fn = torch.atan


class Sinh(Unary):
    monotone = 1
    onnx_op = "Sinh"
    restricted = True
    fn = torch.sinh

    def losses(self, a, x):
        return [L.le0(x.abs() - L.log_max(x))]


class Cosh(Unary):
    valley = (0.0, 0.0, 1.0)  # for input_span: inverted on its rising side
    out_range = (1.0, INF)
    onnx_op = "Cosh"
    restricted = True
    fn = torch.cosh

    def value_range(self, a, ranges, ins):
        lo, hi = abs_bounds(ranges[0])
        return [(max(1.0, float(torch.cosh(torch.tensor(lo, dtype=torch.float64)))),
                 float(torch.cosh(torch.tensor(hi, dtype=torch.float64))))]

    def losses(self, a, x):
        return [L.le0(x.abs() - L.log_max(x))]

    def preimage(self, a, r):
        m = math.acosh(r[1]) if r[1] >= 1 else -1.0  # |x| <= acosh(hi); none below 1
        return (-m, m) if math.isfinite(m) else None


class Asinh(Unary):
    monotone = 1
    onnx_op = "Asinh"
    fn = torch.asinh


class Acosh(Unary):
    open_domain = False
    monotone = 1
    domain = (1.0, INF)
    onnx_op = "Acosh"
    safe = (1.1, 4.0)
    restricted = True
    fn = torch.acosh

    def losses(self, a, x):
        return [L.ge0(x - 1)]


class Atanh(Unary):
    monotone = 1
    domain = (-1.0, 1.0)
    onnx_op = "Atanh"
    safe = (-0.9, 0.9)
    restricted = True
    fn = torch.atanh

    def losses(self, a, x):
        return [L.lt0(x.abs() - 1)]


class Floor(Unary):
    integral_out = True
    monotone = 1
    onnx_op = "Floor"
    jumps = True
    fn = torch.floor

    def torch(self, a, x):
        return L.proxy_floor(x) if x.requires_grad else torch.floor(x)


class Ceil(Unary):
    integral_out = True
    monotone = 1
    onnx_op = "Ceil"
    jumps = True
    fn = torch.ceil

    def torch(self, a, x):
        return L.proxy_ceil(x) if x.requires_grad else torch.ceil(x)


class Round(Unary):
    integral_out = True
    monotone = 1
    onnx_op = "Round"  # half to even in both ONNX and PyTorch
    jumps = True
    fn = torch.round

    def torch(self, a, x):
        return L.proxy_round(x) if x.requires_grad else torch.round(x)


class Erf(Unary):
    monotone = 1
    out_range = (-1.0, 1.0)
    onnx_op = "Erf"
    fn = torch.erf

    def reference_defect(self, a, ins, opset):
        if ins and ins[0].dtype == dt.FLOAT64:
            return "onnx.reference's Erf returns float32 values (np.vectorize(math.erf, otypes=['f']))"
        return None


class IsNaN(Unary):
    onnx_op = "IsNaN"
    out_dtype = dt.BOOL
    fn = torch.isnan


class IsInf(Unary):
    onnx_op = "IsInf"
    out_dtype = dt.BOOL
    min_opset = 20  # float16 support arrived in opset 20
    fn = torch.isinf


OPS = [Abs, Neg, Sign, Exp, Log, Sqrt, Reciprocal, Sin, Cos, Tan, Asin, Acos, Atan,
       Sinh, Cosh, Asinh, Acosh, Atanh, Floor, Ceil, Round, Erf, IsNaN, IsInf]
