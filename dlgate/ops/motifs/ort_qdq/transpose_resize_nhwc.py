from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F32, OrtMotif
from dlgate.ops.registry import get


class TransposeResizeNhwc(OrtMotif):
    """``transpose_optimizer`` on the CPU EP (level 2, ``TransposeOptimizer_CPUExecutionProvider``):
    NHWC -> Transpose to NCHW -> Resize of H and W -> Transpose back to NHWC becomes one
    Resize on the NHWC tensor (the CPU EP's Resize takes channels-last input): both
    Transposes vanish. Without the Transpose back, nothing moves."""

    onnx_op = "Transpose"
    onnx_ops = ("Resize",)
    rewrite = "TransposeOptimizer_CPUExecutionProvider"
    level = "extended"
    arity = 1
    ranks = (4,)
    types = (F32,)
    conditions = ("transpose_back",)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        nchw = x.with_shape((x.shape[0], x.shape[3], x.shape[1], x.shape[2]))
        resize = get("Resize").sample(ctx, [nchw])
        return {"resize": resize}

    def steps(self, a):
        s = [Step("Transpose", {"perm": [0, 3, 1, 2], "omit": False}, (In(0),)), Step("Resize", a["resize"], (Out(0),))]
        if a["violate"] == "transpose_back":
            return s + [Step("Neg", {}, (Out(1),))]
        return s + [Step("Transpose", {"perm": [0, 2, 3, 1], "omit": False}, (Out(1),))]


OPS = [TransposeResizeNhwc]
