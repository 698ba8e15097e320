from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F32, FUSED_ACTIVATIONS, OrtMotif, activation, single_consumer
from dlgate.ops.motifs.ort_conv._shared import _channels, _conv
from dlgate.ops.registry import get


class ConvAddActivationFusion(OrtMotif):
    """``conv_add_act_fusion.cc`` (level 3): a 2-D float32 Conv with a bias, read only by
    an Add of a tensor of the same shape (a residual), then an activation, becomes
    ``com.microsoft:FusedConv`` with the residual as its fourth input. The NCHWc
    transformer runs first and takes the Convs with static weights it can, so the weights
    here are live (graph inputs), which it never takes on any block size."""

    onnx_op = "Conv"
    onnx_ops = ("Add",) + FUSED_ACTIVATIONS
    rewrite = "ConvAddActivationFusion"
    level = "all"
    arity = 4
    ranks = (4,)
    types = (F32,)
    conditions = ("same_shape", "single_consumer")

    def draw(self, ctx, ins, violate):
        conv = _conv(ctx, ins[0])
        act, act_attrs = activation(ctx, ins[0])
        out = get("Conv").infer(ins[:1], conv)[0]
        shape = (1, _channels(conv), 1, 1) if violate == "same_shape" else out.shape
        return {"conv": conv, "act": act, "act_attrs": act_attrs, "shape": shape}

    def input_type(self, ctx, i, ins, a, dtype):
        if i <= 2:
            return get("Conv").input_type(ctx, i, ins, a["conv"], dtype)
        return ins[0].with_dtype(dtype).with_shape(a["shape"])

    def steps(self, a):
        s = [Step("Conv", a["conv"], (In(0), In(1), In(2))), Step("Add", {}, (Out(0), In(3))),
             Step(a["act"], a["act_attrs"], (Out(1),))]
        return single_consumer(a, s, 0, 2)

    def constant_input(self, a, i):
        return False


OPS = [ConvAddActivationFusion]
