from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec
from dlgate.ops.signal._shared import _as_real, _complex, _int_dtype


class DFT(OpSpec):
    """Forward or inverse DFT along ``axis`` (not the last, complex axis), of real (last
    axis 1) or complex (last axis 2) input, ``dft_length`` omitted or shorter or longer
    than the axis (the signal is then cut or zero-padded); ``onesided`` forward of real
    input (RFFT: the first L // 2 + 1 bins) or inverse of complex input (IRFFT: a real
    signal of length L, as ``numpy.fft.irfft``). float16 is transformed in float32 and
    rounded once, as onnxruntime and onnx.reference do. Not generated: an IRFFT whose
    dft_length cuts or pads the one-sided spectrum (L // 2 + 1 other than its length),
    where ONNX does not say which bins are read."""

    onnx_op = "DFT"
    min_opset = 17
    ranks = (2, 3, 4, 5)
    dtypes = tuple((t,) for t in dt.FLOATS)
    symbolic_ok = False

    # -- sampling ------------------------------------------------------------------------
    def sample(self, ctx, ins):
        x = ins[0]
        r = x.rank
        c = x.shape[-1]
        ax = ctx.rng.randrange(max(1, r - 1))
        n = x.shape[ax]
        if c == 2:
            inverse, onesided = int(ctx.coin(0.5)), int(ctx.coin(0.3))
        else:
            inverse = int(ctx.coin(0.3))
            onesided = int(not inverse and ctx.coin(0.4))
        if onesided and inverse:  # IRFFT
            choices = [2 * n - 1] + ([None, 2 * n - 2] if n >= 2 else [])
            length = ctx.choice(choices)
        else:
            length = None if ctx.coin(0.4) else ctx.choice((n, ctx.rng.randint(1, max(1, n - 1)),
                                                            ctx.rng.randint(n + 1, 2 * n + 4)))
        return {"axis": _spell(ctx, ax, r), "inverse": inverse, "onesided": onesided, "dft_length": length}

    def backward(self, ctx, out):
        r = out.rank
        if out.dtype not in dt.FLOATS or r not in self.ranks or out.shape[-1] not in (1, 2):
            return None
        ax = ctx.rng.randrange(r - 1)
        m = out.shape[ax]
        s = list(out.shape)
        if out.shape[-1] == 1:  # IRFFT: L = m, from n = m // 2 + 1 complex bins
            n = m // 2 + 1
            if m < 1:
                return None
            length = ctx.choice((None, m)) if m >= 2 and m % 2 == 0 else m
            a = {"inverse": 1, "onesided": 1, "dft_length": length}
            s[ax], s[-1] = n, 2
        elif ctx.coin(0.3):  # RFFT: m = L // 2 + 1 bins of a real signal
            L = ctx.choice((2 * m - 2, 2 * m - 1)) if m >= 2 else 1
            n = L if ctx.coin(0.5) else ctx.rng.randint(1, L + 4)
            a = {"inverse": 0, "onesided": 1, "dft_length": None if n == L and ctx.coin(0.5) else L}
            s[ax], s[-1] = n, 1
        else:  # complex to complex, forward or inverse
            n = m if ctx.coin(0.5) else ctx.rng.randint(1, m + 4)
            a = {"inverse": int(ctx.coin(0.5)), "onesided": 0, "dft_length": None if n == m and ctx.coin(0.5) else m}
            s[ax], s[-1] = n, ctx.choice((1, 2))
        a["axis"] = _spell(ctx, ax, r)
        return [out.with_shape(s)], a

    def backward_ranks(self, out):
        return (out.rank,)

    # -- shapes --------------------------------------------------------------------------
    @staticmethod
    def _length(a, n: int) -> int:
        """The transform's length L."""
        if a["dft_length"] is not None:
            return a["dft_length"]
        return 2 * (n - 1) if a["onesided"] and a["inverse"] else n

    def requires(self, ins, a):
        x = ins[0]
        r = x.rank
        if r < 2 or not (-r <= a["axis"] <= r - 2) or a["axis"] == -1:
            return [False]
        c, n = x.shape[-1], x.shape[a["axis"] % r]
        L = self._length(a, n)
        cons = [c in (1, 2), L >= 1]
        if a["onesided"]:
            cons.append(c == (2 if a["inverse"] else 1))
            if a["inverse"]:
                cons.append(L // 2 + 1 == n)  # IRFFT reads exactly the given bins
        return cons

    def infer(self, ins, a):
        x = ins[0]
        ax, n = a["axis"] % x.rank, x.shape[a["axis"]]
        L = self._length(a, n)
        m = L // 2 + 1 if a["onesided"] and not a["inverse"] else L
        c = 1 if a["onesided"] and a["inverse"] else 2
        s = list(x.shape)
        s[ax], s[-1] = m, c
        return [x.with_shape(s)]

    # -- lowering --------------------------------------------------------------------------
    def onnx(self, b, a, xs, ys):
        ins = [xs[0], b.const(np.asarray(a["dft_length"], dtype=_int_dtype(b))) if a["dft_length"] is not None else ""]
        attrs = {"inverse": b.opt(a["inverse"], 0), "onesided": b.opt(a["onesided"], 0)}
        if b.opset >= 20:
            if a["axis"] != -2 or b.rng.random() < 0.5:
                ins.append(b.const(np.asarray(a["axis"], dtype=np.int64)))
        else:
            attrs["axis"] = b.opt(a["axis"], 1)
        while ins[-1] == "":
            ins.pop()
        b.node("DFT", ins, ys, **attrs)

    def torch(self, a, x):
        ax = a["axis"] % x.dim()
        L = self._length(a, x.shape[ax])
        s = _complex(x)
        if a["onesided"] and a["inverse"]:
            y = torch.fft.irfft(s, n=L, dim=ax)
        elif a["onesided"]:
            y = torch.fft.rfft(s, n=L, dim=ax)
        elif a["inverse"]:
            y = torch.fft.ifft(s, n=L, dim=ax)
        else:
            y = torch.fft.fft(s, n=L, dim=ax)
        return _as_real(y, x.dtype)

    gaps: ClassVar[tuple] = (
        ("IRFFT with a dft_length that cuts or pads the one-sided spectrum (L // 2 + 1 != its length)",
         "ONNX does not say which bins are used; onnxruntime and numpy.fft.irfft differ"),
    )


def _spell(ctx, ax: int, rank: int) -> int:
    return ax - rank if ctx.coin(0.3) else ax


OPS = [DFT]
