from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F16, F32, OrtMotif, activation, single_consumer
from dlgate.ops.registry import get


#: The activations MLAS applies in a Gemm's epilogue (FusedGemm's), and some it does not.
FUSED = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Elu", "Softsign", "Softplus")
UNFUSED = ("Abs", "Clip")


class GemmActivationFusion(OrtMotif):
    """``gemm_activation_fusion.cc`` (level 2): float32 Gemm read only by an element-wise
    activation MLAS applies in the Gemm's epilogue becomes ``com.microsoft:FusedGemm``."""

    onnx_op = "Gemm"
    onnx_ops = FUSED
    rewrite = "GemmActivationFusion"
    expects = ("transformer:GemmActivationFusion", "fused:com.microsoft:FusedGemm")
    level = "extended"
    fuse_dtypes = (F32,)
    arity = 3
    ranks = (2,)
    types = (F32, F16)
    conditions = ("activation", "single_consumer", "dtype")

    def draw(self, ctx, ins, violate):
        gemm = get("Gemm").sample(ctx, ins[:1])
        act, act_attrs = activation(ctx, ins[0], UNFUSED if violate == "activation" else FUSED)
        return {"gemm": gemm, "act": act, "act_attrs": act_attrs}

    def steps(self, a):
        s = [Step("Gemm", a["gemm"], (In(0), In(1), In(2))), Step(a["act"], a["act_attrs"], (Out(0),))]
        return single_consumer(a, s, 0, 1)

    def constant_input(self, a, i):
        return True


OPS = [GemmActivationFusion]
