from __future__ import annotations

from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.ort_common import F16, OrtMotif


class Float16Initializer(OrtMotif):
    """``fuse_initializers_transformer.cc`` (``FuseFp16InitializerToFp32NodeTransformer``,
    level 4, in ``all``): a float16 initializer cast to float32 for a node that runs in
    float32 (inserted by ``CastFloat16Transformer``) is stored as float32 instead; a live
    float16 input stays cast."""

    onnx_op = "Add"
    rewrite = "FuseFp16InitializerToFp32NodeTransformer"
    level = "all"
    arity = 2
    types = (F16,)
    conditions = ("constant",)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        return {"shape": tuple(x.shape[x.rank - ctx.int(0, x.rank):])}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["shape"])

    def steps(self, a):
        return [Step("Add", {}, (In(0), In(1)))]

    def constant_input(self, a, i):
        return a["violate"] != "constant"


OPS = [Float16Initializer]
