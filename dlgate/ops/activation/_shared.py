"""What the activation operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import numpy as np

from dlgate import dtypes as dt
from dlgate.ops.base import INF_ONLY, Increasing, OpSpec, TensorType, f32


#: Probability a float attribute takes its ONNX default (so the omitted spelling is exercised).
DEFAULT_PROB = 0.3


class Activation(OpSpec):
    """Element-wise ``y = f(x; attrs)``, same type in and out.

    ``params``: ``(name, lo, hi, default)`` per float attribute, sampled uniformly in
    ``[lo, hi]`` (float32-rounded) or set to the (float32) default.
    """

    types: tuple = dt.FLOATS
    params: tuple = ()
    fn = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.dtypes = tuple((t,) for t in cls.types)

    def sample(self, ctx, ins):
        a = {}
        for name, lo, hi, default in self.params:
            v = f32(default) if ctx.coin(DEFAULT_PROB) else ctx.uniform(lo, hi)
            if ins[0].dtype == dt.FLOAT16 and v != f32(default):
                # Representable in float16, so comparing x with it means the same whether a
                # runtime compares in float16 or in float32 (ThresholdedRelu's threshold).
                v = float(np.float16(v))
            a[name] = v
        return a

    def backward(self, ctx, out):
        if out.dtype not in self.types or out.rank not in self.ranks:
            return None
        return [out], self.sample(ctx, [out])

    def infer(self, ins, a):
        return [TensorType(ins[0].dtype, ins[0].shape)]

    def onnx_attrs(self, a, b):
        return {name: b.opt(a[name], f32(default)) for name, _, _, default in self.params}

    def torch(self, a, x):
        return type(self).fn(x)

    elementwise = True


class Exponential(Increasing, Activation):
    """Elu and Celu: x above 0, an exponential of slope ``alpha`` below, computed by ``fn``
    with ``alpha``; +/-inf give +inf and -alpha, NaN is left open."""

    params = (("alpha", 0.1, 3.0, 1.0),)

    def torch(self, a, x):
        return type(self).fn(x, alpha=a["alpha"])

    nonfinite = INF_ONLY


class AxisActivation(Activation):
    """Normalization along one axis (opset 13 semantics); ``axis`` defaults to -1."""

    ranks = (1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        return {"axis": ctx.axis(ins[0].rank)}

    def onnx_attrs(self, a, b):
        return {"axis": b.opt(a["axis"], -1)}

    elementwise = False
