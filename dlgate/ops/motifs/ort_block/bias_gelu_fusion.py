from __future__ import annotations

from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_block._shared import _Block
from dlgate.ops.motifs.ort_common import F16, F32


class BiasGeluFusion(_Block):
    """``bias_gelu_fusion.cc``: an Add of a constant 1-D bias along the last axis, read
    only by a Gelu (fused from its erf form first), becomes ``com.microsoft:BiasGelu``."""

    onnx_op = "Add"
    onnx_ops = ("Erf", "Div", "Mul")
    rewrite = "BiasGeluFusion"
    expects = ("transformer:BiasGeluFusion", "fused:com.microsoft:BiasGelu")
    arity = 2
    ranks = (2, 3, 4)
    types = (F32, F16)  # no float64 Erf kernel on the CPU
    conditions = ("bias_shape", "dtype")

    def draw(self, ctx, ins, violate):
        x = ins[0]
        bias = (x.shape[-1],) if violate != "bias_shape" else tuple(x.shape[-2:-1]) + (1,)
        return {"bias": bias}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["bias"])

    def steps(self, a):
        return [Step("Add", {}, (In(0), In(1))), Step("GeluErfIdiom", {"dtype": a["dtype"]}, (Out(0),))]

    def constant_input(self, a, i):
        return True


OPS = [BiasGeluFusion]
