from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import FLOATS, OrtMotif


class NotWhereFusion(OrtMotif):
    """``not_where_fusion.cc``: Where(Not(c), x, y), the Not read only by Where nodes,
    becomes Where(c, y, x); a Not read by an And too stays."""

    onnx_op = "Where"
    onnx_ops = ("Not",)
    rewrite = "NotWhereFusion"
    expects = ("removed:Not",)
    arity = 3
    dtypes = tuple((dt.BOOL, t, t) for t in FLOATS)
    conditions = ("single_consumer",)

    def draw(self, ctx, ins, violate):
        return {}

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0].with_dtype(dtype)

    def steps(self, a):
        s = [Step("Not", {}, (In(0),)), Step("Where", {}, (Out(0), In(1), In(2)))]
        if a["violate"] == "single_consumer":  # the Not is read by an And too
            s += [Step("And", {}, (Out(0), In(0))), Step("Where", {}, (Out(2), In(2), In(1))),
                  Step("Add", {}, (Out(1), Out(3)))]
        return s


OPS = [NotWhereFusion]
