from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_block._shared import _Block


class QuickGeluFusion(_Block):
    """``quick_gelu_fusion.cc``: ``x * Sigmoid(alpha * x)`` (alpha a constant scalar; 1
    without the Mul is SiluIdiom's) becomes ``com.microsoft:QuickGelu``; a Sigmoid of
    another tensor y than the one multiplied is left alone (y is added to the result
    either way)."""

    onnx_op = "Sigmoid"
    onnx_ops = ("Mul",)
    rewrite = "QuickGeluFusion"
    expects = ("transformer:QuickGeluFusion", "fused:com.microsoft:QuickGelu")
    arity = 2
    conditions = ("same_input", "dtype")

    def draw(self, ctx, ins, violate):
        return {"alpha": ctx.choice((1.702, 1.5, 2.0, 0.5))}

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0].with_dtype(dtype)

    def steps(self, a):
        other = In(1) if a["violate"] == "same_input" else In(0)
        return [Step("Mul", {}, (other, self.c(a, a["alpha"], "alpha"))), Step("Sigmoid", {}, (Out(0),)),
                Step("Mul", {}, (In(0), Out(1))), Step("Add", {}, (Out(2), In(1)))]

    def constant_input(self, a, i):
        return False  # a tensor of its own, never x itself


OPS = [QuickGeluFusion]
