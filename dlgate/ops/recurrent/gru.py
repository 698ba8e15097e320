from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.recurrent._shared import GATED_GAPS, _Recurrent


class GRU(_Recurrent):
    """``zt, rt`` = f(.), ``ht`` = g(.) with the reset applied before (default) or after
    (``linear_before_reset``) the recurrence's product, ``Ht = (1 - zt) ht + zt Ht-1``.
    No float64, as for LSTM."""

    onnx_op = "GRU"
    types = (dt.FLOAT32, dt.FLOAT16)
    gates = 3
    acts = ("Sigmoid", "Tanh")

    def _extra(self, ctx, a):
        a["linear_before_reset"] = int(ctx.coin(0.5))

    def onnx_attrs(self, a, b):
        return {**super().onnx_attrs(a, b), "linear_before_reset": b.opt(a["linear_before_reset"], 0)}

    gaps = _Recurrent.gaps + GATED_GAPS + (
        ("float64", "onnxruntime's GRU throws RUNTIME_EXCEPTION \"GRU operator does not support double "
                    "yet\" (not NOT_IMPLEMENTED), which the spec checks do not accept as unsupported"),)

    def _step(self, a, fns, x, w, r, bias, p, h, c):
        f, g = fns
        n = a["hidden_size"]
        wb, rb = bias[:3 * n], bias[3 * n:]
        xw = x @ w.T + wb
        blk = lambda v, k: v[..., k * n:(k + 1) * n]  # noqa: E731
        hr = h @ r[:2 * n].T + rb[:2 * n]
        z = f(blk(xw, 0) + blk(hr, 0))
        rt = f(blk(xw, 1) + blk(hr, 1))
        if a["linear_before_reset"]:
            ht = g(blk(xw, 2) + rt * (h @ blk(r.T, 2) + blk(rb, 2)))
        else:
            ht = g(blk(xw, 2) + (rt * h) @ blk(r.T, 2) + blk(rb, 2))
        return (1 - z) * ht + z * h, c


OPS = [GRU]
