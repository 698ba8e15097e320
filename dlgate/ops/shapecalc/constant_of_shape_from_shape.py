from __future__ import annotations

from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.shapecalc._shared import (_Filled, FromShape, _pieces_for, _pieces_ok, _resolve, _shape_tensor,
                                          _slice_piece, _spell, _value)


class ConstantOfShapeFromShape(_Filled):
    """``ConstantOfShape(shape)`` with ``shape`` y's whole shape (``zeros_like``/``full_like``;
    a rank-0 y gives a scalar) or some of its dims with constants; the fill ``value`` of
    any of dlgate's dtypes (the output's), left out half the time it is float32 0. y is
    int64: ``schema.allowed`` checks it against ConstantOfShape's int64 shape input."""

    name = "ConstantOfShapeFromShape"
    onnx_op = "ConstantOfShape"
    onnx_ops = FromShape.onnx_ops
    symbolic_ok = False
    dtypes = ((dt.INT64,),)
    ranks = (0, 1, 2, 3, 4, 5)

    def _pieces(self, ctx, y_shape) -> list:
        r = len(y_shape)
        if r == 0 or ctx.coin(0.45):
            return [{"all": 1}]
        if r >= 2 and ctx.coin(0.3):
            lo = ctx.rng.randrange(r - 1)
            hi = ctx.rng.randint(lo + 1, r)
            return [_slice_piece(ctx, lo, hi, r)]
        pos = ctx.rng.sample(range(r), ctx.rng.randint(1, r))
        pieces = [{"dim": _spell(ctx, j, r)} for j in pos]
        if ctx.coin(0.3) and len(pieces) < ctx.limits.max_rank:
            pieces.insert(ctx.rng.randint(0, len(pieces)), {"const": ctx.choice((1, 2, 3))})
        return pieces

    def sample(self, ctx, ins):
        dtype = ctx.choice(list(ctx.dtypes))
        return {"pieces": self._pieces(ctx, ins[0].shape), "dtype": dtype, "value": _value(ctx, dtype)}

    def backward(self, ctx, out):
        if out.rank == 0 or ctx.coin(0.4):
            pieces, y_shape = [{"all": 1}], out.shape
        else:
            pieces, y_shape = _pieces_for(ctx, list(out.shape), 0.7)
        return [TensorType(dt.INT64, tuple(y_shape))], {"pieces": pieces, "dtype": out.dtype,
                                                         "value": _value(ctx, out.dtype)}

    def requires(self, ins, a):
        ok = _pieces_ok(a["pieces"], ins[0].rank)
        if not all(c is True for c in ok):
            return [False]
        return [d >= 1 for d in _resolve(a["pieces"], ins[0].shape)]

    def infer(self, ins, a):
        return [TensorType(a["dtype"], tuple(_resolve(a["pieces"], ins[0].shape)))]

    def onnx(self, b, a, xs, ys):
        value = self._value(b, a)
        b.node("ConstantOfShape", [_shape_tensor(b, xs[0], a["pieces"])], ys, value=value)

    def torch(self, a, y):
        return torch.full(tuple(_resolve(a["pieces"], tuple(y.shape))), a["value"], dtype=dt.torch_dtype(a["dtype"]))

    value_inputs = ()
    gaps: ClassVar[tuple] = (
        ("y of other dtypes than int64", "schema.allowed checks y against ConstantOfShape's int64 shape input"),
    )


OPS = [ConstantOfShapeFromShape]
