from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_qdq._shared import I8, _QDQ, U8, fq


class DoubleQDQPairsRemover(_QDQ):
    """``double_qdq_pairs_remover.cc`` (level 1): Q1 -> DQ1 -> Q2 -> DQ2, the four of one
    quantization (type, scale, zero point), drops the DQ1 -> Q2 pair in the middle."""

    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear",)
    rewrite = "DoubleQDQPairsRemover"
    conditions = ("same_type",)

    def draw(self, ctx, ins, violate):
        q1 = fq(ctx)
        q2 = fq(ctx, I8 if q1["to"] == U8 else U8, q1["e"], 0) if violate == "same_type" else q1
        return {"q1": q1, "q2": q2}

    def steps(self, a):
        return [Step("FakeQuant", a["q1"], (In(0),)), Step("FakeQuant", a["q2"], (Out(0),)), Step("Neg", {}, (Out(1),))]


OPS = [DoubleQDQPairsRemover]
