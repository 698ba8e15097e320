from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate.ops import sym
from dlgate.ops.base import TensorType
from dlgate.ops.conv._shared import _ConvBase
from dlgate.ops.quant._shared import (CYCLE, INT_PAIRS, QR, QTYPES, U8, _Y_TYPE, _cycled, _mult, _requant, _zp,
                                      _zp_before_rounding, _zp_const)


class QLinearConv(_ConvBase):
    """``saturate(round((conv(x - x_zp, w - w_zp) + B) * x_scale * w_scale / y_scale) +
    y_zp)`` with Conv's attributes; x and y scales per tensor, w's per tensor or per
    output channel (scale and zero point vectors of M); the optional int32 bias B a
    constant. Power-of-two scales (see the module docstring); y of x's type."""

    onnx_op = "QLinearConv"
    schema_inputs = (0, 3)
    has_bias = False

    def sample(self, ctx, ins):
        a = super().sample(ctx, ins)
        a.update(self._q(ctx, ins[0], ctx.choice(QTYPES)))
        return a

    def _q(self, ctx, x: TensorType, tw: str) -> dict:
        tx = yt = x.dtype
        zx, zw = _zp(ctx, tx), _zp(ctx, tw)
        per = ctx.coin(0.4)
        ex, ew = ctx.rng.randint(-8, -3), ctx.rng.randint(-8, -3)
        mag = lambda z, t: abs(z - 8) + 4 if t == U8 else abs(z) + 5  # noqa: E731
        c = x.shape[1] if x.rank >= 2 else 1
        m = _mult(ctx, c * 9 if not sym.is_sym(c) else 64, mag(zx, tx), mag(zw, tw))
        return {"xt": tx, "wt": tw, "yt": yt, "zx": zx, "zy": _zp(ctx, yt), "ex": ex, "ey": ex + ew - m,
                "ew": [ew + ctx.rng.randint(-1, 1) for _ in range(CYCLE)] if per else ew,
                "zw": [_zp(ctx, tw) for _ in range(CYCLE)] if per and ctx.coin(0.5) else zw,
                "bias": [ctx.rng.randint(-2000, 2000) for _ in range(CYCLE)] if ctx.coin(0.5) else None}

    def requires(self, ins, a):
        return super().requires(ins, a) + [a["xt"] == ins[0].dtype, a["wt"] == ins[1].dtype]

    def infer(self, ins, a):
        return [t.with_dtype(a["yt"]) for t in super().infer(ins, a)]

    def _per_channel(self, a):
        m = self._out_channels(a)
        ew, zw = a["ew"], a["zw"]
        if isinstance(ew, list) or isinstance(zw, list):
            ew = _cycled(ew, m) if isinstance(ew, list) else [ew] * m
            zw = _cycled(zw, m) if isinstance(zw, list) else [zw] * m
        return ew, zw

    def onnx(self, b, a, xs, ys):
        ew, zw = self._per_channel(a)
        sc = lambda e: b.const(np.asarray(2.0 ** np.asarray(e, dtype=np.float64), dtype=np.float32))  # noqa: E731
        ins = [xs[0], sc(a["ex"]), _zp_const(b, a["zx"], a["xt"]), xs[1], sc(ew), _zp_const(b, zw, a["wt"]),
               sc(a["ey"]), _zp_const(b, a["zy"], a["yt"])]
        if a["bias"] is not None:
            ins.append(b.const(np.asarray(_cycled(a["bias"], self._out_channels(a)), dtype=np.int32)))
        b.node("QLinearConv", ins, ys, **self.onnx_attrs(a, b))

    def torch(self, a, x, w):
        ew, zw = self._per_channel(a)
        r = x.dim() - 2
        chan = (-1,) + (1,) * (w.dim() - 1)
        zw_t = torch.tensor(zw, dtype=torch.float64)
        ws = w.double() - (zw_t.reshape(chan) if zw_t.dim() else zw_t)
        bias = None
        if a["bias"] is not None:
            bias = torch.tensor(_cycled(a["bias"], self._out_channels(a)), dtype=torch.float64)
        acc = super().torch(a, x.double() - a["zx"], ws, bias)
        e = torch.tensor(ew, dtype=torch.float64)
        if e.dim():
            e = e.reshape((1, -1) + (1,) * r)
        return _requant(acc, torch.pow(2.0, a["ex"] + e - a["ey"]), a["zy"], a["yt"])

    keeps_integers = False
    jumps = True
    gaps: ClassVar[tuple] = (
        ("scales that are not powers of two", "the requantization's precision is unspecified"),
        ("y of another type than x", _Y_TYPE),
    )

    def value_range(self, a, ranges, ins):
        return [tuple(float(v) for v in QR[a["yt"]])]

    def exact(self, a, exacts, ins):
        return None

    def input_span(self, a, i, span, ins):
        return None

    def reference_defect(self, a, ins, opset):
        ties = _zp_before_rounding(a["zy"], a["ex"], a["ew"], a["ey"], "QLinearConv")
        if ties:
            return ties
        if ins[0].rank == 3 and (isinstance(a["ew"], list) or isinstance(a["zw"], list)):
            return ("onnx.reference's QLinearConv expands a per-channel w_scale to 4-D (np.expand_dims(w_scale, "
                    "(0, 2, 3))), which misbroadcasts against a 1-D convolution's 3-D output")
        return None


QLinearConv.dtypes = INT_PAIRS


OPS = [QLinearConv]
