from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import INF, OpSpec, TensorType
from dlgate.ops.linalg._shared import MAX_K, product_bounds, _small_k, sum_bounds


# -- Gemm -----------------------------------------------------------------------------------
#: Forms of C, unidirectionally broadcastable to (M, N).
C_FORMS = ("scalar", "1", "N", "1N", "M1", "MN", "11")


class Gemm(OpSpec):
    """``Y = alpha * A' @ B' + beta * C`` with optional transposes; C broadcast to (M, N)."""

    onnx_op = "Gemm"
    arity = 3
    dtypes = tuple((t, t, t) for t in dt.FLOATS)
    ranks = (2,)

    def _scalar(self, ctx):
        return ctx.choice((1.0, 1.0, 0.5, 2.0, -1.0, ctx.uniform(-2.0, 2.0)))

    def sample(self, ctx, ins):
        a = {"transA": int(ctx.coin()), "transB": int(ctx.coin()), "alpha": self._scalar(ctx)}
        if self.arity == 3:
            a["beta"] = self._scalar(ctx)
        return a

    @staticmethod
    def _mk(ins, a):
        s = ins[0].shape
        return (s[1], s[0]) if a["transA"] else (s[0], s[1])

    def input_type(self, ctx, i, ins, a, dtype):
        m, k = self._mk(ins, a)
        if i == 1:
            n = ctx.dim(16)
            return TensorType(dtype, (n, k) if a["transB"] else (k, n))
        return TensorType(dtype, _c_shape(ctx.choice(C_FORMS), m, self._n(ins, a)))

    def _n(self, ins, a):
        if ins[1].rank != 2:  # a reused B of the wrong rank; requires rejects it
            return 1
        return ins[1].shape[0] if a["transB"] else ins[1].shape[1]

    def backward(self, ctx, out):
        if out.rank != 2 or out.dtype not in dt.FLOATS:
            return None
        (m, n), t, k = out.shape, out.dtype, ctx.dim(MAX_K)
        a = self.sample(ctx, None)
        ins = [TensorType(t, (k, m) if a["transA"] else (m, k)), TensorType(t, (n, k) if a["transB"] else (k, n))]
        if self.arity == 3:
            ins.append(TensorType(t, _c_shape(ctx.choice(C_FORMS), m, n)))
        return ins, a

    def requires(self, ins, a):
        m, k = self._mk(ins, a)
        if ins[1].rank != 2:
            return [False]
        kb = ins[1].shape[1] if a["transB"] else ins[1].shape[0]
        out = [k == kb] + _small_k(k, ins[0].dtype)
        if self.arity == 3:
            c, n = ins[2].shape, self._n(ins, a)
            if len(c) > 2:
                return [False]
            out += [sym.Or(d == 1, d == e) for d, e in zip(c[::-1], (n, m))]
        return out

    def infer(self, ins, a):
        m, _ = self._mk(ins, a)
        return [TensorType(ins[0].dtype, (m, self._n(ins, a)))]

    def onnx_attrs(self, a, b):
        out = {"transA": b.opt(a["transA"], 0), "transB": b.opt(a["transB"], 0), "alpha": b.opt(a["alpha"], 1.0)}
        if "beta" in a:
            out["beta"] = b.opt(a["beta"], 1.0)
        return out

    def torch(self, a, x, y, c=None):
        if a["transA"]:
            x = x.t()
        if a["transB"]:
            y = y.t()
        out = torch.matmul(x, y) * a["alpha"]
        if c is not None:
            out = out + c * a["beta"]
        return out

    can_overflow = True

    def value_range(self, a, ranges, ins):
        # alpha times a sum of exactly K products, plus beta times one element of C
        k = self._mk(ins, a)[1]
        alpha = (a["alpha"], a["alpha"])
        y = product_bounds(alpha, sum_bounds(product_bounds(ranges[0], ranges[1]), k, k))
        if self.arity == 3:
            y = plus_bounds(y, product_bounds((a["beta"], a["beta"]), ranges[2]))
        return [y]


class GemmNoC(Gemm):
    """Gemm with the optional C input omitted."""

    name = "GemmNoC"
    arity = 2
    dtypes = tuple((t, t) for t in dt.FLOATS)


def plus_bounds(r: tuple, q: tuple) -> tuple:
    """Bounds of ``x + y`` (a side that would be ``inf - inf`` is left unbounded)."""
    lo, hi = r[0] + q[0], r[1] + q[1]
    return (lo if lo == lo else -INF, hi if hi == hi else INF)


def _c_shape(form, m, n):
    return {"scalar": (), "1": (1,), "N": (n,), "1N": (1, n), "M1": (m, 1), "MN": (m, n), "11": (1, 1)}[form]


OPS = [Gemm, GemmNoC]
