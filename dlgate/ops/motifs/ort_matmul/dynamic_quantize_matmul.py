from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Out, Step, const_values
from dlgate.ops.motifs.ort_common import F32, OrtMotif
from dlgate.ops.quant._shared import QR
from dlgate.ops.registry import get


class DynamicQuantizeMatMul(OrtMotif):
    """``dynamic_quantize_matmul_fusion.cc`` (level 2): DynamicQuantizeLinear(x) -> (y,
    y_scale, y_zero_point); MatMulInteger(y, B, y_zero_point[, b_zero_point]) -> Cast to
    float -> Mul by (y_scale * b_scale), which ``MatMulIntegerToFloatFusion`` first makes
    ``com.microsoft:MatMulIntegerToFloat``, becomes ``com.microsoft:DynamicQuantizeMatMul``
    when B (int8 or uint8, made inside the motif) is a constant initializer and the three
    outputs of the DynamicQuantizeLinear feed it and nothing else. A constant
    a_zero_point (the DynamicQuantizeLinear's own left unread), or y_scale read once more
    (the product scaled by it again), breaks it. b_scale is a scalar constant here
    (onnxruntime 1.32 fuses a live one too, and then crashes on a b_scale that is not a
    scalar or a vector of N)."""

    onnx_op = "DynamicQuantizeLinear"
    onnx_ops = ("MatMulInteger", "Cast", "Mul")
    rewrite = "DynamicQuantizeMatMulFusion"
    expects = ("transformer:DynamicQuantizeMatMulFusion", "fused:com.microsoft:DynamicQuantizeMatMul")
    level = "extended"
    arity = 2
    ranks = (2, 3)
    types = (F32,)
    conditions = ("zero_point_from_dql", "outputs_read_once")

    def draw(self, ctx, ins, violate):
        y = ins[0].with_dtype(dt.UINT8)
        mmi = get("MatMulIntegerZp").sample(ctx, [y])
        if violate == "zero_point_from_dql":
            mmi["za"] = get("MatMulInteger").sample(ctx, [y])["za"]
        return {"mmi": mmi, "k": ins[0].shape[-1]}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, ())

    def steps(self, a):
        m = a["mmi"]
        w = const_values(a, "w", m["bt"], (a["k"], m["n"]), *QR[m["bt"]])
        if a["violate"] == "zero_point_from_dql":
            mmi = Step("MatMulInteger", m, (Out(0, 0), w))
        else:
            mmi = Step("MatMulIntegerZp", m, (Out(0, 0), w, Out(0, 2)))
        s = [Step("DynamicQuantizeLinear", {}, (In(0),)), mmi, Step("Cast", {"to": F32}, (Out(1),)),
             Step("Mul", {}, (Out(0, 1), In(1))), Step("Mul", {}, (Out(2), Out(3)))]
        if a["violate"] == "outputs_read_once":
            s.append(Step("Mul", {}, (Out(4), Out(0, 1))))
        return s

    def constant_input(self, a, i):
        return True  # b_scale, a scalar weight scale


OPS = [DynamicQuantizeMatMul]
