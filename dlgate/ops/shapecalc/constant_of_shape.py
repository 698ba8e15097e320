from __future__ import annotations

from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import TensorType
from dlgate.ops.shapecalc._shared import _Filled, _value


class ConstantOfShape(_Filled):
    """A tensor of the constant ``shape`` (rank 0..4; sometimes the anchor's own shape, as a
    constant-folded ``Shape(x)``) filled with ``value`` of ``dtype`` (any of dlgate's
    dtypes; the attribute is left out, meaning float32 0, half the time it is float32 0):
    small values and the types' extremes (float32's lowest stands in for float64's, whose
    magnitude overflows bound arithmetic). The anchor ``x`` (int64, see the module
    docstring) is not read: anchors of other dtypes are not generated, as
    ``schema.allowed`` checks the anchor against the int64 shape input. Non-finite fill
    values (-inf masks) are not generated: the checkers skip non-finite outputs."""

    onnx_op = "ConstantOfShape"
    dtypes = ((dt.INT64,),)
    ranks = (0, 1, 2, 3, 4, 5)

    @staticmethod
    def _attrs(ctx, shape, dtype) -> dict:
        return {"shape": list(shape), "dtype": dtype, "value": _value(ctx, dtype)}

    def sample(self, ctx, ins):
        x = ins[0]
        if ctx.coin(0.3) and not any(sym.is_sym(d) for d in x.shape) and x.rank <= 4:
            shape = x.shape
        else:
            shape = ctx.shape(ctx.rng.randint(0, 4))
        return self._attrs(ctx, shape, ctx.choice(list(ctx.dtypes)))

    def backward(self, ctx, out):
        x = TensorType(dt.INT64, out.shape if ctx.coin(0.3) else ctx.shape(ctx.rng.randint(0, 3)))
        return [x], self._attrs(ctx, out.shape, out.dtype)

    def requires(self, ins, a):
        return [d >= 1 for d in a["shape"]]

    def infer(self, ins, a):
        return [TensorType(a["dtype"], tuple(a["shape"]))]

    def onnx(self, b, a, xs, ys):
        value = self._value(b, a)
        b.node("ConstantOfShape", [b.ints(a["shape"])], ys, value=value)

    def torch(self, a, x):
        return torch.full(tuple(a["shape"]), a["value"], dtype=dt.torch_dtype(a["dtype"]))

    value_inputs = ()
    gaps: ClassVar[tuple] = (
        ("anchor inputs of other dtypes than int64",
         "schema.allowed checks the anchor against ConstantOfShape's int64 shape input"),
        ("non-finite fill values (-inf masks)", "the checkers skip non-finite outputs"),
    )


OPS = [ConstantOfShape]
