from __future__ import annotations

from dlgate.ops.motif import In, Out, Step, half
from dlgate.ops.motifs.ort_common import OrtMotif, scalar


class ConstantSharing(OrtMotif):
    """``constant_sharing.cc`` (level 1): scalar initializers of equal type and value read
    by different nodes become one shared initializer."""

    onnx_op = "Mul"
    onnx_ops = ("Add",)
    rewrite = "ConstantSharing"
    arity = 1
    conditions = ("same_value",)

    def draw(self, ctx, ins, violate):
        v = half(ctx.uniform(-3.0, 3.0))
        w = v + 0.5 if violate == "same_value" else v
        return {"values": [v, w], "dtype": ins[0].dtype}

    def steps(self, a):
        v, w = a["values"]
        return [Step("Mul", {}, (In(0), scalar(v, a["dtype"], "shared"))),
                Step("Add", {}, (Out(0), scalar(w, a["dtype"], "shared")))]


OPS = [ConstantSharing]
