from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F16, F32, F64, OrtMotif


class RemoveDuplicateCast(OrtMotif):
    """``insert_cast_transformer.cc``'s ``RemoveDuplicateCastTransformer`` (after the
    levels): Cast -> Cast where the first widens without loss (float16 -> float32 ->
    float16, float32 -> float64 -> float32) collapses; a narrowing first Cast (float32
    -> float16 -> float32) rounds, and must stay."""

    onnx_op = "Cast"
    rewrite = "RemoveDuplicateCastTransformer"
    level = "basic"
    arity = 1
    ranks = (0, 1, 2, 3)
    types = (F32, F16)
    conditions = ("lossless",)

    def draw(self, ctx, ins, violate):
        t = ins[0].dtype
        if violate == "lossless":
            mid = F16 if t == F32 else dt.INT32  # rounds (float32 -> float16) or truncates
        else:
            mid = F64 if t == F32 else ctx.choice((F32, F64))
        return {"mid": mid, "to": t}

    def steps(self, a):
        one = {"axes": [0]}
        return [Step("Unsqueeze", one, (In(0),)), Step("Cast", {"to": a["mid"]}, (Out(0),)),
                Step("Cast", {"to": a["to"]}, (Out(1),)), Step("Unsqueeze", one, (Out(2),))]


OPS = [RemoveDuplicateCast]
