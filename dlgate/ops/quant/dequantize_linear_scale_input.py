from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.binary._shared import mul_bounds
from dlgate.ops.quant._shared import (F16, F32, I32, I8, U8, _UNDEFINED_DQ_OPSET, _QDQParams, _axis_layout, dequantize,
                                      _expand, _flat, _nested, _shifted, _zp)
from dlgate.ops.quant.dequantize_linear import DequantizeLinear


class DequantizeLinearScaleInput(OpSpec):
    """DequantizeLinear whose scale is a graph tensor (float32, or float16 from opset 19),
    per tensor or per axis; the output the scale's type, or float32 for a float16 scale
    through ``output_dtype`` (opset 23+): products that round once in every reading."""

    name = "DequantizeLinearScaleInput"
    onnx_op = "DequantizeLinear"
    arity = 2
    dtypes = ((I8, F32), (U8, F32), (I32, F32), (I8, F16), (U8, F16))
    symbolic_ok = False

    def sample(self, ctx, ins):
        x = ins[0]
        a = _axis_layout(ctx, x)
        shape = _QDQParams.shape(x, a)
        if x.dtype == I32:
            zp = _nested(ctx, shape, lambda: 0) if ctx.coin(0.3) else None
        else:
            zp = _nested(ctx, shape, lambda: _zp(ctx, x.dtype)) if ctx.coin(0.7) else None
        a.update(zp=zp, zdt=x.dtype, wide=ctx.opset >= 23 and ctx.coin(0.3))
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, _QDQParams.shape(ins[0], a))

    def requires(self, ins, a):
        x, s = ins
        if a["mode"] != "tensor" and (x.rank < 1 or not -x.rank <= a["axis"] < x.rank):
            return [False]
        want = _QDQParams.shape(x, a)
        ok = tuple(s.shape) == want and (a["zp"] is None or tuple(np.shape(a["zp"])) == want)
        return [ok, a["zdt"] == x.dtype, not (x.dtype == I32 and s.dtype != F32)]

    def _out(self, a, ins) -> str:
        return F32 if a["wide"] else ins[1].dtype

    def infer(self, ins, a):
        return [TensorType(self._out(a, ins), ins[0].shape)]

    def onnx(self, b, a, xs, ys):
        ins = list(xs)
        if a["zp"] is not None:
            ins.append(b.const(np.asarray(a["zp"], dtype=dt.NUMPY[a["zdt"]])))
        attrs = _QDQParams.attrs(b, a)
        if a["wide"]:
            attrs["output_dtype"] = int(dt.ONNX[F32])
        b.node("DequantizeLinear", ins, ys, **attrs)

    def torch(self, a, x, s):
        out = F32 if a["wide"] else str(s.dtype).replace("torch.", "")
        s = _expand(s, tuple(x.shape), a["mode"], a["axis"], 0)
        z = None if a["zp"] is None else _expand(torch.tensor(np.asarray(a["zp"], dtype=np.int64)), tuple(x.shape),
                                                 a["mode"], a["axis"], 0)
        return dequantize(x, s, z, out)

    gaps: ClassVar[tuple] = (
        ("a float32 scale with a float16 output_dtype", "the scale's values are arbitrary: the product would "
                                                       "round twice or once depending on the implementation"),
        ("int32 x with a float16 scale", "see DequantizeLinear"),
    )

    def value_range(self, a, ranges, ins):
        zps = _flat(a["zp"]) if a["zp"] is not None else None
        return [mul_bounds(_shifted(ranges[0], ins[0].dtype, zps), ranges[1])]

    def undefined(self, a, ins, out_types):
        return DequantizeLinear.undefined(self, a, ins, out_types)

    def reference_defect(self, a, ins, opset):
        return _UNDEFINED_DQ_OPSET if opset < 19 else None


OPS = [DequantizeLinearScaleInput]
