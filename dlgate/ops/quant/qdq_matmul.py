from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.quant._shared import CYCLE, F32, I8, MAX_TERMS, QR, QTYPES, _Idiom, _Q, _cycled, _mult, _seeded, _zp


class QDQMatMul(_Idiom):
    """``DQ(Q(DQ(Q(x)) @ DQ(W)))``: W a (K, N) int8/uint8 constant (seeded), its scale per
    tensor or per column (DequantizeLinear axis 1); x float32 of any rank (NumPy matmul)."""

    name = "QDQMatMul"
    onnx_op = "MatMul"
    dtypes = ((F32,),)
    ranks = (1, 2, 3, 4)

    def sample(self, ctx, ins):
        k = ins[0].shape[-1]
        return self._attrs(ctx, k, ctx.dim(16))

    def _attrs(self, ctx, k: int, n: int) -> dict:
        a = _Q.draw(ctx, "x", lo=-6, hi=-2)
        wt = ctx.choice(QTYPES)
        wz = ctx.choice((0, 0, ctx.rng.randint(-4, 4))) if wt == I8 else ctx.choice((128, 128, ctx.rng.randint(100, 150)))
        amp = ctx.choice((8, 32, 127))
        per = ctx.coin(0.4)
        we = ctx.rng.randint(-8, -4)
        a.update(k=k, n=n, wt=wt, wz=wz, wamp=amp, wseed=ctx.rng.randrange(2 ** 31),
                 we=[we + ctx.rng.randint(-1, 1) for _ in range(CYCLE)] if per else we)
        xs = (QR[a["xt"]][1] - QR[a["xt"]][0]) / 4
        m = _mult(ctx, k, xs, amp / 2)
        yt = a["xt"] if ctx.coin(0.8) else ctx.choice(QTYPES)
        a.update(yt=yt, ye=a["xe"] + we - m, yz=_zp(ctx, yt))
        return a

    def backward(self, ctx, out):
        if out.dtype != F32 or out.rank < 1 or out.rank > 4:
            return None
        k = ctx.dim(16)
        return [TensorType(F32, tuple(out.shape[:-1]) + (k,))], self._attrs(ctx, k, out.shape[-1])

    def requires(self, ins, a):
        x = ins[0]
        return [x.rank >= 1, x.shape[-1] == a["k"], a["k"] <= MAX_TERMS]

    def infer(self, ins, a):
        return [TensorType(F32, tuple(ins[0].shape[:-1]) + (a["n"],))]

    def _w(self, a):
        """(integer weights, per-column scale exponents or one) as NumPy arrays."""
        w = _seeded(a["wseed"], (a["k"], a["n"]), a["wt"], a["wz"], a["wamp"])
        e = np.asarray(_cycled(a["we"], a["n"]) if isinstance(a["we"], list) else a["we"], dtype=np.float64)
        return w, e

    def onnx(self, b, a, xs, ys):
        d = _Q.nodes(b, a, "x", xs[0])
        w, e = self._w(a)
        zw = np.full(e.shape, a["wz"], dtype=dt.NUMPY[a["wt"]])
        attrs = {"axis": _col_axis(b)} if e.ndim else {}
        (wd,) = b.node("DequantizeLinear", [b.const(w), b.const((2.0 ** e).astype(np.float32)), b.const(zw)], 1,
                       **attrs)
        (m,) = b.node("MatMul", [d, wd], 1)
        _Q.nodes(b, a, "y", m, out=ys[0])

    def torch(self, a, x):
        d = _Q.fake(a, "x", x)
        w, e = self._w(a)
        wd = (torch.from_numpy(w.astype(np.float64)) - a["wz"]) * torch.pow(2.0, torch.from_numpy(e))
        return _Q.fake(a, "y", torch.matmul(d, wd)).to(torch.float32)


def _col_axis(b):
    """The per-column DequantizeLinear axis of a (K, N) weight: 1, -1, or left to its
    default (1)."""
    return b.rng.choice((1, -1, None))


OPS = [QDQMatMul]
