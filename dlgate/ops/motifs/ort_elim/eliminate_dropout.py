from __future__ import annotations

from dlgate.ops.motif import Step
from dlgate.ops.motifs.ort_elim._shared import _Eliminated
from dlgate.ops.registry import get


class EliminateDropout(_Eliminated):
    """``dropout_elimination.cc``: an inference Dropout (its mask output unused)."""

    onnx_op = "Dropout"
    rewrite = "EliminateDropout"
    expects = ("removed:Dropout",)

    def drawn(self, ctx, x, violate):
        return {"dropout": get("Dropout").sample(ctx, [x])}

    def node(self, a, src):
        return Step("Dropout", a["dropout"], (src,))


OPS = [EliminateDropout]
