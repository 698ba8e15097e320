from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.tvm_common import TvmMotif
from dlgate.ops.registry import get


class TvmNormDecomposition(TvmMotif):
    """InstanceNormalization, which the importer writes as mean, variance and element-wise
    operators: FuseOps makes a normalizing function (``mean_subtract_divide_multiply_add``)
    and a variance one (``variance_add_sqrt``). Broken (``decomposed``):
    LayerNormalization, one Relax ``layer_norm``."""

    onnx_op = "InstanceNormalization"
    onnx_ops = ("LayerNormalization",)
    rewrite = "ONNX importer normalization decomposition + FuseOps"
    expects = ("fused:mean_subtract_divide_multiply_add", "fused:variance_add_sqrt",
               "fused:mean_subtract_divide_reshape_multiply_reshape_add")  # the last: live scale and bias
    arity = 3
    ranks = (3, 4)
    types = (dt.FLOAT32, dt.FLOAT16)  # Relax's layer_norm: no float64
    min_opset = 17  # LayerNormalization
    conditions = ("decomposed",)

    def draw(self, ctx, ins, violate):
        op = "LayerNormalization" if violate else "InstanceNormalization"
        return {"op": op, "op_attrs": get(op).sample(ctx, ins[:1])}

    def steps(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0), In(1), In(2)))]

    def constant_input(self, a, i):
        return True  # constant scale and bias: the input is then live, never folded away


OPS = [TvmNormDecomposition]
