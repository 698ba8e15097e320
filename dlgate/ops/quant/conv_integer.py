from __future__ import annotations

from typing import ClassVar

import torch

from dlgate.ops.conv._shared import _ConvBase
from dlgate.ops.linalg._shared import product_bounds, sum_bounds
from dlgate.ops.quant._shared import I32, INT_PAIRS, QTYPES, _shifted, _zp, _zp_const


class ConvInteger(_ConvBase):
    """``conv(x - x_zero_point, w - w_zero_point)`` accumulated in int32, Conv's attributes
    (groups, strides, dilations, explicit pads or auto_pad; padding holds the zero point,
    i.e. 0 after the shift); zero points absent or scalars."""

    onnx_op = "ConvInteger"
    has_bias = False

    def sample(self, ctx, ins):
        a = super().sample(ctx, ins)
        a.update(self._zps(ctx, ins[0].dtype, ctx.choice(QTYPES)))
        return a

    @staticmethod
    def _zps(ctx, tx: str, tw: str) -> dict:
        return {"xt": tx, "wt": tw, "zx": _zp(ctx, tx) if ctx.coin(0.6) else None,
                "zw": _zp(ctx, tw) if ctx.coin(0.5) else None}

    def requires(self, ins, a):
        return super().requires(ins, a) + [a["xt"] == ins[0].dtype, a["wt"] == ins[1].dtype]

    def infer(self, ins, a):
        return [t.with_dtype(I32) for t in super().infer(ins, a)]

    def onnx(self, b, a, xs, ys):
        zx = "" if a["zx"] is None else _zp_const(b, a["zx"], a["xt"])
        zw = "" if a["zw"] is None else _zp_const(b, a["zw"], a["wt"])
        ins = list(xs) + [zx, zw]
        while ins[-1] == "":
            ins.pop()
        b.node("ConvInteger", ins, ys, **self.onnx_attrs(a, b))

    def torch(self, a, x, w):
        xs = x.double() - (a["zx"] or 0)
        ws = w.double() - (a["zw"] or 0)
        return super().torch(a, xs, ws).round().to(torch.int32)

    keeps_integers = False
    gaps: ClassVar[tuple] = (
        ("per-output-channel w_zero_point", "onnxruntime refuses it ('Non per-tensor quantization is not "
                                            "supported now') and onnx.reference misbroadcasts it for 1-D convolutions"),
    )

    def value_range(self, a, ranges, ins):
        m_min, m_max = self._term_counts(a, ins[0])
        rx = _shifted(ranges[0], ins[0].dtype, None if a["zx"] is None else [a["zx"]])
        rw = _shifted(ranges[1], ins[1].dtype, None if a["zw"] is None else [a["zw"]])
        return [sum_bounds(product_bounds(rx, rw), m_min, m_max)]

    def input_span(self, a, i, span, ins):
        return None


ConvInteger.dtypes = INT_PAIRS


OPS = [ConvInteger]
