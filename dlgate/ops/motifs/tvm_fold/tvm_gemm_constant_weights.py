from __future__ import annotations

from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.tvm_common import TvmMotif
from dlgate.ops.registry import get


class TvmGemmConstantWeights(TvmMotif):
    """Gemm with constant B and C: the importer writes ``permute_dims(B)`` for transB and
    ``C * beta`` for beta != 1 around the constants, and FoldConstant folds them (the draw
    keeps at least one). Broken: B and C are graph inputs (``weights_constant``; transA
    and alpha then stay off, so a constant A leaves nothing either), or transB is 0 and
    beta 1 (``weights_transformed``)."""

    onnx_op = "Gemm"
    rewrite = "FoldConstant (Gemm's transposed and scaled constants)"
    expects = ("pass:FoldConstant",)
    arity = 3
    ranks = (2,)
    conditions = ("weights_constant", "weights_transformed")

    def draw(self, ctx, ins, violate):
        g = get("Gemm").sample(ctx, ins)
        if violate == "weights_constant":
            g.update(transA=0, alpha=1.0)
        elif violate == "weights_transformed":
            g.update(transB=0, beta=1.0)
        elif not g["transB"] and g["beta"] == 1.0:
            g["transB"] = 1
        return {"gemm": g}

    def steps(self, a):
        return [Step("Gemm", a["gemm"], (In(0), In(1), In(2)))]

    def constant_input(self, a, i):
        return a["violate"] != "weights_constant"


OPS = [TvmGemmConstantWeights]
