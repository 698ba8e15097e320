from __future__ import annotations

from dlgate.ops.motif import Step
from dlgate.ops.motifs.ort_common import INT64_MAX
from dlgate.ops.motifs.ort_elim._shared import _Eliminated


class EliminateSlice(_Eliminated):
    """``slice_elimination.cc``: a Slice whose constant starts are 0, ends INT64_MAX and
    steps 1 on every axis it names (it copies its input)."""

    onnx_op = "Slice"
    rewrite = "EliminateSlice"
    expects = ("removed:Slice",)
    conditions = ("noop",)

    def drawn(self, ctx, x, violate):
        axes = ctx.axes(x.rank)
        ends = [INT64_MAX] * len(axes)
        if violate == "noop":  # a real slice: one element off the end of a long axis, else a reversal
            long = [ax for ax in range(x.rank) if x.shape[ax] > 1]
            if long:
                return {"starts": [0], "ends": [-1], "axes": long[:1], "steps": None}
            return {"starts": [-1] * len(axes), "ends": [-(2**63)] * len(axes), "axes": axes, "steps": [-1] * len(axes)}
        return {"starts": [0] * len(axes), "ends": ends, "axes": axes,
                "steps": [1] * len(axes) if ctx.coin() else None}

    def node(self, a, src):
        return Step("Slice", {k: a[k] for k in ("starts", "ends", "axes", "steps")}, (src,))


OPS = [EliminateSlice]
