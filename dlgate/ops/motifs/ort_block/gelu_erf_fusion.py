from __future__ import annotations

import math

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_block._shared import _Block
from dlgate.ops.motifs.ort_common import F16, F32


class GeluErfFusion(_Block):
    """``gelu_fusion.cc`` (``GeluFusionL1`` into the standard Gelu from opset 20,
    ``GeluFusionL2`` into the contrib one): ``x * (Erf(x / sqrt(2)) + 1) * 0.5`` (as
    GeluErfIdiom writes it) becomes Gelu (float16 only from opset 20, into the standard
    one); with the divisor off sqrt(2) it is no Gelu and must stay."""

    onnx_op = "Erf"
    onnx_ops = ("Div", "Add", "Mul")
    rewrite = "GeluFusion"
    expects = ("transformer:GeluFusionL1", "transformer:GeluFusionL2")
    types = (F32, F16)  # no float64 Erf kernel on the CPU
    conditions = ("sqrt2", "dtype")

    def outside(self, ctx, ins):
        # float16 is fused only into the standard Gelu, which opset 20 brings
        return "dtype" if ins[0].dtype == F16 and ctx.opset < 20 else None

    def draw(self, ctx, ins, violate):
        return {"c": ctx.choice((1.5, 1.3, 2.0)) if violate == "sqrt2" else math.sqrt(2.0)}

    def steps(self, a):
        c = lambda v: self.c(a, v)  # noqa: E731
        return [Step("Div", {}, (In(0), c(a["c"]))), Step("Erf", {}, (Out(0),)), Step("Add", {}, (Out(1), c(1.0))),
                Step("Mul", {}, (In(0), Out(2))), Step("Mul", {}, (Out(3), c(0.5)))]


OPS = [GeluErfFusion]
