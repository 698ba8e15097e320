from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.tvm_common import TvmMotif
from dlgate.ops.registry import get


class TvmSortScanDispatch(TvmMotif):
    """CumSum or TopK (values): ``pass:DispatchSortScan``. Broken (``sort_or_scan``): a
    plain reduction (ReduceSum, ReduceMax) over the same axis, legalized as usual."""

    onnx_op = "CumSum"
    onnx_ops = ("TopK", "ReduceSum", "ReduceMax")
    rewrite = "DispatchSortScan"
    expects = ("pass:DispatchSortScan",)
    arity = 1
    ranks = (1, 2, 3, 4)
    types = dt.FLOATS + dt.COMMON_INTS
    conditions = ("sort_or_scan",)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        if violate:
            op = ctx.choice(("ReduceSum", "ReduceMax"))
            return {"op": op, "op_attrs": {"keepdims": int(ctx.coin()), "axes": [ctx.rng.randrange(x.rank)]}}
        op = ctx.choice(("CumSum", "TopK"))
        return {"op": op, "op_attrs": get(op).sample(ctx, ins)}

    def steps(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0),))]


OPS = [TvmSortScanDispatch]
