from __future__ import annotations

from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import OrtMotif


class UnsqueezeElimination(OrtMotif):
    """``unsqueeze_elimination.cc``: an Unsqueeze of a constant initializer (read only by
    it) is folded into a reshaped initializer."""

    onnx_op = "Add"
    onnx_ops = ("Unsqueeze",)
    rewrite = "UnsqueezeElimination"
    expects = ("removed:Unsqueeze",)
    arity = 2
    ranks = (1, 2, 3, 4)
    conditions = ("input_constant",)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        k = ctx.int(1, x.rank)  # the constant: x's last k dims less one, unsqueezed back to 1 there
        pos = ctx.rng.randrange(k)
        return {"shape": tuple(d for j, d in enumerate(x.shape[x.rank - k:]) if j != pos), "axes": [pos]}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["shape"])

    def steps(self, a):
        return [Step("Unsqueeze", {"axes": a["axes"]}, (In(1),)), Step("Add", {}, (In(0), Out(0)))]

    def constant_input(self, a, i):
        return a["violate"] != "input_constant"


OPS = [UnsqueezeElimination]
