from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.quant._shared import (F16, F32, I32, I8, QR, U8, _UNDEFINED_DQ_OPSET, _QDQParams, dequantize, _flat,
                                      _nested, _scale_values, _zp)


#: float32 holds integers exactly up to this; dequantized int32 beyond it is rounded twice.
EXACT_F32 = 2 ** 24


class DequantizeLinear(OpSpec):
    """``y = (x - x_zero_point) * x_scale`` for int8, uint8 and int32 x (int32: the zero
    point omitted or 0); scale and zero point constants, per tensor, per axis or blocked
    (opset 21+); scale float32 or float16 (opset 19+), the output the scale's type or,
    from opset 23, ``output_dtype``. Where the output is float16 and the scale float32,
    scales float16 holds exactly, so the product rounds once whatever precision an
    implementation multiplies in."""

    onnx_op = "DequantizeLinear"
    dtypes = ((I8,), (U8,), (I32,))
    symbolic_ok = False

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0], None)

    def _attrs(self, ctx, x: TensorType, out: str | None):
        opset, xdt = ctx.opset, x.dtype
        if xdt == I32:
            if out not in (None, F32):
                return None
            sdt = out = F32
        elif opset < 19:
            if out not in (None, F32):
                return None
            sdt = out = F32
        elif opset < 23:
            sdt = out = out or ctx.choice((F32, F16))
        else:
            sdt = ctx.choice((F32, F16))
            out = out or (sdt if ctx.coin(0.6) else ctx.choice((F32, F16)))
        a = _QDQParams.layout(ctx, x, block_ok=opset >= 21)
        shape = _QDQParams.shape(x, a)
        pow2 = ctx.coin(0.5)
        a.update(sdt=sdt, out=out, zdt=xdt, odt=opset >= 23 and (out != sdt or ctx.coin(0.3)),
                 scale=_scale_values(ctx, shape, sdt, pow2, f16_exact=out == F16))
        if xdt == I32:
            a["zp"] = _nested(ctx, shape, lambda: 0) if ctx.coin(0.3) else None
        else:
            a["zp"] = _nested(ctx, shape, lambda: _zp(ctx, xdt)) if ctx.coin(0.7) else None
        return a

    def backward(self, ctx, out):
        if out.dtype not in (F32, F16):
            return None
        srcs = [t for (t,) in self.dtypes if t in ctx.dtypes]
        if not srcs:
            return None
        x = TensorType(ctx.choice(srcs), out.shape)
        a = self._attrs(ctx, x, out.dtype)
        return None if a is None else ([x], a)

    def requires(self, ins, a):
        return [a["zdt"] == ins[0].dtype] + _QDQParams.valid(ins[0], a)

    def infer(self, ins, a):
        return [TensorType(a["out"], ins[0].shape)]

    def onnx(self, b, a, xs, ys):
        ins = [xs[0], b.const(np.asarray(a["scale"], dtype=dt.NUMPY[a["sdt"]]))]
        if a["zp"] is not None:  # 4-bit x (a motif's constant, ``Const.bits``): a 4-bit zero point
            ins.append(b.const(np.asarray(a["zp"], dtype=dt.NUMPY[a["zdt"]]), bits=a.get("bits", 0)))
        attrs = _QDQParams.attrs(b, a)
        if a["odt"]:
            attrs["output_dtype"] = int(dt.ONNX[a["out"]])
        b.node("DequantizeLinear", ins, ys, **attrs)

    def torch(self, a, x):
        s, z = _QDQParams.tensors(a, tuple(x.shape))
        return dequantize(x, s, z, a["out"])

    gaps: ClassVar[tuple] = (
        ("int4, uint4, int16, uint16, float8 inputs; bfloat16 scales", "dlgate has no such dtypes"),
        ("int32 x with a float16 scale or output",
         "(x - zp) then has up to 24 bits: rounded to float32, then to float16 (onnx.reference), or straight "
         "to float16, differ; ONNX does not say"),
        ("a float32 scale float16 cannot hold with a float16 output",
         "the product would round twice (float32, then float16) in onnx.reference, once in a float16 "
         "multiplication; ONNX says only 'the output type determines the precision'"),
    )

    def value_range(self, a, ranges, ins):
        scales = _flat(a["scale"])
        zps = _flat(a["zp"]) if a.get("zp") is not None else [0.0] * len(scales)
        xdt = ins[0].dtype
        lo, hi = ranges[0]
        if xdt in QR:
            lo, hi = max(lo, QR[xdt][0]), min(hi, QR[xdt][1])
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return None
        vals = [(q - z) * s for s, z in zip(scales, zps) for q in (lo, hi)]
        return [(min(vals), max(vals))]

    def undefined(self, a, ins, out_types):
        x = ins[0]
        if x.dtype == torch.int32 and x.numel() and int(x.abs().max()) >= EXACT_F32:
            return "dequantizes int32 values of 2^24 or more: float32 rounds them before the multiplication or not"
        return None

    def reference_defect(self, a, ins, opset):
        return _UNDEFINED_DQ_OPSET if opset < 19 else None


OPS = [DequantizeLinear]
