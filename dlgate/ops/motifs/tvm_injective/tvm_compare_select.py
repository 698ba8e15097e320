from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.tvm_common import TvmMotif


#: Ordered comparisons -> their Relax PrimFunc names.
COMPARE = {"Greater": "greater", "Less": "less", "GreaterOrEqual": "greater_equal", "LessOrEqual": "less_equal"}


class TvmCompareSelect(TvmMotif):
    """``Where(x <cmp> y, x, y)`` (a max or min written as a select, as exporters do): the
    comparison's only consumer is the select, both element-wise, one function
    ``<cmp>_where``. Broken (``single_consumer``): the comparison is also cast, reduced (max)
    and added to the result, so its post-dominator lies past a reduction: no fusion."""

    onnx_op = "Greater"  # the schema the (T, T) signature is checked against
    onnx_ops = ("Where", "Less", "GreaterOrEqual", "LessOrEqual", "Cast", "ReduceMax", "Add")
    rewrite = "FuseOps (comparison into select)"
    expects = tuple(f"fused:{c}_where" for c in COMPARE.values())
    arity = 2
    ranks = (1, 2, 3, 4)
    conditions = ("single_consumer",)

    def draw(self, ctx, ins, violate):
        return {"cmp": ctx.choice(tuple(COMPARE)), "dtype": ins[0].dtype}

    def steps(self, a):
        s = [Step(a["cmp"], {}, (In(0), In(1))), Step("Where", {}, (Out(0), In(0), In(1)))]
        if a["violate"] == "single_consumer":
            s += [Step("Cast", {"to": a["dtype"]}, (Out(0),)), Step("ReduceMax", {"keepdims": 0}, (Out(2),)),
                  Step("Add", {}, (Out(1), Out(3)))]
        return s


OPS = [TvmCompareSelect]
