from __future__ import annotations

from typing import ClassVar

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.linalg._shared import product_bounds, sum_bounds
from dlgate.ops.linalg.gemm import plus_bounds
from dlgate.ops.transformer._shared import MAX_HEAD, _dims_ok, _mm, _w


class LinearTransposed(OpSpec):
    """A linear layer as exporters write it: ``Add(MatMul(x, Transpose(W)), bias)`` with W
    (out, in) and bias (out,)."""

    name = "LinearTransposed"
    onnx_op = "MatMul"
    onnx_ops: ClassVar[tuple] = ("Transpose", "Add")
    arity = 3
    ranks = (2, 3, 4)
    dtypes = tuple((t,) * 3 for t in dt.FLOATS)

    def sample(self, ctx, ins):
        return {"n": ctx.dim(MAX_HEAD)}

    def input_type(self, ctx, i, ins, a, dtype):
        k = ins[0].shape[-1]
        return TensorType(dtype, (a["n"], k) if i == 1 else (a["n"],))

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        k, n = ctx.dim(MAX_HEAD), out.shape[-1]
        t = out.dtype
        return [TensorType(t, tuple(out.shape[:-1]) + (k,)), TensorType(t, (n, k)), TensorType(t, (n,))], {"n": n}

    def requires(self, ins, a):
        x = ins[0]
        out = _dims_ok(ins[1].shape, (a["n"], x.shape[-1])) + _dims_ok(ins[2].shape, (a["n"],))
        if x.dtype == dt.FLOAT16:
            out.append(x.shape[-1] <= MAX_HEAD)
        return out

    def infer(self, ins, a):
        x = ins[0]
        return [TensorType(x.dtype, tuple(x.shape[:-1]) + (a["n"],))]

    def onnx(self, b, a, xs, ys):
        wt = b.node("Transpose", [xs[1]], 1, perm=[1, 0])[0]
        y = b.node("MatMul", [xs[0], wt], 1)[0]
        b.node("Add", [y, xs[2]], ys)

    def torch(self, a, x, w, bias):
        return (_w(_mm(x, w.t())) + _w(bias)).to(x.dtype)

    def value_range(self, a, ranges, ins):
        k = ins[0].shape[-1]
        return [plus_bounds(sum_bounds(product_bounds(ranges[0], ranges[1]), k, k), ranges[2])]


OPS = [LinearTransposed]
