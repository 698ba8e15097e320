"""Unary element-wise maths: one input, one output of the same shape."""
from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec.base import INF, OpSpec, TensorType


class Unary(OpSpec):
    """Element-wise ``y = f(x)``; ``out_dtype`` None keeps the input dtype."""

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


def abs_bounds(r: tuple) -> tuple:
    lo, hi = r
    if lo >= 0:
        return (lo, hi)
    if hi <= 0:
        return (-hi, -lo)
    return (0.0, max(-lo, hi))


class Abs(Unary):
    can_overflow = True
    out_range = (0.0, INF)
    onnx_op = "Abs"
    types = dt.FLOATS + dt.SIGNED
    fn = torch.abs

    def value_range(self, a, ranges, ins):
        return [abs_bounds(ranges[0])]


class Neg(Unary):
    monotone = -1
    can_overflow = True
    onnx_op = "Neg"
    types = dt.FLOATS + dt.SIGNED
    fn = torch.neg


class Sign(Unary):
    integral_out = True
    out_range = (-1.0, 1.0)
    onnx_op = "Sign"
    jumps = True
    steerable = False
    types = dt.FLOATS + dt.SIGNED
    fn = torch.sign


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

    def input_nonzero(self, a, i):
        return True

    def losses(self, a, x):
        return [L.gt0(x.abs())]


class Sin(Unary):
    out_range = (-1.0, 1.0)
    onnx_op = "Sin"
    fn = torch.sin


class Cos(Unary):
    out_range = (-1.0, 1.0)
    onnx_op = "Cos"
    fn = torch.cos


class Tan(Unary):
    onnx_op = "Tan"
    fn = torch.tan


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
