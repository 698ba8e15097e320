from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F32, OrtMotif
from dlgate.ops.motifs.ort_conv._shared import _conv
from dlgate.ops.registry import get


class NchwcConv(OrtMotif):
    """``nchwc_transformer.cc`` (level 3, where the CPU has an NCHWc block size: AVX2 8,
    AVX-512 16): a 2-D Conv with static float32 weights and bias becomes
    ``com.microsoft.nchwc:Conv`` between ``ReorderInput``/``ReorderOutput`` when, ungrouped,
    its input channels are fewer than a block or a multiple of it. A channel adapter in
    front (a 1x1 Conv to 3, 16 or 32 channels) makes them so whatever the input's own
    channels; a following Relu is fused into the NCHWc Conv."""

    onnx_op = "Conv"
    onnx_ops = ("Relu",)
    rewrite = "NchwcTransformer"
    expects = ("transformer:NchwcTransformer", "fused:com.microsoft.nchwc:Conv")
    level = "all"
    arity = 4
    ranks = (3, 4)
    # float32 only: NCHWc is float32's; a float16 pair of Convs runs in float32 on the CPU
    # without the intermediate rounding, beyond float16's tolerance on long sums
    types = (F32,)
    conditions = ("weights_constant", "rank")
    forced = ("dtype", "rank")

    def outside(self, ctx, ins):
        return "rank" if ins[0].rank != 4 else super().outside(ctx, ins)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        adapt = ctx.choice((3, 16, 32))
        conv = _conv(ctx, x.with_shape((x.shape[0], adapt) + tuple(x.shape[2:])), group=1)
        conv["m_per_group"] = ctx.choice((conv["m_per_group"], 8, 16, 32))
        return {"conv": conv, "adapt": adapt, "relu": ctx.coin(), "rank": x.rank}

    def _adapter(self, a) -> dict:
        r = a["rank"] - 2
        return {"kernel": [1] * r, "strides": [1] * r, "dilations": [1] * r, "pads": [0] * (2 * r), "group": 1,
                "m_per_group": a["adapt"], "spell_kernel": False, "auto_pad": "NOTSET"}

    def input_type(self, ctx, i, ins, a, dtype):
        x = ins[0]
        if i == 3:
            return get("ConvNoBias").input_type(ctx, 1, [x], self._adapter(a), dtype)
        xin = x.with_shape((x.shape[0], a["adapt"]) + tuple(x.shape[2:]))
        return get("Conv").input_type(ctx, i, [xin], a["conv"], dtype)

    def steps(self, a):
        s = [Step("ConvNoBias", self._adapter(a), (In(0), In(3))), Step("Conv", a["conv"], (Out(0), In(1), In(2)))]
        if a["relu"]:
            s.append(Step("Relu", {}, (Out(1),)))
        return s

    def constant_input(self, a, i):
        return a["violate"] != "weights_constant"  # a live adapter is no NCHWc Conv either


OPS = [NchwcConv]
