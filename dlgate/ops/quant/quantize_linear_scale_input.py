from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import NonZero, OpSpec, TensorType
from dlgate.ops.quant._shared import F16, F32, I8, QR, QTYPES, _QDQParams, _axis_layout, _expand, _nested, quantize, _zp


class QuantizeLinearScaleInput(NonZero, OpSpec):
    """QuantizeLinear whose scale is a graph tensor (float32, or float16 from opset 23),
    per tensor or per axis; the zero point a constant or omitted. The scale's values are
    arbitrary, so the division's precision must be defined: float16 operands only from
    opset 23 (the scale's type decides). A zero scale is outside the domain (0 / 0)."""

    name = "QuantizeLinearScaleInput"
    onnx_op = "QuantizeLinear"
    arity = 2
    dtypes = ((F32, F32), (F16, F16), (F16, F32), (F32, F16))
    symbolic_ok = False

    def sample(self, ctx, ins):
        x = ins[0]
        a = _axis_layout(ctx, x)
        to = ctx.choice(QTYPES)
        shape = _QDQParams.shape(x, a)
        has_zp = ctx.coin(0.75) or (to == I8 and ctx.opset < 21)
        a.update(to=to, v23=ctx.opset >= 23, zp=_nested(ctx, shape, lambda: _zp(ctx, to)) if has_zp else None)
        a["odt"] = ctx.opset >= 21 and ((not has_zp and to == I8) or ctx.coin(0.3))
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, _QDQParams.shape(ins[0], a))

    def requires(self, ins, a):
        x, s = ins
        f16 = F16 in (x.dtype, s.dtype)
        if a["mode"] != "tensor" and (x.rank < 1 or not -x.rank <= a["axis"] < x.rank):
            return [False]
        want = _QDQParams.shape(x, a)
        ok = tuple(s.shape) == want and (a["zp"] is None or tuple(np.shape(a["zp"])) == want)
        return [ok, not f16 or a["v23"]]

    def infer(self, ins, a):
        return [TensorType(a["to"], ins[0].shape)]

    def onnx(self, b, a, xs, ys):
        ins = list(xs)
        if a["zp"] is not None:
            ins.append(b.const(np.asarray(a["zp"], dtype=dt.NUMPY[a["to"]])))
        attrs = _QDQParams.attrs(b, a)
        if a["odt"]:
            attrs["output_dtype"] = int(dt.ONNX[a["to"]])
        b.node("QuantizeLinear", ins, ys, **attrs)

    def torch(self, a, x, s):
        prec = str(s.dtype).replace("torch.", "") if a["v23"] else str(x.dtype).replace("torch.", "")
        s = _expand(s, tuple(x.shape), a["mode"], a["axis"], 0)
        z = None if a["zp"] is None else _expand(torch.tensor(np.asarray(a["zp"], dtype=np.int64)), tuple(x.shape),
                                                 a["mode"], a["axis"], 0)
        return quantize(x, s, z, a["to"], prec).to(dt.torch_dtype(a["to"]))

    nonzero_input = 1  # the scale
    safe = {1: (0.05, 1.0)}
    jumps = True
    value_inputs = (0,)
    gaps: ClassVar[tuple] = (
        ("float16 x or scale before opset 23", "the division's precision is unspecified there (onnxruntime "
                                                "divides float16 in float32) and the scale's values are arbitrary"),
        ("blocked scales", "covered by QuantizeLinear with constant scales"),
    )

    def value_range(self, a, ranges, ins):
        return [tuple(float(v) for v in QR[a["to"]])]

    def undefined(self, a, ins, out_types):
        x, s = ins
        if bool(torch.isnan(x).any()):
            return "quantizes NaN (ONNX defines no integer for it)"
        if not bool(torch.isfinite(s).all()) or bool((s == 0).any()):
            return "a scale of 0, Inf or NaN"
        return None

    def reference_defect(self, a, ins, opset):
        # ``ins`` are the graph's inputs: the scale may be x itself (a reused tensor)
        if ins[0].dtype == F32 and ins[-1].dtype == F16:
            return ("onnx.reference divides float32 x by a float16 scale in float32 (numpy promotion); ONNX says "
                    "the scale's type decides the division's precision")
        return None


OPS = [QuantizeLinearScaleInput]
