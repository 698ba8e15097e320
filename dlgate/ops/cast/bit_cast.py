from __future__ import annotations

from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.cast._shared import WIDTH


class BitCast(OpSpec):
    """``y`` = the bits of ``x`` read as type ``to`` (opset 26), between dlgate's types of one
    width: float32 -> int32 and float64 -> int64, int8 <-> uint8, bool -> int8/uint8, and
    every type but float16 to itself.

    float -> integer: every float's bits are a defined integer, compared exactly, so a
    one-ulp difference upstream is an integer difference of one (the output ``jumps``: the
    instability check perturbs the float input and excuses it). Undefined (``undefined``):
    a NaN input (IEEE 754 fixes neither the sign nor the payload of a computed NaN) and a
    zero input (its sign bit: -0.0 and +0.0 are equal in every float comparison dlgate
    makes, so backends need not keep it, and they are 2^31 apart as int32).

    Not generated: int32 -> float32 and int64 -> float64 of arbitrary integers (see
    ``gaps``; ``BitCastExp2Idiom`` covers those conversions), integer -> bool, float16."""

    onnx_op = "BitCast"
    min_opset = 26
    dtypes = tuple((t,) for t in dt.ALL if t != dt.FLOAT16)

    def sample(self, ctx, ins):
        src = ins[0].dtype
        others = [t for t in bitcast_targets(src, ctx.dtypes) if t != src]
        to = ctx.choice(others) if others and ctx.coin(0.85) else src
        return {"to": to}

    def backward(self, ctx, out):
        srcs = [s[0] for s in self.dtypes if s[0] in ctx.dtypes and out.dtype in bitcast_targets(s[0])]
        if not srcs:
            return None
        others = [t for t in srcs if t != out.dtype]
        src = ctx.choice(others) if others and ctx.coin(0.85) else ctx.choice(srcs)
        return [TensorType(src, out.shape)], {"to": out.dtype}

    def requires(self, ins, a):
        return [a["to"] in bitcast_targets(ins[0].dtype)]

    def infer(self, ins, a):
        return [TensorType(a["to"], ins[0].shape)]

    def onnx_attrs(self, a, b):
        return {"to": int(dt.ONNX[a["to"]])}

    def torch(self, a, x):
        return bitcast(x, a["to"])

    jumps = True
    gaps: ClassVar[tuple] = (
        ("int32 -> float32 and int64 -> float64 of arbitrary integers",
         "dlgate's integers are small (|x| <= 16), whose bits are subnormal floats (a backend that flushes "
         "subnormals, FTZ/DAZ, reads them as 0) or NaN (negative ones); BitCastExp2Idiom reinterprets "
         "exponent-field integers instead"),
        ("int8/uint8 -> bool", "a byte other than 0 or 1 is not a valid bool (undefined); dlgate's integers "
                               "are not kept to 0/1"),
        ("float16 (to or from anything)",
         "int16, uint16 and bfloat16 are outside dlgate's dtypes, which leaves float16 -> float16, and "
         "onnxruntime 1.32 fails to load that between two float16 nodes it runs in float32 ('BitCast requires "
         "input and output types to have the same bit-width, but input type has 32 bits and output type has "
         "16 bits'): a known runtime bug that a degenerate identity would report in every such model"),
    )

    def discontinuous(self, a):
        return a["to"] in dt.INTS  # from a float: the bits of a rounded value, compared exactly

    def value_range(self, a, ranges, ins):
        src, to = ins[0].dtype, a["to"]
        lo, hi = ranges[0]
        if src == to:
            return [(lo, hi)]
        if src == dt.BOOL:
            return [(0.0, 1.0)]
        if (src, to) == (dt.INT8, dt.UINT8) and lo >= 0 or (src, to) == (dt.UINT8, dt.INT8) and hi <= 127:
            return [(lo, hi)]  # the common non-negative values keep their bits' meaning
        return None

    def input_span(self, a, i, span, ins):
        return span if a["to"] == ins[0].dtype else None

    def undefined(self, a, ins, out_types):
        x = ins[0]
        if not x.is_floating_point() or dt.is_float(a["to"]):
            return None
        if bool(torch.isnan(x).any()):
            return f"reinterprets a NaN as {a['to']}: IEEE 754 fixes neither the sign nor the payload of a computed NaN"
        if bool((x == 0).any()):
            return (f"reinterprets a zero as {a['to']}: its sign bit (-0.0 vs +0.0) is invisible to float "
                    "comparisons, so backends need not keep it")
        return None


def bitcast_targets(src: str, allowed=dt.ALL) -> list:
    """The types the plain BitCast spec reinterprets ``src`` as (``src`` itself included):
    the same width, never bool from another type, never integer to float, nothing for
    float16 (see BitCast)."""
    if src == dt.FLOAT16:
        return []
    return [t for t in allowed if WIDTH[t] == WIDTH[src] and
            (t == src or (t != dt.BOOL and not (dt.is_int(src) and dt.is_float(t))))]


def bitcast(x, to: str):
    """ONNX BitCast of ``x`` (a PyTorch tensor) to ``to``: the same bytes (little endian
    on every machine dlgate runs on) read as the other type; a copy when the types agree."""
    t = dt.torch_dtype(to)
    return x.clone() if x.dtype == t else x.view(t)


OPS = [BitCast]
