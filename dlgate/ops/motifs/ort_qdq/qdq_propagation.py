from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_qdq._shared import _QDQ, fq
from dlgate.ops.registry import get


class QDQPropagation(_QDQ):
    """``qdq_propagation.cc`` (level 1): a Q -> DQ pair before a Transpose, Reshape,
    Squeeze or Unsqueeze whose output is not quantized is copied past it."""

    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear", "Transpose", "Reshape", "Squeeze", "Unsqueeze")
    rewrite = "QDQPropagationTransformer"
    ranks = (1, 2, 3, 4)
    conditions = ("movement_op",)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        if violate == "movement_op":  # an op that computes: nothing to propagate past
            op, attrs = "Sigmoid", {}
        else:
            op = ctx.choice(("Transpose", "Reshape", "Unsqueeze"))
            attrs = get(op).sample(ctx, [x])
        return {"q": fq(ctx), "op": op, "attrs": attrs}

    def steps(self, a):
        return [Step("FakeQuant", a["q"], (In(0),)), Step(a["op"], a["attrs"], (Out(0),)), Step("Neg", {}, (Out(1),))]


OPS = [QDQPropagation]
