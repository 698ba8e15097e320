from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.binary._shared import mul_bounds, reduced_partner


class PRelu(OpSpec):
    """``y = x < 0 ? slope * x : x``; ``slope`` broadcasts unidirectionally to ``x``."""

    onnx_op = "PRelu"
    arity = 2
    dtypes = tuple((t, t) for t in dt.FLOATS + dt.COMMON_INTS)  # int32/int64 from opset 16

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, reduced_partner(ctx, ins[0].shape))

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS + dt.COMMON_INTS:
            return None
        return [out, TensorType(out.dtype, reduced_partner(ctx, out.shape))], {}

    def requires(self, ins, a):
        x, s = ins[0].shape, ins[1].shape
        if len(s) > len(x):
            return [False]
        return [sym.Or(d == 1, d == e) for d, e in zip(s, x[len(x) - len(s):])]

    def infer(self, ins, a):
        return [TensorType(ins[0].dtype, ins[0].shape)]

    def torch(self, a, x, slope):
        return torch.where(x < 0, x * slope, x)

    can_overflow = True

    def value_range(self, a, ranges, ins):
        # x where x >= 0, x * slope where x < 0: the union of both parts' bounds
        (lo, hi), s = ranges[0], ranges[1]
        parts = []
        if hi >= 0:
            parts.append((max(lo, 0.0), hi))
        if lo < 0:
            parts.append(mul_bounds((lo, min(hi, 0.0)), s))
        return [(min(p[0] for p in parts), max(p[1] for p in parts))]


OPS = [PRelu]
