from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import OrtMotif


class CommonSubexpression(OrtMotif):
    """``common_subexpression_elimination.cc`` (level 1): two nodes of the same type, with
    the same attributes and inputs, are computed once."""

    onnx_op = "Add"
    onnx_ops = ("Sigmoid", "Softmax", "Mul")
    rewrite = "CommonSubexpressionElimination"
    arity = 1
    ranks = (1, 2, 3, 4)
    conditions = ("same_attributes",)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        first = ctx.choice((("Sigmoid", {}), ("Softmax", {"axis": x.rank - 1}), ("Mul2", {})))
        second = first
        if violate == "same_attributes":  # Softmax along another axis (rank 1: another op)
            first = ("Softmax", {"axis": x.rank - 1})
            second = ("Softmax", {"axis": 0}) if x.rank > 1 else ("Sigmoid", {})
        return {"ops": [list(first), list(second)]}

    def steps(self, a):
        out = []
        for op, attrs in a["ops"]:
            out.append(Step("Mul", {}, (In(0), In(0))) if op == "Mul2" else Step(op, attrs, (In(0),)))
        return out + [Step("Add", {}, (Out(0), Out(1)))]


OPS = [CommonSubexpression]
