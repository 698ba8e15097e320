from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_block._shared import _RowNorm


class SimplifiedLayerNormFusion(_RowNorm):
    """``layer_norm_fusion.cc``'s ``SimplifiedLayerNormFusion`` (RMSNorm): ``x /
    sqrt(mean(x^2) + eps) * gamma`` over the last axis becomes onnxruntime's
    ``SimplifiedLayerNormalization`` (in the default domain). (RMSNormIdiom's spellings,
    with Reciprocal or a Cast, are matched otherwise or not at all.)"""

    onnx_op = "Mul"
    onnx_ops = ("Pow", "ReduceMean", "Add", "Sqrt", "Div")
    rewrite = "SimplifiedLayerNormFusion"
    # onnxruntime 1.32 writes the fused node in the default domain
    expects = ("transformer:SimplifiedLayerNormFusion", "fused:SimplifiedLayerNormalization")
    arity = 2

    def steps(self, a):
        k = {"keepdims": 1, "axes": [a["axis"]]}
        x = In(0)
        return [Step("Pow", {}, (x, self.c(a, 2.0, "two"))), Step("ReduceMean", k, (Out(0),)),
                Step("Add", {}, (Out(1), self.c(a, a["eps"], "eps"))), Step("Sqrt", {}, (Out(2),)),
                Step("Div", {}, (x, Out(3))), Step("Mul", {}, (Out(4), In(1)))]


OPS = [SimplifiedLayerNormFusion]
