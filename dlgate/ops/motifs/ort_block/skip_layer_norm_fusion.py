from __future__ import annotations

from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_block._shared import _Block
from dlgate.ops.motifs.ort_common import F32, F64


class SkipLayerNormFusion(_Block):
    """``skip_layer_norm_fusion.cc``: Add(x, skip) of equal 3-D shapes, read only by a
    LayerNormalization over the last axis, becomes ``com.microsoft:SkipLayerNormalization``;
    a broadcast skip is left alone."""

    onnx_op = "Add"
    onnx_ops = ("LayerNormalization",)
    rewrite = "SkipLayerNormFusion"
    expects = ("transformer:SkipLayerNormFusion", "fused:com.microsoft:SkipLayerNormalization")
    min_opset = 17
    arity = 4
    ranks = (3,)
    types = (F32, F64)  # float16 LayerNormalization: see LayerNormFusion
    conditions = ("same_shape", "dtype")

    def draw(self, ctx, ins, violate):
        x = ins[0]
        skip = (1,) + tuple(x.shape[1:]) if violate == "same_shape" else tuple(x.shape)
        if violate == "same_shape" and x.shape[0] == 1:
            skip = (x.shape[0], 1, x.shape[2])
        return {"skip": skip, "ln": {"epsilon": ctx.choice((1e-5, 1e-12)), "axis": -1, "stash_type": 1},
                "n": x.shape[-1]}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["skip"] if i == 1 else (a["n"],))

    def steps(self, a):
        return [Step("Add", {}, (In(0), In(1))), Step("LayerNormalization", a["ln"], (Out(0), In(2), In(3)))]

    def constant_input(self, a, i):
        return i >= 2


OPS = [SkipLayerNormFusion]
