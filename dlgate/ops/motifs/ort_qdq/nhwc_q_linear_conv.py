from __future__ import annotations

from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.ort_common import OrtMotif
from dlgate.ops.motifs.ort_qdq._shared import I8, U8
from dlgate.ops.registry import get


class NhwcQLinearConv(OrtMotif):
    """``nhwc_transformer.cc`` (level 3): a 1-D or 2-D QLinearConv (fused from its QDQ
    form by level 2, or written so) becomes ``com.microsoft:QLinearConv`` in NHWC layout
    between Transposes."""

    onnx_op = "QLinearConv"
    rewrite = "NhwcTransformer"
    level = "all"
    arity = 2
    ranks = (3, 4)
    dtypes = ((U8, U8), (U8, I8), (I8, I8))  # no CPU QLinearConv for int8 x with uint8 w

    def draw(self, ctx, ins, violate):
        return {"conv": get("QLinearConv").sample(ctx, ins[:1])}

    def steps(self, a):
        return [Step("QLinearConv", a["conv"], (In(0), In(1)))]

    def constant_input(self, a, i):
        return True


OPS = [NhwcQLinearConv]
