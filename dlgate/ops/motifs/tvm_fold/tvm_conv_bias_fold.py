from __future__ import annotations

from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.tvm_common import TvmMotif
from dlgate.ops.registry import get


class TvmConvBiasFold(TvmMotif):
    """Conv with constant weights and bias: the importer reshapes the bias to
    (1, C, 1...) to broadcast it, and FoldConstant folds the reshape. Broken
    (``params_constant``): weights and bias are graph inputs; the reshape stays a kernel
    of its own (``RewriteDataflowReshape`` then makes it a view)."""

    onnx_op = "Conv"
    rewrite = "FoldConstant (the importer's bias reshape)"
    expects = ("pass:FoldConstant",)
    arity = 3
    ranks = (3, 4, 5)
    conditions = ("params_constant",)

    def draw(self, ctx, ins, violate):
        conv = get("Conv").sample(ctx, ins[:1])
        if violate and conv["auto_pad"].startswith("SAME"):
            # SAME_* pads the input with a kernel of its own, which folds when the input
            # is a constant (it may be, once the weights are live)
            conv["auto_pad"] = "VALID"
        return {"conv": conv}

    def steps(self, a):
        return [Step("Conv", a["conv"], (In(0), In(1), In(2)))]

    def constant_input(self, a, i):
        return a["violate"] != "params_constant"


OPS = [TvmConvBiasFold]
