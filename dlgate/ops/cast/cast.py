from __future__ import annotations

import math

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, Restricted, TensorType
from dlgate.ops.cast._shared import cast_losses, cast_nonfinite, cast_undefined, cast_undefined_elements, to_dtype


class Cast(Restricted, OpSpec):
    """``y = cast(x, to)``, ``to`` any allowed dtype (sometimes the input's own).

    Semantics, as the ONNX Cast specification defines them (``to_dtype``): float -> bool is
    ``x != 0`` (NaN -> True), bool -> numbers is 0/1, float -> int truncates toward zero,
    int -> narrower int discards the high bits (wraps modulo 2^bits), and narrowing float
    conversions round to nearest even, overflowing to +/-inf.

    Hazard: float -> integer of NaN, Inf or a value whose truncation is out of the target's
    range is undefined in ONNX (onnxruntime's ``static_cast`` is UB in C++) and differs
    between PyTorch and runtimes, e.g. negative floats -> uint8. The op is therefore
    ``restricted``: ``losses`` asks the input search to keep such inputs in range.
    """
    onnx_op = "Cast"
    dtypes = tuple((t,) for t in dt.ALL)

    def sample(self, ctx, ins):
        others = [t for t in ctx.dtypes if t != ins[0].dtype]
        to = ctx.choice(others) if others and ctx.coin(0.8) else ctx.choice(ctx.dtypes)
        if ins[0].dtype in ctx.dtypes and ctx.degenerate_draw():
            to = ins[0].dtype  # to its own dtype
        return {"to": to}

    def backward(self, ctx, out):
        srcs = [s[0] for s in self.dtypes if s[0] in ctx.dtypes]
        if not srcs:
            return None
        others = [t for t in srcs if t != out.dtype]
        src = ctx.choice(others) if others and ctx.coin(0.8) else ctx.choice(srcs)
        return [TensorType(src, out.shape)], {"to": out.dtype}

    def infer(self, ins, a):
        return [TensorType(a["to"], ins[0].shape)]

    def onnx_attrs(self, a, b):
        return {"to": int(dt.ONNX[a["to"]])}

    def torch(self, a, x):
        return to_dtype(x, a["to"])

    elementwise = True
    keeps_integers = True
    exact_values = True
    def discontinuous(self, a):
        return a["to"] not in dt.FLOATS  # truncation to an integer or a test against zero

    def input_range(self, a, i):
        return (0.0, 8.0) if a["to"] in dt.INTS else None  # fits every integer type

    def value_range(self, a, ranges, ins):
        # numbers keep their values (rounded to the target); a cast to an integer
        # truncates towards zero, to bool gives 0 or 1
        lo, hi = ranges[0]
        if a["to"] == dt.BOOL:
            return [(0.0, 1.0)]
        if a["to"] in dt.INTS and dt.is_float(ins[0].dtype):
            return [(float(math.trunc(lo)) if math.isfinite(lo) else lo, float(math.trunc(hi)) if math.isfinite(hi) else hi)]
        return [(lo, hi)]

    def losses(self, a, x):
        return cast_losses(x, a["to"])

    def undefined(self, a, ins, out_types):
        return cast_undefined(ins[0], a["to"])

    def undefined_elements(self, a, ins, out_types):
        return [cast_undefined_elements(ins[0], a["to"])]

    def defines_nonfinite(self, a, ins):
        return cast_nonfinite(ins[0].dtype, a["to"])

    def input_span(self, a, i, span, ins):
        return span if dt.is_float(a["to"]) and dt.is_float(ins[0].dtype) else None  # float to float


OPS = [Cast]
