from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F16, F32, OrtMotif, single_consumer
from dlgate.ops.motifs.ort_conv._shared import _channels, _conv
from dlgate.ops.registry import get


class ConvBnFusion(OrtMotif):
    """``conv_bn_fusion.cc``: Conv -> BatchNormalization with constant W, B, scale, bias,
    mean and var, the Conv's output read only by the BatchNormalization, becomes one Conv
    with folded weights."""

    onnx_op = "Conv"
    onnx_ops = ("BatchNormalization", "Add")
    rewrite = "ConvBNFusion"
    expects = ("removed:BatchNormalization",)
    arity = 7
    ranks = (3, 4, 5)
    types = (F32, F16)  # no float64 Conv kernel on the CPU
    min_opset = 14
    conditions = ("weights_constant", "bn_constant", "single_consumer")

    def draw(self, ctx, ins, violate):
        conv = _conv(ctx, ins[0])
        c = _channels(conv)
        out_rank = ins[0].rank
        bn = get("BatchNormalization").sample(ctx, [ins[0].with_shape((1, c) + (1,) * (out_rank - 2))])
        return {"conv": conv, "bn": bn, "channels": c, "dtype": ins[0].dtype}

    def input_type(self, ctx, i, ins, a, dtype):
        if i <= 2:
            return get("Conv").input_type(ctx, i, ins, a["conv"], dtype)
        return ins[0].with_dtype(dtype).with_shape((a["channels"],))

    def steps(self, a):
        s = [Step("Conv", a["conv"], (In(0), In(1), In(2))),
             Step("BatchNormalization", a["bn"], (Out(0), In(3), In(4), In(5), In(6)))]
        return single_consumer(a, s, 0, 1)  # the Conv's output is read twice

    def constant_input(self, a, i):
        v = a["violate"]
        if i <= 2:
            return v != "weights_constant"
        return not (v == "bn_constant" and i == 5)  # a live mean


OPS = [ConvBnFusion]
