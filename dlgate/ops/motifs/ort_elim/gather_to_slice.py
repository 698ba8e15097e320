from __future__ import annotations

from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.ort_common import OrtMotif
from dlgate.ops.registry import get


class GatherToSlice(OrtMotif):
    """``gather_fusion.cc``'s ``GatherToSliceFusion`` (level 2): a Range read only by a
    Gather, as its indices, becomes a Slice (starts, ends, steps: the Range's start,
    limit, delta). The Range's limit is ``Size(t)`` of a graph input ``t`` (``GatherArange``):
    with constant bounds level 1's ConstantFolding folds the Range into constant indices
    first, so a constant ``t`` breaks ``live_range``; indices shifted by an Add after the
    Range break ``indices_from_range``. A quarter of the Ranges start below 0 (Gather wraps
    those indices from the end): onnxruntime 1.32 fuses them all the same, into a Slice
    whose negative start means something else (a defect the firing side keeps finding)."""

    onnx_op = "Range"
    onnx_ops = ("Gather", "Size", "Add")
    rewrite = "GatherToSliceFusion"
    level = "extended"
    arity = 2
    ranks = (1, 2, 3, 4, 5)
    conditions = ("live_range", "indices_from_range")

    def draw(self, ctx, ins, violate):
        x = ins[0]
        g = get("GatherArange").sample(ctx, ins[:1])
        g["shift"] = 0
        if violate == "indices_from_range":  # the largest axis, indices 0..d-2 shifted by 1
            ax = max(range(x.rank), key=lambda j: x.shape[j])
            d = x.shape[ax]
            g.update(axis=ax, start=0, delta=ctx.choice((1, 2)), limit=max(1, d - 1), shift=1)
        return {"g": g}

    def steps(self, a):
        return [Step("GatherArange", a["g"], (In(0), In(1)))]

    def constant_input(self, a, i):
        return a["violate"] == "live_range"


OPS = [GatherToSlice]
