from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import OrtMotif


class TransposeCancel(OrtMotif):
    """``transpose_optimizer`` (level 1): a Transpose pushed through an element-wise node
    meets its inverse and both vanish."""

    onnx_op = "Transpose"
    onnx_ops = ("Sigmoid",)
    rewrite = "TransposeOptimizer"
    expects = ("transformer:TransposeOptimizer", "removed:Transpose")
    arity = 1
    ranks = (2, 3, 4, 5)
    conditions = ()

    def draw(self, ctx, ins, violate):
        r = ins[0].rank
        perm = ctx.perm(r)
        if perm == list(range(r)):
            perm = perm[1:] + perm[:1]
        return {"perm": perm, "inverse": [perm.index(i) for i in range(r)]}

    def steps(self, a):
        return [Step("Transpose", {"perm": a["perm"], "omit": False}, (In(0),)), Step("Sigmoid", {}, (Out(0),)),
                Step("Transpose", {"perm": a["inverse"], "omit": False}, (Out(1),))]


OPS = [TransposeCancel]
