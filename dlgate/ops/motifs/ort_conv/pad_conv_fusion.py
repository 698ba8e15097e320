from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F16, F32
from dlgate.ops.motifs.ort_conv._shared import _PadThen, _conv
from dlgate.ops.registry import get


class PadConvFusion(_PadThen):
    """Pad -> Conv (explicit ``pads``, not ``auto_pad``)."""

    onnx_op = "Conv"  # the schema the input signature is checked against
    onnx_ops = ("Pad",)
    arity = 3
    types = (F32, F16)
    conditions = _PadThen.pad_conditions + ("child_auto_pad",)

    def draw(self, ctx, ins, violate):
        pad = self.pad(ctx, ins[0], violate)
        padded = get("Pad").infer(ins[:1], pad)[0]
        conv = _conv(ctx, padded, auto_pad="NOTSET")
        r = ins[0].rank - 2
        if violate == "child_auto_pad":
            conv.update(auto_pad="VALID", pads=[0] * (2 * r))
        elif not any(conv["pads"]):
            conv["pads"] = [1] + [0] * (2 * r - 1)  # written out: the fusion adds to them
        return {"pad": pad, "conv": conv, "padded": padded.shape, "rank": ins[0].rank}

    def child(self, a):
        return Step("Conv", a["conv"], (Out(0), In(1), In(2)))

    def input_type(self, ctx, i, ins, a, dtype):
        return get("Conv").input_type(ctx, i, [ins[0].with_shape(a["padded"])], a["conv"], dtype)

    def constant_input(self, a, i):
        return True


OPS = [PadConvFusion]
