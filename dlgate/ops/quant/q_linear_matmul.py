from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import TensorType
from dlgate.ops.linalg.matmul import MatMul
from dlgate.ops.quant._shared import (CYCLE, F16, F32, INT_PAIRS, QR, QTYPES, U8, _Y_TYPE, _cycled, _matmul_backward,
                                      _mult, _requant, _zp, _zp_before_rounding, _zp_const)


class QLinearMatMul(MatMul):
    """``saturate(round((a - a_zp) @ (b - b_zp) * a_scale * b_scale / y_scale) + y_zp)``;
    scales and zero points constants: a per tensor, b per tensor or per column (vectors of
    N, B of rank 2 or more), y per tensor; float16 scales from opset 21. Every scale is a
    power of two (see the module docstring), y of a's type."""

    onnx_op = "QLinearMatMul"
    schema_inputs = (0, 3)
    dtypes = INT_PAIRS

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0], ctx.choice(QTYPES), ctx.dim(16))

    def _attrs(self, ctx, x: TensorType, tb: str, n: int) -> dict:
        ta = yt = x.dtype
        za, zb = _zp(ctx, ta), _zp(ctx, tb)
        ea, eb = ctx.rng.randint(-8, -3), ctx.rng.randint(-8, -3)
        k = x.shape[-1] if x.rank else 1
        mag = lambda z, t: abs(z - 8) + 4 if t == U8 else abs(z) + 5  # noqa: E731  (inputs are small)
        m = _mult(ctx, k if not sym.is_sym(k) else 16, mag(za, ta), mag(zb, tb))
        per_col = ctx.coin(0.3)
        ebs = [eb + ctx.rng.randint(-1, 1) for _ in range(CYCLE)] if per_col else None
        return {"at": ta, "bt": tb, "yt": yt, "n": n, "za": za, "zb": [_zp(ctx, tb) for _ in range(CYCLE)]
                if per_col and ctx.coin(0.5) else zb, "ea": ea, "eb": ebs if per_col else eb, "ey": ea + eb - m,
                "zy": _zp(ctx, yt), "f16": ctx.opset >= 21 and ctx.coin(0.3)}

    def input_type(self, ctx, i, ins, a, dtype):
        t = super().input_type(ctx, i, ins, a, dtype)
        return t if t.rank < 2 else t.with_shape(tuple(t.shape[:-1]) + (a["n"],))

    def backward(self, ctx, out):
        if out.dtype not in QTYPES:
            return None
        res = _matmul_backward(ctx, out, [s for s in self.dtypes if s[0] == out.dtype])
        if res is None:
            return None
        x, y = res
        return [x, y], self._attrs(ctx, x, y.dtype, y.shape[-1] if y.rank >= 2 else 1)

    def requires(self, ins, a):
        cons = super().requires(ins, a)
        col = isinstance(a["eb"], list) or isinstance(a["zb"], list)
        if col and (ins[1].rank != 2 or ins[1].shape[-1] != a["n"]):
            return [False]
        return cons + [a["at"] == ins[0].dtype, a["bt"] == ins[1].dtype]

    def infer(self, ins, a):
        return [t.with_dtype(a["yt"]) for t in super().infer(ins, a)]

    def _col(self, a, key, n):
        v = a[key]
        return _cycled(v, n) if isinstance(v, list) else v

    def onnx(self, b, a, xs, ys):
        sdt = dt.NUMPY[F16 if a["f16"] else F32]
        n = a["n"]
        sc = lambda e: b.const(np.asarray(2.0 ** np.asarray(e, dtype=np.float64), dtype=sdt))  # noqa: E731
        eb = self._col(a, "eb", n)
        zb = self._col(a, "zb", n)
        if isinstance(eb, list) != isinstance(zb, list):  # scale and zero point share one shape
            eb = eb if isinstance(eb, list) else [eb] * n
            zb = zb if isinstance(zb, list) else [zb] * n
        ins = [xs[0], sc(a["ea"]), _zp_const(b, a["za"], a["at"]), xs[1], sc(eb), _zp_const(b, zb, a["bt"]),
               sc(a["ey"]), _zp_const(b, a["zy"], a["yt"])]
        b.node("QLinearMatMul", ins, ys)

    def torch(self, a, x, y):
        n = y.shape[-1]
        zb = self._col(a, "zb", n)
        eb = self._col(a, "eb", n)
        xa = x.long() - a["za"]
        yb = y.long() - torch.tensor(zb, dtype=torch.int64)
        acc = torch.matmul(xa, yb)
        eb = torch.tensor(eb, dtype=torch.float64)
        if y.dim() < 2:
            eb = eb.reshape(())
        mult = torch.pow(2.0, a["ea"] + eb - a["ey"])
        return _requant(acc, mult, a["zy"], a["yt"])

    can_overflow = False
    keeps_integers = False
    jumps = True
    gaps: ClassVar[tuple] = (
        ("per-row a scales and zero points ([.., M, 1])", "onnxruntime refuses them (QLinearMatMul: "
                                                           "'IsScalarOr1ElementVector(a_scale)')"),
        ("per-column b scales and zero points for a batched B", "onnxruntime wants [D.., 1, N] there ('weight zero "
                                                                "point must be a scalar, 1D tensor of size 1, or "
                                                                "last to second dimension is 1'); see MatMulInteger"),
        ("scales that are not powers of two", "the requantization's precision is unspecified; rounding at .5 "
                                              "would depend on it"),
        ("float8 operands, bfloat16 scales", "dlgate has no such dtypes"),
        ("y of another type than a", _Y_TYPE),
    )

    def value_range(self, a, ranges, ins):
        return [tuple(float(v) for v in QR[a["yt"]])]

    def input_span(self, a, i, span, ins):
        return None

    def reference_defect(self, a, ins, opset):
        return _zp_before_rounding(a["zy"], a["ea"], a["eb"], a["ey"], "QLinearMatMul")


OPS = [QLinearMatMul]
