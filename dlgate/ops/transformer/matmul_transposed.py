from __future__ import annotations

from typing import ClassVar

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.linalg._shared import product_bounds, sum_bounds
from dlgate.ops.transformer._shared import MAX_HEAD, _dims_ok, _mm


class MatMulTransposed(OpSpec):
    """``MatMul`` with Transpose (perm swapping the last two axes) on either operand, as
    exporters write ``x @ w.T`` and ``a.transpose(-1, -2) @ b``: A (..., M, K) or its
    transpose (..., K, M); B (..., N, K) transposed, or (..., K, N); B 2-D (a weight) or
    with A's batch dims."""

    name = "MatMulTransposed"
    onnx_op = "MatMul"
    onnx_ops: ClassVar[tuple] = ("Transpose",)
    arity = 2
    ranks = (2, 3, 4)
    symbolic_ok = False
    dtypes = tuple((t, t) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        ta = ctx.coin(0.4)
        a = {"trans_a": int(ta), "trans_b": int(not ta or ctx.coin()), "n": ctx.dim(MAX_HEAD),
             "b_batch": int(ins[0].rank > 2 and ctx.coin())}
        a.update(rank_a=ins[0].rank, rank_b=len(self._bshape(ins[0].shape, a)))
        return a

    def _k(self, a, x):
        return x[-2] if a["trans_a"] else x[-1]

    def _bshape(self, x: tuple, a) -> tuple:
        k, n = self._k(a, x), a["n"]
        last = (n, k) if a["trans_b"] else (k, n)
        return (tuple(x[:-2]) if a["b_batch"] else ()) + last

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._bshape(ins[0].shape, a))

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        *batch, m, n = out.shape
        k = ctx.dim(MAX_HEAD)
        ta = ctx.coin(0.4)
        a = {"trans_a": int(ta), "trans_b": int(not ta or ctx.coin()), "n": n, "b_batch": int(bool(batch) and ctx.coin())}
        x = TensorType(out.dtype, tuple(batch) + ((k, m) if ta else (m, k)))
        w = TensorType(out.dtype, self._bshape(x.shape, a))
        a.update(rank_a=x.rank, rank_b=w.rank)
        return [x, w], a

    def requires(self, ins, a):
        x = ins[0]
        out = _dims_ok(ins[1].shape, self._bshape(x.shape, a)) + [x.rank == a["rank_a"]]
        if x.dtype == dt.FLOAT16:
            out.append(self._k(a, x.shape) <= MAX_HEAD)
        return out

    def infer(self, ins, a):
        x = ins[0].shape
        m = x[-1] if a["trans_a"] else x[-2]
        return [TensorType(ins[0].dtype, tuple(x[:-2]) + (m, a["n"]))]

    def onnx(self, b, a, xs, ys):
        x, w = xs
        if a["trans_a"]:
            r = a["rank_a"]
            x = b.node("Transpose", [x], 1, perm=list(range(r - 2)) + [r - 1, r - 2])[0]
        if a["trans_b"]:
            r = a["rank_b"]
            w = b.node("Transpose", [w], 1, perm=list(range(r - 2)) + [r - 1, r - 2])[0]
        b.node("MatMul", [x, w], ys)

    def torch(self, a, x, w):
        if a["trans_a"]:
            x = x.transpose(-1, -2)
        if a["trans_b"]:
            w = w.transpose(-1, -2)
        return _mm(x, w)

    def value_range(self, a, ranges, ins):
        k = self._k(a, ins[0].shape)
        return [sum_bounds(product_bounds(ranges[0], ranges[1]), k, k)]


OPS = [MatMulTransposed]
