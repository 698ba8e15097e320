from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F32
from dlgate.ops.motifs.ort_qdq._shared import F16, I8, _QDQ, U8, fq


class DoubleQDQPairsRemover(_QDQ):
    """``double_qdq_pairs_remover.cc`` (level 1): Q1 -> DQ1 -> Q2 -> DQ2, the four of one
    quantization (type, scale, zero point), drops the DQ1 -> Q2 pair in the middle. Its pair
    check (``IsQDQPairSupported``) also wants each Q -> DQ pair's scales of one type: the
    ``same_scale_type`` side gives DQ1 a float16 scale (the middle runs in float16) and DQ2
    a float32 one back, the same power of two throughout (onnxruntime once compared Q1's
    scale type with itself there and read the float16 scale as float32)."""

    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear",)
    rewrite = "DoubleQDQPairsRemover"
    conditions = ("same_type", "same_scale_type")

    def draw(self, ctx, ins, violate):
        q1 = fq(ctx)
        if violate == "same_scale_type":
            return {"q1": {**q1, "dsdt": F16}, "q2": {**q1, "xdt": F16, "sdt": F16, "dsdt": F32}}
        q2 = fq(ctx, I8 if q1["to"] == U8 else U8, q1["e"], 0) if violate == "same_type" else q1
        return {"q1": q1, "q2": q2}

    def steps(self, a):
        return [Step("FakeQuant", a["q1"], (In(0),)), Step("FakeQuant", a["q2"], (Out(0),)), Step("Neg", {}, (Out(1),))]


OPS = [DoubleQDQPairsRemover]
