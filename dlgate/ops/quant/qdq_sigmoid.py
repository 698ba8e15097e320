from __future__ import annotations

import numpy as np
import torch

from dlgate.ops.quant._shared import QR, QTYPES, _Q, _QDQUnary, _zp


#: QDQSigmoid: the least distance (in output steps) of a value from a rounding boundary.
SIGMOID_MARGIN = 2e-3


class QDQSigmoid(_QDQUnary):
    """Scales chosen so that Sigmoid of every value the quantized input can hold lies at
    least ``SIGMOID_MARGIN`` of an output step away from a rounding boundary."""

    name = "QDQSigmoid"
    onnx_op = "Sigmoid"

    @staticmethod
    def _clear(a) -> bool:
        lo, hi = QR[a["xt"]]
        q = np.arange(lo, hi + 1, dtype=np.float64)
        v = 1.0 / (1.0 + np.exp(-(q - a["xz"]) * 2.0 ** a["xe"]))
        t = v / 2.0 ** a["ye"]
        return bool(np.all(np.abs(t - np.floor(t) - 0.5) >= SIGMOID_MARGIN))

    def sample(self, ctx, ins):
        for _ in range(40):
            a = _Q.draw(ctx, "x", lo=-6, hi=-1)
            yt = a["xt"] if ctx.coin(0.8) else ctx.choice(QTYPES)
            a.update(yt=yt, ye=ctx.choice((-8, -8, -7, -9)), yz=ctx.choice((QR[yt][0], QR[yt][0], _zp(ctx, yt))))
            if self._clear(a):
                break
        return a

    def _f(self, a, d):
        return torch.sigmoid(d)

    def undefined(self, a, ins, out_types):
        with torch.no_grad():
            d = _Q.fake(a, "x", ins[0].double())
            t = torch.sigmoid(d) / 2.0 ** a["ye"]
        if bool((torch.abs(t - torch.floor(t) - 0.5) < SIGMOID_MARGIN).any()):
            return "Sigmoid of a quantized value lies within rounding error of an output rounding boundary"
        return None


OPS = [QDQSigmoid]
