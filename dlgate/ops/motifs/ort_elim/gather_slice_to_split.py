from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import OrtMotif


class GatherSliceToSplit(OrtMotif):
    """``gather_slice_fusion.cc``'s ``GatherSliceToSplitFusion`` (level 2): scalar Gathers
    of every index 0..d-1 of one axis of the same tensor become a Split (and Squeezes);
    one index short, they stay. An input without an axis of 2 to 6 elements is outside
    (``axis_length``)."""

    onnx_op = "Gather"
    onnx_ops = ("Add",)
    rewrite = "GatherSliceToSplitFusion"
    level = "extended"
    arity = 1
    ranks = (1, 2, 3, 4)
    conditions = ("cover_axis", "axis_length")
    forced = ("dtype", "axis_length")

    @staticmethod
    def _axes(x) -> list:
        return [ax for ax in range(x.rank) if 2 <= x.shape[ax] <= 6]

    def outside(self, ctx, ins):
        return None if self._axes(ins[0]) else "axis_length"

    def draw(self, ctx, ins, violate):
        x = ins[0]
        axis = ctx.choice(self._axes(x) or [0])
        return {"axis": axis, "d": x.shape[axis]}

    def steps(self, a):
        v = a["violate"]
        n = 1 if v == "axis_length" else a["d"] - 1 if v == "cover_axis" else a["d"]
        s = [Step("Gather", {"axis": a["axis"], "indices": i}, (In(0),)) for i in range(n)]
        if n == 1:
            return s + [Step("Neg", {}, (Out(0),))]
        acc = 0
        for j in range(1, n):
            s.append(Step("Add", {}, (Out(acc), Out(j))))
            acc = len(s) - 1
        return s


OPS = [GatherSliceToSplit]
