"""Comparisons and boolean logic: element-wise with multidirectional broadcasting, bool
outputs; ``Not``; and ``Where``, which broadcasts its condition and both branches together."""
from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.spec import sym
from dlgate.spec.base import IEEE, INF_ONLY, TensorType
from dlgate.spec.binary import Elementwise, broadcast_partner, reduced_partner
from dlgate.spec.unary import Unary


class Compare(Elementwise):
    """``y = x1 <op> x2`` over broadcast inputs of one dtype; the output is bool."""
    jumps = True
    nonfinite = INF_ONLY  # ONNX does not say what a comparison with NaN gives

    types = dt.NUMERIC
    out_dtype = dt.BOOL


class Equal(Compare):
    """Integer and bool inputs only.

    Equality of *computed* floating-point values flips between compilers (fused or
    reordered arithmetic moves a value by one ulp and ``==`` turns it into a different
    bool, which then propagates as a discrete difference): NNSmith's lesson. The ordered
    comparisons have the same hazard only at ties, which are rare with continuous values.
    """

    onnx_op = "Equal"
    types = dt.INTS + (dt.BOOL,)
    fn = torch.eq


class Greater(Compare):
    onnx_op = "Greater"
    siblings = "order-comparison"
    fn = torch.gt


class Less(Compare):
    onnx_op = "Less"
    siblings = "order-comparison"
    fn = torch.lt


class GreaterOrEqual(Compare):
    onnx_op = "GreaterOrEqual"
    siblings = "order-comparison"
    fn = torch.ge


class LessOrEqual(Compare):
    onnx_op = "LessOrEqual"
    siblings = "order-comparison"
    fn = torch.le


class Logical(Elementwise):
    """``y = x1 <op> x2`` on bool tensors."""

    types = (dt.BOOL,)
    out_dtype = dt.BOOL


class And(Logical):
    onnx_op = "And"
    siblings = "logical"
    fn = torch.logical_and


class Or(Logical):
    onnx_op = "Or"
    siblings = "logical"
    fn = torch.logical_or


class Xor(Logical):
    onnx_op = "Xor"
    siblings = "logical"
    fn = torch.logical_xor


class Not(Unary):
    onnx_op = "Not"
    types = (dt.BOOL,)
    fn = torch.logical_not


class Where(Elementwise):
    """``y = cond ? x : y``; signature (bool, T, T); all three inputs broadcast together."""

    nonfinite = IEEE
    onnx_op = "Where"
    exact_values = True
    arity = 3
    keeps_range = True  # each element is one of the branches'
    value_inputs = (1, 2)  # the condition only chooses

    def input_type(self, ctx, i, ins, a, dtype):
        # Partner of the broadcast of the inputs so far, so the third input always fits
        # both earlier ones (a dim is 1 there only where every earlier input has 1).
        base = ins[0].shape if ctx.symbolic else sym.broadcast(*(x.shape for x in ins))
        return TensorType(dtype, broadcast_partner(ctx, base))

    def infer(self, ins, a):
        return [TensorType(ins[1].dtype, sym.broadcast(*(x.shape for x in ins)))]

    def backward(self, ctx, out):
        sigs = [s for s in self.dtypes if s[1] == out.dtype and s[0] in ctx.dtypes]
        if not sigs:
            return None
        sig = ctx.choice(sigs)
        full = ctx.rng.randrange(3)
        shapes = [out.shape if i == full else reduced_partner(ctx, out.shape) for i in range(3)]
        return [TensorType(t, s) for t, s in zip(sig, shapes)], {}

    def value_range(self, a, ranges, ins):
        (xlo, xhi), (ylo, yhi) = ranges[1], ranges[2]
        return [(min(xlo, ylo), max(xhi, yhi))]  # not the condition's

    def torch(self, a, c, x, y):
        return torch.where(c, x, y)


# Elementwise derives (T, T, T) signatures from ``arity``; Where's condition is bool.
Where.dtypes = tuple((dt.BOOL, t, t) for t in dt.ALL)


OPS = [Equal, Greater, Less, GreaterOrEqual, LessOrEqual, And, Or, Xor, Not, Where]
