from __future__ import annotations

from typing import ClassVar

import numpy as np

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, f32
from dlgate.ops.transformer._shared import swish, swish_bounds


class Swish(OpSpec):
    """``x * sigmoid(alpha * x)`` (opset 24); ``alpha`` > 0, float16-representable for
    float16 inputs (the function body casts it to X's type)."""

    onnx_op = "Swish"
    min_opset = 24
    dtypes = tuple((t,) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        al = 1.0 if ctx.coin(0.4) else ctx.choice((1.702, ctx.uniform(0.1, 3.0)))
        if ins[0].dtype == dt.FLOAT16:
            al = float(np.float16(al))
        return {"alpha": f32(al)}

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS:
            return None
        return [out], self.sample(ctx, [out])

    def infer(self, ins, a):
        return [ins[0]]

    def onnx_attrs(self, a, b):
        return {"alpha": b.opt(a["alpha"], 1.0)}

    def torch(self, a, x):
        return swish(x, a.get("alpha", 1.0))

    elementwise = True
    gaps: ClassVar[tuple] = (("alpha <= 0", "a mirrored curve; not a regime exporters write"),)

    def value_range(self, a, ranges, ins):
        return [swish_bounds(a.get("alpha", 1.0), ranges[0])]


OPS = [Swish]
