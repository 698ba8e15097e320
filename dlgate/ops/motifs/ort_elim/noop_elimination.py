from __future__ import annotations

import numpy as np

from dlgate import dtypes as dt
from dlgate.ops.motif import Const, In, Out, Step
from dlgate.ops.motifs.ort_common import OrtMotif


class NoopElimination(OrtMotif):
    """``noop_elimination.cc``: Add or Sub of 0, Mul or Div by 1, the constant of one
    element (shapes that would broadcast the other input are left alone)."""

    onnx_op = "Add"
    onnx_ops = ("Sub", "Mul", "Div")
    rewrite = "NoopElimination"
    expects = ("removed:Add", "removed:Sub", "removed:Mul", "removed:Div")
    arity = 1
    ranks = (1, 2, 3, 4, 5)
    conditions = ("neutral", "one_element")
    loose = ("one_element",)  # an input of one element takes the constant's shape

    def draw(self, ctx, ins, violate):
        op = ctx.choice(("Add", "Sub", "Mul", "Div"))
        neutral = 0.0 if op in ("Add", "Sub") else 1.0
        value = neutral + ctx.choice((0.5, 1.0, -2.0)) if violate == "neutral" else neutral
        x = ins[0]
        if violate == "one_element":
            shape = tuple(x.shape)  # the neutral value, once per element
        else:
            shape = () if ctx.coin() or not x.rank else (1,) * ctx.int(1, x.rank)
        return {"op": op, "value": value, "shape": shape, "dtype": x.dtype}

    def steps(self, a):
        c = Const(np.full(a["shape"], a["value"], dtype=dt.NUMPY[a["dtype"]]), "noop")
        return [Step("Neg", {}, (In(0),)), Step(a["op"], {}, (Out(0), c)), _neg(1)]


def _neg(j: int) -> Step:
    return Step("Neg", {}, (Out(j),))


OPS = [NoopElimination]
