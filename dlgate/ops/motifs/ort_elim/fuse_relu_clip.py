from __future__ import annotations

from dlgate.ops.motif import In, Out, Step, half
from dlgate.ops.motifs.ort_common import OrtMotif, single_consumer
from dlgate.ops.registry import get


class FuseReluClip(OrtMotif):
    """``relu_clip_fusion.cc``: Relu -> Clip (constant bounds), the Relu read only by the
    Clip, becomes one Clip whose lower bound is at least 0."""

    onnx_op = "Relu"
    onnx_ops = ("Clip",)
    rewrite = "FuseReluClip"
    expects = ("removed:Relu",)
    arity = 1
    conditions = ("single_consumer",)

    def draw(self, ctx, ins, violate):
        clip = get("Clip").sample(ctx, ins[:1])
        lo, hi = sorted((ctx.uniform(-2.0, 1.0), ctx.uniform(-1.0, 4.0)))
        if ctx.coin(0.8):
            clip["min"] = half(lo)
        if ctx.coin(0.8):
            clip["max"] = half(hi)
        return {"clip": clip}

    def steps(self, a):
        s = [Step("Relu", {}, (In(0),)), Step("Clip", a["clip"], (Out(0),))]
        return single_consumer(a, s, 0, 1)


OPS = [FuseReluClip]
