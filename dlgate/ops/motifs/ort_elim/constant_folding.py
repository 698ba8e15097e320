from __future__ import annotations

from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F32, F64, OrtMotif


class ConstantFolding(OrtMotif):
    """``constant_folding.cc`` (level 1): a node whose inputs are all constant initializers
    is computed once and replaced by its result."""

    onnx_op = "Add"
    onnx_ops = ("Mul", "Sigmoid")
    rewrite = "ConstantFolding"
    arity = 3
    types = (F32, F64)
    conditions = ("inputs_constant",)

    def draw(self, ctx, ins, violate):
        return {"shape": tuple(ins[0].shape[ins[0].rank - ctx.int(0, ins[0].rank):])}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["shape"])

    def steps(self, a):
        return [Step("Mul", {}, (In(1), In(2))), Step("Sigmoid", {}, (Out(0),)), Step("Add", {}, (In(0), Out(1)))]

    def constant_input(self, a, i):
        return a["violate"] != "inputs_constant" or i == 1


OPS = [ConstantFolding]
