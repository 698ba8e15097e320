from __future__ import annotations

from typing import ClassVar

import torch

from dlgate.ops.base import TensorType
from dlgate.ops.linalg._shared import product_bounds, sum_bounds
from dlgate.ops.linalg.matmul import MatMul
from dlgate.ops.quant._shared import (CYCLE, I32, INT_PAIRS, QR, QTYPES, _cycled, _matmul_backward, _shifted, _zp,
                                      _zp_const)


class MatMulInteger(MatMul):
    """``(A - a_zero_point) @ (B - b_zero_point)`` accumulated in int32, NumPy matmul
    shapes; a_zero_point absent or a scalar (spelled as a scalar or a 1-element vector),
    b_zero_point absent, a scalar or per column (a vector of N, for B of rank 2 and more).
    Sums stay far inside int32 (at most 256 products of at most 255 * 255)."""

    onnx_op = "MatMulInteger"
    dtypes = INT_PAIRS

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0].dtype, ctx.choice(QTYPES), ctx.dim(16))

    def _attrs(self, ctx, ta: str, tb: str, n: int) -> dict:
        a = {"za": _zp(ctx, ta) if ctx.coin(0.6) else None, "za1": ctx.coin(0.3), "at": ta, "bt": tb,
             "zb": None, "zb1": ctx.coin(0.3), "n": n}
        kind = ctx.choice(("none", "scalar", "scalar", "col"))
        if kind == "scalar":
            a["zb"] = _zp(ctx, tb)
        elif kind == "col":
            a["zb"] = [_zp(ctx, tb) for _ in range(CYCLE)]
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        t = super().input_type(ctx, i, ins, a, dtype)
        return t if t.rank < 2 else t.with_shape(tuple(t.shape[:-1]) + (a["n"],))

    def backward(self, ctx, out):
        if out.dtype != I32:
            return None
        res = _matmul_backward(ctx, out, self.dtypes)
        if res is None:
            return None
        x, y = res
        return [x, y], self._attrs(ctx, x.dtype, y.dtype, y.shape[-1] if y.rank >= 2 else 1)

    def requires(self, ins, a):
        cons = super().requires(ins, a)
        if isinstance(a["zb"], list) and (ins[1].rank != 2 or ins[1].shape[-1] != a["n"]):
            return [False]
        return cons + [a["at"] == ins[0].dtype, a["bt"] == ins[1].dtype]

    def infer(self, ins, a):
        return [t.with_dtype(I32) for t in super().infer(ins, a)]

    def _zb(self, a, n):
        return _cycled(a["zb"], n) if isinstance(a["zb"], list) else a["zb"]

    def onnx(self, b, a, xs, ys):
        za = "" if a["za"] is None else _zp_const(b, a["za"], a["at"], a["za1"])
        zb = "" if a["zb"] is None else _zp_const(b, self._zb(a, a["n"]), a["bt"], a["zb1"])
        ins = list(xs) + [za, zb]
        while ins[-1] == "":
            ins.pop()
        b.node("MatMulInteger", ins, ys)

    def torch(self, a, x, y):
        xa = x.long() - (a["za"] or 0)
        yb = y.long()
        if a["zb"] is not None:
            yb = yb - torch.tensor(self._zb(a, y.shape[-1]), dtype=torch.int64)
        return torch.matmul(xa, yb).to(torch.int32)

    can_overflow = False
    keeps_integers = False
    gaps: ClassVar[tuple] = (
        ("per-row a_zero_point (a vector of M, or [.., M, 1])",
         "onnxruntime refuses it ('IsScalarOr1ElementVector(a_zero_point) was false') and onnx.reference cannot "
         "broadcast a vector of M against A"),
        ("per-column b_zero_point for a batched B", "onnxruntime refuses a vector of N there ('B zero point is not "
                                                    "valid') and wants [D.., 1, N], which the lowering cannot write "
                                                    "(B's batch dims are drawn after the attributes)"),
    )

    def value_range(self, a, ranges, ins):
        k = ins[0].shape[-1]
        zb = a["zb"] if isinstance(a["zb"], list) else (None if a["zb"] is None else [a["zb"]])
        ra = _shifted(ranges[0], ins[0].dtype, None if a["za"] is None else [a["za"]])
        rb = _shifted(ranges[1], ins[1].dtype, zb)
        return [sum_bounds(product_bounds(ra, rb), k, k)]

    def input_span(self, a, i, span, ins):
        return None


class MatMulIntegerZp(MatMulInteger):
    """MatMulInteger whose a_zero_point is a third tensor input, a scalar of A's type
    computed in the graph (DynamicQuantizeLinear's y_zero_point, as dynamic quantization
    writes it); b_zero_point as MatMulInteger's. Any zero point value is valid."""

    name = "MatMulIntegerZp"
    arity = 3
    dtypes = tuple((ta, tb, ta) for ta, tb in INT_PAIRS)

    def sample(self, ctx, ins):
        return dict(super().sample(ctx, ins), za=None)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, ()) if i == 2 else super().input_type(ctx, i, ins, a, dtype)

    def backward(self, ctx, out):
        res = _matmul_backward(ctx, out, INT_PAIRS) if out.dtype == I32 else None
        if res is None:
            return None
        x, y = res
        a = self._attrs(ctx, x.dtype, y.dtype, y.shape[-1] if y.rank >= 2 else 1)
        return [x, y, TensorType(x.dtype, ())], dict(a, za=None)

    def requires(self, ins, a):
        return super().requires(ins[:2], a) + [len(ins) == 3 and ins[2].rank == 0 and ins[2].dtype == ins[0].dtype]

    def infer(self, ins, a):
        return super().infer(ins[:2], a)

    def onnx(self, b, a, xs, ys):
        zb = "" if a["zb"] is None else _zp_const(b, self._zb(a, a["n"]), a["bt"], a["zb1"])
        b.node("MatMulInteger", list(xs[:3]) + ([zb] if zb else []), ys)

    def torch(self, a, x, y, za):
        return super().torch(a, x.long() - za.long(), y)

    def value_range(self, a, ranges, ins):
        k = ins[0].shape[-1]
        zb = a["zb"] if isinstance(a["zb"], list) else (None if a["zb"] is None else [a["zb"]])
        lo, hi = QR[ins[0].dtype]
        za = (max(lo, ranges[2][0]), min(hi, ranges[2][1]))
        ra = _shifted(ranges[0], ins[0].dtype, za)
        rb = _shifted(ranges[1], ins[1].dtype, zb)
        return [sum_bounds(product_bounds(ra, rb), k, k)]


OPS = [MatMulInteger, MatMulIntegerZp]
