from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec
from dlgate.ops.binary._shared import mul_bounds
from dlgate.ops.transformer._shared import _dims_ok, swish, swish_bounds, _w
from dlgate.ops.transformer.swish import Swish


class SwiGLU(OpSpec):
    """``Swish_alpha(A) * B`` (opset 28): A and B of one shape, no broadcasting."""

    onnx_op = "SwiGLU"
    arity = 2
    min_opset = 28
    dtypes = tuple((t, t) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        return Swish.sample(self, ctx, ins)

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS:
            return None
        return [out, out], self.sample(ctx, [out])

    def requires(self, ins, a):
        return _dims_ok(ins[1].shape, ins[0].shape)

    def infer(self, ins, a):
        return [ins[0]]

    def onnx_attrs(self, a, b):
        return {"alpha": b.opt(a["alpha"], 1.0)}

    def torch(self, a, x, y):
        return (_w(swish(x, a["alpha"])) * _w(y)).to(x.dtype)

    def value_range(self, a, ranges, ins):
        return [mul_bounds(swish_bounds(a["alpha"], ranges[0]), ranges[1])]


OPS = [SwiGLU]
