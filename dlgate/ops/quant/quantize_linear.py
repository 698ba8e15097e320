from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.quant._shared import (F16, F32, I32, I8, QR, QTYPES, _QDQParams, _bad_scale, _flat, _nested, quantize,
                                      _scale_values, _zp)


class QuantizeLinear(OpSpec):
    """``y = saturate(round(x / y_scale) + y_zero_point)``, y int8 or uint8; scale and zero
    point constants (per tensor, spelled as a scalar or a 1-element vector; per axis, the
    axis sometimes negative; blocked from opset 21); the zero point omitted a quarter of
    the time (uint8, or int8 through ``output_dtype`` from opset 21, which is sometimes
    written beside a zero point too). x float32, float16 (opset 19+), int32; the scale
    float32 or float16 as each opset allows (from 23 independent of x's type), and from
    opset 23 sometimes the ``precision`` attribute (float32 or float16) naming the
    division's precision instead of the scale's type.

    Scales that are not powers of two only where ONNX defines the division's precision:
    float32 x with a float32 scale, or float x from opset 23 (the scale's type decides).
    """

    onnx_op = "QuantizeLinear"
    dtypes = ((F32,), (F16,), (I32,))
    symbolic_ok = False

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0], ctx.choice(QTYPES))

    def _attrs(self, ctx, x: TensorType, to: str) -> dict:
        opset, xdt = ctx.opset, x.dtype
        if opset < 19:
            sdt = F32
        elif opset < 23:
            sdt = xdt  # T1 binds both (int32: refused by requires)
        else:
            sdt = F32 if xdt == I32 else ctx.choice((xdt, xdt, F32, F16))
        prec = sdt if opset >= 23 else (F32 if xdt == I32 else xdt)
        pattr = ctx.choice((F32, F16)) if opset >= 23 and xdt != I32 and ctx.coin(0.15) else None
        prec = pattr or prec
        general = xdt != I32 and (opset >= 23 or (xdt == F32 and sdt == F32))
        pow2 = not general or ctx.coin(0.5)
        a = _QDQParams.layout(ctx, x, block_ok=opset >= 21)
        shape = _QDQParams.shape(x, a)
        has_zp = ctx.coin(0.75) or (to == I8 and opset < 21)
        a.update(to=to, sdt=sdt, prec=prec, pattr=pattr, pow2=pow2,
                 scale=_scale_values(ctx, shape, sdt if sdt != I32 else F32, pow2, lo=-2 if xdt == I32 else -6,
                                     hi=3 if xdt == I32 else 2),
                 zp=_nested(ctx, shape, lambda: _zp(ctx, to)) if has_zp else None)
        a["odt"] = opset >= 21 and ((not has_zp and to == I8) or ctx.coin(0.3))
        if ctx.degenerate_draw():  # unit scale, zero point 0 (where one is written): y = saturate(round(x))
            a["scale"] = _nested(ctx, shape, lambda: 1.0)
            a["zp"] = None if a["zp"] is None else _nested(ctx, shape, lambda: 0)
        return a

    def backward(self, ctx, out):
        if out.dtype not in QTYPES:
            return None
        srcs = [t for (t,) in self.dtypes if t in ctx.dtypes]
        if not srcs:
            return None
        x = TensorType(ctx.choice(srcs), out.shape)
        return [x], self._attrs(ctx, x, out.dtype)

    def requires(self, ins, a):
        return [a["sdt"] != I32] + _QDQParams.valid(ins[0], a)

    def infer(self, ins, a):
        return [TensorType(a["to"], ins[0].shape)]

    def onnx(self, b, a, xs, ys):
        sdt = a["sdt"]
        ins = [xs[0], b.const(np.asarray(a["scale"], dtype=dt.NUMPY[sdt]))]
        if a["zp"] is not None:
            ins.append(b.const(np.asarray(a["zp"], dtype=dt.NUMPY[a["to"]])))
        attrs = _QDQParams.attrs(b, a)
        if a["odt"]:
            attrs["output_dtype"] = int(dt.ONNX[a["to"]])
        if a.get("pattr"):
            attrs["precision"] = int(dt.ONNX[a["pattr"]])
        b.node("QuantizeLinear", ins, ys, **attrs)

    def torch(self, a, x):
        s, z = _QDQParams.tensors(a, tuple(x.shape))
        return quantize(x, s, z, a["to"], a["prec"]).to(dt.torch_dtype(a["to"]))

    jumps = True
    gaps: ClassVar[tuple] = (
        ("int4, uint4, int16, uint16 and float8 outputs", "dlgate has no such dtypes"),
        ("bfloat16 inputs and scales", "dlgate has no bfloat16"),
        ("a one-element blocked scale", "onnxruntime takes it for per-tensor quantization and refuses the "
                                        "block_size ('block_size must be 0 for per-tensor quantization')"),
        ("int32 x at opsets 19-22", "the schema binds x and y_scale to one type there, so the scale would be "
                                    "int32: onnx.reference then divides in float64, onnxruntime has no kernel"),
        ("int32 x with a float16 or non-power-of-two scale",
         "the division's precision is unspecified before opset 23 and onnx.reference computes it in float64 "
         "(numpy promotion); onnxruntime implements no int32 x"),
        ("float16 x with a non-power-of-two scale at opsets 19-22",
         "ONNX does not say the division's precision there (onnxruntime divides in float32, onnx.reference in "
         "float16: different roundings at .5 boundaries); from 23 the scale's type decides and it is generated"),
        ("saturate=0", "it only concerns float8 outputs"),
    )

    def _pairs(self, a) -> tuple:
        scales = _flat(a["scale"])
        zps = _flat(a["zp"]) if a.get("zp") is not None else [0.0] * len(scales)
        return scales, zps

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        qlo, qhi = QR[a["to"]]

        def q(v, s, z):
            if v != v:
                return float(qhi)
            t = v / s if math.isfinite(v) else v
            return float(min(qhi, max(qlo, (round(t) if math.isfinite(t) else t) + z)))

        scales, zps = self._pairs(a)
        return [(min(q(lo, s, z) for s, z in zip(scales, zps)), max(q(hi, s, z) for s, z in zip(scales, zps)))]

    def input_range(self, a, i):
        # the unsaturated inputs, a little wider: some saturate
        scales, zps = self._pairs(a)
        qlo, qhi = QR[a["to"]]
        lo = min((qlo - z) * s for s, z in zip(scales, zps))
        hi = max((qhi - z) * s for s, z in zip(scales, zps))
        pad = 0.1 * (hi - lo)
        return (lo - pad, hi + pad)

    def undefined(self, a, ins, out_types):
        x = ins[0]
        if x.is_floating_point() and bool(torch.isnan(x).any()):
            return "quantizes NaN (ONNX defines no integer for it)"
        return _bad_scale(a)

    def reference_defect(self, a, ins, opset):
        if opset >= 23 and ins[0].dtype == F32 and a["sdt"] == F16 and not a.get("pattr"):
            return ("onnx.reference divides float32 x by a float16 scale in float32 (numpy promotion); ONNX says "
                    "the scale's type decides the division's precision (x rounded to float16 first)")
        return None


OPS = [QuantizeLinear]
