from __future__ import annotations

import math

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import TensorType
from dlgate.ops.conv._shared import _ConvBase
from dlgate.ops.quant._shared import CYCLE, F32, I8, MAX_TERMS, QR, QTYPES, _Idiom, _Q, _cycled, _mult, _seeded, _zp


class QDQConv(_Idiom, _ConvBase):
    """``DQ(Q(Conv(DQ(Q(x)), DQ(W), DQ(B))))``: W an int8/uint8 constant (seeded), its
    scale per tensor or per output channel (DequantizeLinear axis 0); the optional bias an
    int32 constant dequantized with scale ``x_scale * w_scale`` (zero point 0), as
    exporters write it; Conv's attributes. At most 256 products per output
    (``MAX_TERMS``), so float32 sums stay exact."""

    name = "QDQConv"
    onnx_op = "Conv"
    symbolic_ok = True  # no backward of its own: the generator inverts it with z3, like Conv
    has_bias = False

    def sample(self, ctx, ins):
        x = ins[0]
        a = _ConvBase.sample(self, ctx, ins)
        a.update(_Q.draw(ctx, "x", lo=-6, hi=-2))
        wt = ctx.choice(QTYPES)
        wz = ctx.choice((0, 0, ctx.rng.randint(-4, 4))) if wt == I8 else ctx.choice((128, 128, ctx.rng.randint(100, 150)))
        amp = ctx.choice((8, 32, 127))
        per = ctx.coin(0.4)
        we = ctx.rng.randint(-8, -4)
        c = x.shape[1]
        terms = 64 if ctx.symbolic else max(1, (c // max(1, a["group"])) * math.prod(a["kernel"]))
        m = _mult(ctx, terms, (QR[a["xt"]][1] - QR[a["xt"]][0]) / 4, amp / 2)
        yt = a["xt"] if ctx.coin(0.8) else ctx.choice(QTYPES)
        a.update(c=c, wt=wt, wz=wz, wamp=amp, wseed=ctx.rng.randrange(2 ** 31),
                 we=[we + ctx.rng.randint(-1, 1) for _ in range(CYCLE)] if per else we,
                 bias=[ctx.rng.randint(-3000, 3000) for _ in range(CYCLE)] if ctx.coin(0.6) else None,
                 yt=yt, ye=a["xe"] + we - m, yz=_zp(ctx, yt))
        return a

    def requires(self, ins, a):
        x = ins[0]
        w = TensorType(F32, self._weight_shape(ins, a))
        terms = sym.div(x.shape[1], a["group"]) * sym.prod(a["kernel"])
        return _ConvBase.requires(self, [x, w], a) + [a["c"] == x.shape[1], terms <= MAX_TERMS]

    def _w(self, a):
        m = self._out_channels(a)
        shape = (m, a["c"] // a["group"]) + tuple(a["kernel"])
        w = _seeded(a["wseed"], shape, a["wt"], a["wz"], a["wamp"])
        e = np.asarray(_cycled(a["we"], m) if isinstance(a["we"], list) else a["we"], dtype=np.float64)
        bias = None if a["bias"] is None else np.asarray(_cycled(a["bias"], m), dtype=np.int32)
        return w, e, bias

    def onnx(self, b, a, xs, ys):
        d = _Q.nodes(b, a, "x", xs[0])
        w, e, bias = self._w(a)
        ax = {"axis": 0} if e.ndim else {}
        zw = np.full(e.shape, a["wz"], dtype=dt.NUMPY[a["wt"]])
        (wd,) = b.node("DequantizeLinear", [b.const(w), b.const((2.0 ** e).astype(np.float32)), b.const(zw)], 1, **ax)
        ins = [d, wd]
        if bias is not None:
            bs = (2.0 ** (e + a["xe"])).astype(np.float32)
            (bd,) = b.node("DequantizeLinear", [b.const(bias), b.const(bs)], 1, **ax)
            ins.append(bd)
        (y,) = b.node("Conv", ins, 1, **self.onnx_attrs(a, b))
        _Q.nodes(b, a, "y", y, out=ys[0])

    def torch(self, a, x):
        d = _Q.fake(a, "x", x)
        w, e, bias = self._w(a)
        r = len(a["kernel"])
        scale = torch.pow(2.0, torch.from_numpy(e))
        wd = (torch.from_numpy(w.astype(np.float64)) - a["wz"]) * (scale.reshape((-1,) + (1,) * (r + 1))
                                                                   if e.ndim else scale)
        bd = None if bias is None else torch.from_numpy(bias.astype(np.float64)) * scale * 2.0 ** a["xe"]
        acc = _ConvBase.torch(self, a, d, wd, bd)
        return _Q.fake(a, "y", acc).to(torch.float32)

    def exact(self, a, exacts, ins):
        return None

    def input_span(self, a, i, span, ins):
        return None

    def value_range(self, a, ranges, ins):
        return [_Q.bounds(a, "y")]

    def reference_defect(self, a, ins, opset):
        return _Idiom.reference_defect(self, a, ins, opset)


QDQConv.arity = 1
QDQConv.dtypes = ((F32,),)


OPS = [QDQConv]
