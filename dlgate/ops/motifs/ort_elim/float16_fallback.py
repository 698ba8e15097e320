from __future__ import annotations

from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.ort_common import F16, F32, OrtMotif


class Float16Fallback(OrtMotif):
    """``insert_cast_transformer.cc`` (``CastFloat16Transformer``, run on every session):
    a float16 node the CPU EP has no float16 kernel for (Sigmoid, Neg) runs in float32
    between Casts; float32 needs none."""

    onnx_op = "Sigmoid"
    onnx_ops = ("Neg",)
    rewrite = "CastFloat16Transformer"
    fuse_dtypes = (F16,)
    arity = 1
    types = (F16, F32)
    conditions = ("dtype",)

    def draw(self, ctx, ins, violate):
        return {"op": ctx.choice(("Sigmoid", "Neg"))}

    def steps(self, a):
        return [Step(a["op"], {}, (In(0),))]


OPS = [Float16Fallback]
