from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import (F16, F32, FUSED_ACTIVATIONS, OTHER_ACTIVATIONS, OrtMotif, activation,
                                          single_consumer)
from dlgate.ops.motifs.ort_conv._shared import _conv


class ConvActivationFusion(OrtMotif):
    """``conv_activation_fusion.cc`` (level 2): Conv -> Relu, Sigmoid, Tanh, LeakyRelu,
    HardSigmoid or Clip with constant bounds becomes ``com.microsoft:FusedConv`` with the
    activation as an attribute (float32 on the CPU), when the Conv's output is read by
    the activation only."""

    onnx_op = "Conv"
    onnx_ops = FUSED_ACTIVATIONS
    rewrite = "ConvActivationFusion"
    expects = ("transformer:ConvActivationFusion", "fused:com.microsoft:FusedConv")
    level = "extended"
    arity = 3
    ranks = (3, 4, 5)
    types = (F32, F16)
    fuse_dtypes = (F32,)
    conditions = ("activation", "single_consumer", "dtype")

    def draw(self, ctx, ins, violate):
        conv = _conv(ctx, ins[0])
        act, act_attrs = activation(ctx, ins[0], OTHER_ACTIVATIONS if violate == "activation" else FUSED_ACTIVATIONS)
        return {"conv": conv, "act": act, "act_attrs": act_attrs}

    def steps(self, a):
        s = [Step("Conv", a["conv"], (In(0), In(1), In(2))), Step(a["act"], a["act_attrs"], (Out(0),))]
        return single_consumer(a, s, 0, 1)

    def constant_input(self, a, i):
        return True


OPS = [ConvActivationFusion]
