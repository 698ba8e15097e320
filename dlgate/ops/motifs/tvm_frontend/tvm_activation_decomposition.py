from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.tvm_common import TvmMotif
from dlgate.ops.registry import get


#: Activations the importer decomposes -> the fused functions FuseOps makes of them.
DECOMPOSED_ACTS = {
    "HardSwish": ("add_clip_divide_multiply",),
    "HardSigmoid": ("multiply_add_clip",),
    "Softplus": ("maximum_abs_negative_exp_add_log_add",),
    "Selu": ("exp_subtract_relu_multiply_relu_add_multiply",),
    "Elu": ("exp_subtract_relu_multiply_relu_add",),
    "Softsign": ("abs_add_divide",),
    "ThresholdedRelu": ("greater_cast_multiply",),
    "Mish": ("exp_add_log_tanh_multiply",),
    "Shrink": ("greater_subtract_where_less_subtract_where_add", "greater_subtract_where_less_add_where_add"),
}
#: Float16 and float64 Elu, Selu and ThresholdedRelu fail to import (float32 constants
#: meet the tensor: "Binary operators must have the same datatype"), a defect of the
#: importer that the motif leaves to the operators' own specs.
FLOAT32_ONLY = ("Elu", "Selu", "ThresholdedRelu")
#: Activations the importer maps to one Relax operator each.
NATIVE_ACTS = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "Gelu")


class TvmActivationDecomposition(TvmMotif):
    """An activation the importer writes as several element-wise Relax operators, fused
    back into one function by FuseOps."""

    onnx_op = "HardSwish"
    onnx_ops = tuple(k for k in DECOMPOSED_ACTS if k != "HardSwish") + NATIVE_ACTS
    rewrite = "ONNX importer activation decomposition + FuseOps"
    expects = tuple(f"fused:{n}" for names in DECOMPOSED_ACTS.values() for n in names)
    arity = 1
    ranks = (1, 2, 3, 4)
    min_opset = 18  # Mish
    conditions = ("decomposed",)

    def draw(self, ctx, ins, violate):
        ops = NATIVE_ACTS if violate else tuple(DECOMPOSED_ACTS)
        if ins[0].dtype != dt.FLOAT32:
            ops = tuple(o for o in ops if o not in FLOAT32_ONLY)
        op = ctx.choice([o for o in ops if get(o).available(ctx.opset)])
        return {"op": op, "op_attrs": get(op).sample(ctx, ins)}

    def steps(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0),))]


OPS = [TvmActivationDecomposition]
