from __future__ import annotations

import math
from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import INF, OpSpec, TensorType
from dlgate.ops.quant._shared import F32, U8, _clamp, _round


# -- DynamicQuantizeLinear --------------------------------------------------------------------
class DynamicQuantizeLinear(OpSpec):
    """``y_scale = (max(0, max x) - min(0, min x)) / 255``, ``y_zero_point =
    round(saturate(0 - min(0, min x) / y_scale))``, ``y = saturate(round(x / y_scale) +
    y_zero_point)``, everything in float32 in that order, rounding half to even; outputs
    y (uint8), y_scale (float32 scalar) and y_zero_point (uint8 scalar). An all-zero x
    makes y_scale 0 and the quantization a division by zero: undefined (onnxruntime and
    onnx.reference then use a scale of 1, TVM divides by 0)."""

    onnx_op = "DynamicQuantizeLinear"
    n_outputs = 3
    dtypes = ((F32,),)

    def backward(self, ctx, out):
        if out.dtype != U8 or dt.FLOAT32 not in ctx.dtypes:
            return None
        return [TensorType(F32, out.shape)], {}

    def infer(self, ins, a):
        return [TensorType(U8, ins[0].shape), TensorType(F32, ()), TensorType(U8, ())]

    @staticmethod
    def params(x):
        """(y_scale, y_zero_point) as float32 tensors, ONNX's order of operations."""
        zero = torch.zeros((), dtype=torch.float32)
        mx = torch.maximum(zero, x.max())
        mn = torch.minimum(zero, x.min())
        scale = (mx - mn) / torch.tensor(255.0, dtype=torch.float32)
        zp = _round(_clamp(zero - mn / scale, 0.0, 255.0))
        return scale, zp

    def torch(self, a, x):
        scale, zp = self.params(x)
        q = _clamp(_round(x / scale) + zp, 0.0, 255.0)
        return q.to(torch.uint8), scale, zp.to(torch.uint8)

    jumps = True
    gaps: ClassVar[tuple] = (("int8 outputs", "ONNX defines uint8 only"),)

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        span = max(0.0, hi) - min(0.0, lo)
        return [(0.0, 255.0), (0.0, span / 255.0 if math.isfinite(span) else INF), (0.0, 255.0)]

    def undefined(self, a, ins, out_types):
        x = ins[0]
        if not bool(torch.isfinite(x).all()):
            return "NaN or Inf in x"
        scale, _ = self.params(x.float())
        if float(scale) == 0.0:
            return "every element is 0: y_scale is 0 and y divides by it"
        if not math.isfinite(float(scale)):
            return "max(x) - min(x) overflows float32: y_scale is Inf"
        return None


OPS = [DynamicQuantizeLinear]
