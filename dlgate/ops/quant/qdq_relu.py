from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.quant._shared import QR, QTYPES, _Q, _QDQUnary, _zp


class QDQRelu(_QDQUnary):
    """The output scale equals the input's, or doubles it (a requantization whose ties
    round half to even)."""

    name = "QDQRelu"
    onnx_op = "Relu"

    def sample(self, ctx, ins):
        a = _Q.draw(ctx, "x")
        yt = a["xt"] if ctx.coin(0.8) else ctx.choice(QTYPES)
        a.update(yt=yt, ye=a["xe"] + ctx.choice((0, 0, 1)),
                 yz=ctx.choice((QR[yt][0], QR[yt][0], _zp(ctx, yt))))
        return a

    def _f(self, a, d):
        return L.proxy_relu(d) if d.requires_grad else torch.relu(d)


OPS = [QDQRelu]
