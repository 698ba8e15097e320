from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import IEEE, OpSpec
from dlgate.ops.binary._shared import add_bounds, mul_bounds
from dlgate.ops.binary.div_int import const_shape, fits_into, nested


#: Constant's spellings for a value of each dtype: ``value`` (a tensor, any dtype and
#: shape) always; the scalar and list attributes only for float32 and int64 (since opset 12).
CONST_SPELLINGS = {dt.FLOAT32: ("value", "value_float", "value_floats"),
                   dt.INT64: ("value", "value_int", "value_ints")}


class Constant(OpSpec):
    """A ``Constant`` node combined with a graph tensor: ``y = x <op> c`` or ``c <op> x``
    (``op`` Add, Sub or Mul), ``c`` a Constant of x's dtype broadcasting to x, spelled as
    the attribute ``value`` (a tensor), or for float32 ``value_float`` (a scalar) or
    ``value_floats`` (a 1-D list), for int64 ``value_int`` or ``value_ints``. dlgate's
    generator builds operators on at least one graph tensor, hence the second node; and it
    checks a spec's dtypes against the schema of its ``onnx_op``, which for Constant (no
    inputs) would refuse every signature: ``onnx_op`` is therefore the combining Add (Sub
    and Mul have the same type constraints at every opset) and Constant is listed in
    ``onnx_ops``. Integer Add, Sub and Mul wrap; a signed overflow is undefined.

    Not generated: bool, string and the sparse spellings (``sparse_value``): Add, Sub and Mul
    take no bool; strings and sparse tensors are outside dlgate's tensor types."""

    name = "Constant"
    onnx_op = "Add"
    onnx_ops = ("Constant", "Sub", "Mul")
    dtypes = tuple((t,) for t in dt.NUMERIC)
    symbolic_ok = False

    def sample(self, ctx, ins):
        x = ins[0]
        t = x.dtype
        spelling = ctx.choice(CONST_SPELLINGS.get(t, ("value",)))
        if spelling in ("value_float", "value_int"):
            shape = ()
        elif spelling in ("value_floats", "value_ints"):
            if x.rank == 0:
                return {"spelling": spelling, "value": None}  # a list would widen x: rejected
            shape = (ctx.choice((1, x.shape[-1])),)
        else:
            shape = const_shape(ctx, x.shape)
        if dt.is_float(t):
            draw = lambda: ctx.choice((0.0, 1.0, -1.0, 0.5, ctx.uniform(-2.0, 2.0)))  # noqa: E731
        else:
            draw = lambda: ctx.rng.randint(0, 8) if t == dt.UINT8 else ctx.rng.randint(-4, 4)  # noqa: E731
        return {"spelling": spelling, "dtype": t, "value": nested(shape, draw),
                "op": ctx.choice(("Add", "Sub", "Mul")), "first": ctx.coin(0.3)}

    def backward(self, ctx, out):
        if (out.dtype,) not in self.dtypes:
            return None
        return [out], self.sample(ctx, [out])

    def requires(self, ins, a):
        if a["value"] is None or a["dtype"] != ins[0].dtype:
            return [False]
        return fits_into(np.shape(a["value"]), ins[0].shape)

    def infer(self, ins, a):
        return [ins[0]]

    def onnx(self, b, a, xs, ys):
        from onnx import numpy_helper

        arr = np.asarray(a["value"], dtype=dt.NUMPY[a["dtype"]])
        sp = a["spelling"]
        if sp == "value":
            val = numpy_helper.from_array(arr, b.fresh("value"))
        elif sp in ("value_float", "value_int"):
            val = arr.item()
        else:
            val = arr.reshape(-1).tolist()
        c = b.node("Constant", [], 1, **{sp: val})[0]
        b.node(a["op"], [c, xs[0]] if a["first"] else [xs[0], c], ys)

    def torch(self, a, x):
        c = torch.from_numpy(np.asarray(a["value"], dtype=dt.NUMPY[a["dtype"]])).to(x.dtype)
        p, q = (c, x) if a["first"] else (x, c)
        return {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul}[a["op"]](p, q)

    nonfinite = IEEE
    can_overflow = True
    keeps_integers = True
    gaps: ClassVar[tuple] = (
        ("bool constants", "the combining Add/Sub/Mul take no bool"),
        ("value_string(s), sparse_value", "string and sparse tensors are outside dlgate's tensor types"),
    )

    def value_range(self, a, ranges, ins):
        v = np.asarray(a["value"], dtype=np.float64)
        c, r = (float(v.min()), float(v.max())), tuple(ranges[0])
        if a["op"] == "Sub":  # c - x or x - c
            return [add_bounds([c, (-r[1], -r[0])]) if a["first"] else add_bounds([r, (-c[1], -c[0])])]
        return [add_bounds([c, r])] if a["op"] == "Add" else [mul_bounds(c, r)]


OPS = [Constant]
