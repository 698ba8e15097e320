from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import IEEE, INF, OpSpec, TensorType


class Size(OpSpec):
    """The input's element count as an int64 scalar; its values do not reach the output."""

    onnx_op = "Size"
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (0, 1, 2, 3, 4, 5)

    def backward(self, ctx, out):
        if out.dtype != dt.INT64 or out.rank != 0:
            return None
        types = [s[0] for s in self.dtypes if s[0] in ctx.dtypes]
        if not types:
            return None
        return [TensorType(ctx.choice(types), ctx.shape(ctx.rng.randint(0, ctx.limits.max_rank)))], {}

    def backward_ranks(self, out):
        return self.ranks

    def infer(self, ins, a):
        return [TensorType(dt.INT64, ())]

    def torch(self, a, x):
        return torch.tensor(x.numel(), dtype=torch.int64)

    nonfinite = IEEE
    integral_out = True
    value_inputs = ()

    def value_range(self, a, ranges, ins):
        n = ins[0].numel
        return [(1.0, INF)] if sym.is_sym(n) else [(float(n), float(n))]

    def exact(self, a, exacts, ins):
        n = ins[0].numel
        return None if sym.is_sym(n) else float(n)


OPS = [Size]
