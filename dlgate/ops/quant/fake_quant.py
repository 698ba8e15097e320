from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.quant._shared import (F16, F32, I8, QTYPES, _Idiom, _QDQParams, _bad_scale, dequantize, _flat, _nested,
                                      _qbounds, quantize, _scale_values, _zp)


class FakeQuant(_Idiom):
    """``DequantizeLinear(QuantizeLinear(x))`` on a float tensor (fake quantization of an
    activation): per tensor, per axis or blocked (opset 21+), one scale and zero point
    shared by the pair; float32, or float16 from opset 19 (the scale float16, or float32
    from opset 23 with ``output_dtype`` giving float16 back). Non-power-of-two scales only
    for float32 x and scale (the division's precision is then defined).

    From opset 19, now and then (``MIXED``) the DequantizeLinear's scale is the other float
    type than the QuantizeLinear's (the same power-of-two value, exact in both), and the
    pair's output that type: the schema types the two scales apart, and onnxruntime's QDQ
    pair check once compared the Q scale's type with itself and then read a float16 scale as
    float32 (``ort-qdq-mixed-scale-types`` in the replay set)."""

    name = "FakeQuant"
    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear",)
    dtypes = ((F32,), (F16,))

    def sample(self, ctx, ins):
        x = ins[0]
        return self._draw(ctx, x, ctx.opset >= 19 and ctx.coin(MIXED) and _other(x.dtype) in ctx.dtypes)

    def _draw(self, ctx, x, mixed: bool) -> dict:
        """The pair's attributes for ``x``; ``mixed``: the DQ scale of the other float type."""
        xdt, opset = x.dtype, ctx.opset
        sdt = F32 if xdt == F32 or (opset >= 23 and ctx.coin(0.3)) else F16
        pow2 = mixed or sdt == F16 or xdt == F16 or ctx.coin(0.5)
        a = _QDQParams.layout(ctx, x, block_ok=opset >= 21)
        shape = _QDQParams.shape(x, a)
        to = ctx.choice(QTYPES)
        has_zp = ctx.coin(0.75) or (to == I8 and opset < 21)
        a.update(to=to, sdt=sdt, xdt=xdt, pow2=pow2, scale=_scale_values(ctx, shape, sdt, pow2, lo=-8, hi=-2),
                 zp=_nested(ctx, shape, lambda: _zp(ctx, to)) if has_zp else None)
        a["odt"] = opset >= 21 and ((not has_zp and to == I8) or ctx.coin(0.3))
        if mixed:
            a["dsdt"] = _other(sdt)
        return a

    def backward(self, ctx, out):
        if out.dtype not in (F32, F16):
            return None
        # a mixed pair returns its DQ scale's type: x is then the other one (opset < 23: the
        # Q scale's; from 23 either, and the Q scale's type is drawn from x's as in ``sample``)
        other = _other(out.dtype)
        if ctx.opset >= 19 and ctx.coin(MIXED) and other in ctx.dtypes:
            for _ in range(4):
                x = TensorType(other if ctx.opset < 23 or ctx.coin(0.5) else out.dtype, out.shape)
                a = self._draw(ctx, x, True)
                if a["dsdt"] == out.dtype:
                    return [x], a
            return None
        return [out], self._draw(ctx, out, False)

    def requires(self, ins, a):
        return [a["xdt"] == ins[0].dtype] + _QDQParams.valid(ins[0], a)

    def infer(self, ins, a):
        return [TensorType(_out(a), ins[0].shape)]

    def onnx(self, b, a, xs, ys):
        sdt = dt.NUMPY[a["sdt"]]
        s = b.const(np.asarray(a["scale"], dtype=sdt))
        z = None if a["zp"] is None else b.const(np.asarray(a["zp"], dtype=dt.NUMPY[a["to"]]))
        attrs = _QDQParams.attrs(b, a)
        qattrs = dict(attrs)
        if a["odt"]:
            qattrs["output_dtype"] = int(dt.ONNX[a["to"]])
        (q,) = b.node("QuantizeLinear", [xs[0], s] + ([z] if z else []), 1, **qattrs)
        if a.get("dsdt"):  # the DQ's own scale, of the other type; the output its type
            s = b.const(np.asarray(a["scale"], dtype=dt.NUMPY[a["dsdt"]]))
        elif a["sdt"] != a["xdt"]:
            attrs["output_dtype"] = int(dt.ONNX[a["xdt"]])
        b.node("DequantizeLinear", [q, s] + ([z] if z else []), ys, **attrs)

    def torch(self, a, x):
        s, z = _QDQParams.tensors(a, tuple(x.shape))
        q = quantize(x, s, z, a["to"], a["sdt"])  # the scale's type is x's before opset 23
        # a mixed pair's DQ scale holds the same power of two: only the output type differs
        return dequantize(q, s, z, _out(a))

    gaps: ClassVar[tuple] = (("a float16 scale on float32 x", "onnx.reference divides in float32 there, against "
                                                              "the spec (see QuantizeLinear)"),)

    def undefined(self, a, ins, out_types):
        if bool(torch.isnan(ins[0]).any()):
            return "quantizes NaN (ONNX defines no integer for it)"
        return _bad_scale(a)

    def value_range(self, a, ranges, ins):
        scales = _flat(a["scale"])
        zps = _flat(a["zp"]) if a["zp"] is not None else [0.0] * len(scales)
        return [_qbounds(a["to"], zps, scales)]


#: How often a pair from opset 19 gives its DequantizeLinear a scale of the other float type.
MIXED = 0.15


def _other(t: str) -> str:
    return F16 if t == F32 else F32


def _out(a: dict) -> str:
    """The pair's output type: the DQ scale's for a mixed pair, else x's."""
    return a.get("dsdt") or a["xdt"]


OPS = [FakeQuant]
