from __future__ import annotations

from dlgate.ops.motif import Step
from dlgate.ops.motifs.ort_elim._shared import _Eliminated


class ExpandElimination(_Eliminated):
    """``expand_elimination.cc``: an Expand to a shape that broadcasts to the input's own
    (ones, or the input's trailing dims)."""

    onnx_op = "Expand"
    rewrite = "ExpandElimination"
    expects = ("removed:Expand",)
    ranks = (1, 2, 3, 4)
    conditions = ("noop",)

    def drawn(self, ctx, x, violate):
        k = ctx.int(1, x.rank)
        shape = [1 if ctx.coin() else d for d in x.shape[x.rank - k:]]
        if violate == "noop":
            shape = [2] + list(x.shape)  # a new leading axis of 2
        return {"shape": shape}

    def node(self, a, src):
        return Step("Expand", {"shape": a["shape"]}, (src,))


OPS = [ExpandElimination]
