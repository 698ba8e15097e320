from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F32, OrtMotif
from dlgate.ops.motifs.ort_qdq._shared import I8, U8
from dlgate.ops.quant._shared import _zp
from dlgate.ops.registry import get


class QDQS8ToU8(OrtMotif):
    """``qdq_s8_to_u8.cc`` (level 2, registered where the CPU's int8 kernels want uint8
    activations): a QDQ Conv unit whose activations are int8 has them re-quantized as
    uint8 (zero point + 128) before the unit is fused; uint8 activations need nothing."""

    onnx_op = "Conv"
    onnx_ops = ("QuantizeLinear", "DequantizeLinear")
    rewrite = "QDQS8ToU8Transformer"
    level = "extended"
    min_opset = 19
    arity = 1
    ranks = (3, 4)
    types = (F32,)
    conditions = ("int8_activations",)

    def draw(self, ctx, ins, violate):
        conv = get("QDQConv").sample(ctx, ins[:1])
        qt = U8 if violate == "int8_activations" else I8
        conv.update(xt=qt, xz=_zp(ctx, qt), yt=qt, yz=_zp(ctx, qt))
        return {"conv": conv}

    def steps(self, a):
        return [Step("QDQConv", a["conv"], (In(0),)), Step("Neg", {}, (Out(0),))]


OPS = [QDQS8ToU8]
