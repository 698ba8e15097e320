from __future__ import annotations

from dlgate.ops.motif import Step
from dlgate.ops.motifs.ort_common import FLOATS
from dlgate.ops.motifs.ort_elim._shared import _Eliminated


class CastElimination(_Eliminated):
    """``cast_elimination.cc``: a Cast to the input's own type."""

    onnx_op = "Cast"
    rewrite = "CastElimination"
    expects = ("removed:Cast",)
    ranks = (0, 1, 2, 3)
    conditions = ("same_type",)
    around = "Unsqueeze"

    def drawn(self, ctx, x, violate):
        t = x.dtype
        return {"to": ctx.choice([u for u in FLOATS if u != t]) if violate == "same_type" else t}

    def node(self, a, src):
        return Step("Cast", {"to": a["to"]}, (src,))


OPS = [CastElimination]
