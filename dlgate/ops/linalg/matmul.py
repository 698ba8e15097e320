from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.binary._shared import broadcast_partner, reduced_partner
from dlgate.ops.linalg._shared import MAX_K, product_bounds, product_span, _small_k, sum_bounds


class MatMul(OpSpec):
    """``numpy.matmul``: batch broadcasting, 1-D operands promoted and their dim removed."""
    onnx_op = "MatMul"
    arity = 2
    dtypes = tuple((t, t) for t in dt.FLOATS + dt.COMMON_INTS)
    ranks = (1, 2, 3, 4, 5)

    def input_type(self, ctx, i, ins, a, dtype):
        x = ins[0].shape
        k = x[-1]
        maxr = ctx.limits.max_rank
        if len(x) == 1:
            if ctx.coin(0.3):
                return TensorType(dtype, (k,))
            r = ctx.rng.randint(2, maxr)
            batch = tuple(ctx.dim(4) for _ in range(r - 2))
            return TensorType(dtype, batch + (k, ctx.dim(16)))
        if ctx.coin(0.2):
            return TensorType(dtype, (k,))
        batch = broadcast_partner(ctx, x[:-2])[-(maxr - 2):] if maxr > 2 else ()
        return TensorType(dtype, tuple(batch) + (k, ctx.dim(16)))

    def backward(self, ctx, out):
        if out.dtype not in (s[0] for s in self.dtypes):
            return None
        t, s, r, maxr = out.dtype, out.shape, out.rank, ctx.limits.max_rank
        k = ctx.dim(MAX_K)
        forms = []
        if r == 0:
            forms.append("vv")
        if 1 <= r <= maxr - 1:
            forms += ["vm", "mv"]
        if r >= 2:
            forms += ["mm", "mm", "mm"]
        if not forms:
            return None
        f = ctx.choice(forms)
        if f == "vv":
            return [TensorType(t, (k,)), TensorType(t, (k,))], {}
        if f == "vm":
            return [TensorType(t, (k,)), TensorType(t, tuple(s[:-1]) + (k, s[-1]))], {}
        if f == "mv":
            return [TensorType(t, tuple(s) + (k,)), TensorType(t, (k,))], {}
        batch = tuple(s[:-2])
        full = ctx.coin()
        ba = batch if full else reduced_partner(ctx, batch)
        bb = reduced_partner(ctx, batch) if full else batch
        return [TensorType(t, ba + (s[-2], k)), TensorType(t, bb + (k, s[-1]))], {}

    def requires(self, ins, a):
        x, y = ins[0].shape, ins[1].shape
        if len(y) == 0:
            return [False]
        kb = y[0] if len(y) == 1 else y[-2]
        out = [x[-1] == kb] + _small_k(x[-1], ins[0].dtype)
        if len(x) >= 2 and len(y) >= 2:
            out += sym.broadcastable(x[:-2], y[:-2])
        return out

    def infer(self, ins, a):
        x, y = ins[0].shape, ins[1].shape
        if len(x) == 1 and len(y) == 1:
            shape = ()
        elif len(x) == 1:
            shape = tuple(y[:-2]) + (y[-1],)
        elif len(y) == 1:
            shape = tuple(x[:-1])
        else:
            shape = sym.broadcast(x[:-2], y[:-2]) + (x[-2], y[-1])
        return [TensorType(ins[0].dtype, shape)]

    def torch(self, a, x, y):
        return torch.matmul(x, y)

    keeps_integers = True

    can_overflow = True

    def value_range(self, a, ranges, ins):
        # every output is a sum of exactly K products x * y (K: the contracted dim)
        k = ins[0].shape[-1]
        return [sum_bounds(product_bounds(ranges[0], ranges[1]), k, k)]

    def input_span(self, a, i, span, ins):
        return product_span(i, span, ins[0].shape[-1])


OPS = [MatMul]
