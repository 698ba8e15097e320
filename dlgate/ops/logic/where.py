from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import IEEE, TensorType
from dlgate.ops.binary._shared import Elementwise, broadcast_partner, reduced_partner


class Where(Elementwise):
    """``y = cond ? x : y``; signature (bool, T, T); all three inputs broadcast together."""

    onnx_op = "Where"
    arity = 3

    def input_type(self, ctx, i, ins, a, dtype):
        # Partner of the broadcast of the inputs so far, so the third input always fits
        # both earlier ones (a dim is 1 there only where every earlier input has 1).
        base = ins[0].shape if ctx.symbolic else sym.broadcast(*(x.shape for x in ins))
        return TensorType(dtype, broadcast_partner(ctx, base))

    def backward(self, ctx, out):
        sigs = [s for s in self.dtypes if s[1] == out.dtype and s[0] in ctx.dtypes]
        if not sigs:
            return None
        sig = ctx.choice(sigs)
        full = ctx.rng.randrange(3)
        shapes = [out.shape if i == full else reduced_partner(ctx, out.shape) for i in range(3)]
        return [TensorType(t, s) for t, s in zip(sig, shapes)], {}

    def infer(self, ins, a):
        return [TensorType(ins[1].dtype, sym.broadcast(*(x.shape for x in ins)))]

    def torch(self, a, c, x, y):
        return torch.where(c, x, y)

    nonfinite = IEEE
    exact_values = True
    keeps_range = True  # each element is one of the branches'
    value_inputs = (1, 2)  # the condition only chooses

    def value_range(self, a, ranges, ins):
        (xlo, xhi), (ylo, yhi) = ranges[1], ranges[2]
        return [(min(xlo, ylo), max(xhi, yhi))]  # not the condition's


# Elementwise derives (T, T, T) signatures from ``arity``; Where's condition is bool.
Where.dtypes = tuple((dt.BOOL, t, t) for t in dt.ALL)


OPS = [Where]
