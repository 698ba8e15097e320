from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import OrtMotif, scalar, single_consumer


class DivMulFusion(OrtMotif):
    """``div_mul_fusion.cc``: Mul(a, Div(1, b)), the Div read only by the Mul, becomes
    Div(a, b)."""

    onnx_op = "Div"
    onnx_ops = ("Mul",)
    rewrite = "DivMulFusion"
    expects = ("removed:Mul",)
    arity = 2
    conditions = ("numerator_one", "single_consumer")

    def draw(self, ctx, ins, violate):
        return {"one": 2.0 if violate == "numerator_one" else 1.0, "dtype": ins[0].dtype}

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0].with_dtype(dtype)

    def steps(self, a):
        s = [Step("Div", {}, (scalar(a["one"], a["dtype"], "one"), In(1))), Step("Mul", {}, (In(0), Out(0)))]
        return single_consumer(a, s, 0, 1)

    def constant_input(self, a, i):
        return False


OPS = [DivMulFusion]
