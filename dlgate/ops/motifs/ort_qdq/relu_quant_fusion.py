from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_qdq._shared import I8, _QDQ, U8, fq
from dlgate.ops.quant._shared import QR


class ReluQuantFusion(_QDQ):
    """``relu_quantizelinear.cc`` (a level-2 rule): a Relu read only by a QuantizeLinear
    whose zero point is its type's minimum (uint8 0, int8 -128) is dropped: the Q
    saturates negative values to that zero point anyway."""

    onnx_op = "Relu"
    onnx_ops = ("QuantizeLinear", "DequantizeLinear")
    rewrite = "ReluQuantFusion"
    expects = ("removed:Relu",)
    level = "extended"
    conditions = ("zero_point_min",)

    def draw(self, ctx, ins, violate):
        qt = ctx.choice((I8, U8))
        lo = QR[qt][0]
        return {"q": fq(ctx, qt, z=lo + ctx.rng.randint(1, 8) if violate == "zero_point_min" else lo)}

    def steps(self, a):
        return [Step("Neg", {}, (In(0),)), Step("Relu", {}, (Out(0),)), Step("FakeQuant", a["q"], (Out(1),)),
                Step("Neg", {}, (Out(2),))]


OPS = [ReluQuantFusion]
