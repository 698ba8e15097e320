from __future__ import annotations

import math

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_block._shared import _Block


KAPPA, BETA = 0.044715, math.sqrt(2.0 / math.pi)


class FastGeluFusion(_Block):
    """``fast_gelu_fusion.cc``: Gelu's tanh approximation in the two spellings the fusion
    matches, ``0.5x * (1 + tanh(0.7978845834732056x * (1 + 0.044715x*x)))`` (Megatron) and
    ``0.5x * (1 + tanh(0.7978845834732056 * (x + 0.044715 * Pow(x, 3))))``, becomes
    ``com.microsoft:FastGelu``. (GeluTanhIdiom's ``0.5 * (x * (1 + tanh(...)))`` groups the
    final product otherwise and is left alone.)"""

    onnx_op = "Tanh"
    onnx_ops = ("Mul", "Add", "Pow")
    rewrite = "FastGeluFusion"
    expects = ("transformer:FastGeluFusion", "fused:com.microsoft:FastGelu")
    conditions = ("constant", "dtype")

    def draw(self, ctx, ins, violate):
        return {"form": ctx.choice(("megatron", "pow")), "kappa": 0.05 if violate == "constant" else KAPPA}

    def steps(self, a):
        c = lambda v: self.c(a, v)  # noqa: E731
        x = In(0)
        if a["form"] == "megatron":
            s = [Step("Mul", {}, (x, c(a["kappa"]))), Step("Mul", {}, (Out(0), x)), Step("Add", {}, (Out(1), c(1.0))),
                 Step("Mul", {}, (x, c(BETA))), Step("Mul", {}, (Out(2), Out(3)))]
        else:
            s = [Step("Pow", {}, (x, c(3.0))), Step("Mul", {}, (Out(0), c(a["kappa"]))), Step("Add", {}, (x, Out(1))),
                 Step("Mul", {}, (Out(2), c(BETA)))]
        k = len(s)
        # the fused product must not be a graph output: a Neg reads it
        return s + [Step("Tanh", {}, (Out(k - 1),)), Step("Add", {}, (Out(k), c(1.0))),
                    Step("Mul", {}, (x, c(0.5))), Step("Mul", {}, (Out(k + 1), Out(k + 2))), Step("Neg", {}, (Out(k + 3),))]


OPS = [FastGeluFusion]
