from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_qdq._shared import _QDQ, fq


class EnsureUniqueDQ(_QDQ):
    """``ensure_unique_dq_for_node_unit.cc`` (before level 1, and in it): a DQ read by two
    nodes is duplicated, one copy each, so every node unit owns its DQ."""

    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear", "Relu", "Neg")
    rewrite = "EnsureUniqueDQForNodeUnit"
    conditions = ("two_consumers",)

    def draw(self, ctx, ins, violate):
        return {"q": fq(ctx)}

    def steps(self, a):
        s = [Step("FakeQuant", a["q"], (In(0),)), Step("Relu", {}, (Out(0),))]
        if a["violate"] == "two_consumers":  # one consumer only
            return s + [Step("Neg", {}, (Out(1),))]
        return s + [Step("Neg", {}, (Out(0),)), Step("Add", {}, (Out(1), Out(2)))]


OPS = [EnsureUniqueDQ]
