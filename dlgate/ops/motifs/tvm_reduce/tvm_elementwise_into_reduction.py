from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.tvm_common import TvmMotif
from dlgate.ops.registry import get


#: Element-wise ONNX operators -> their Relax PrimFunc names.
UNARY = {"Exp": "exp", "Abs": "abs", "Neg": "negative", "Sigmoid": "sigmoid", "Relu": "relu", "Tanh": "tanh"}
#: Comm-reduce ONNX reductions -> their PrimFunc names.
REDUCE = {"ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min"}


class TvmElementwiseIntoReduction(TvmMotif):
    """An element-wise op whose only consumer is a sum, max or min reduction fuses into it:
    ``<ew>_<reduce>``. Broken (``single_consumer``): the element-wise output is also added
    to the (kept-dims) reduction's result, so its post-dominator lies past the reduction
    and the path through the reduction is not injective: no fusion."""

    onnx_op = "ReduceSum"
    onnx_ops = ("ReduceMax", "ReduceMin", "Add") + tuple(UNARY)
    rewrite = "FuseOps (element-wise into comm-reduce)"
    expects = tuple(f"fused:{u}_{r}" for u in UNARY.values() for r in REDUCE.values())
    arity = 1
    ranks = (1, 2, 3, 4)
    conditions = ("single_consumer",)

    def draw(self, ctx, ins, violate):
        u = ctx.choice(tuple(UNARY))
        r = ctx.choice(tuple(REDUCE))
        return {"unary": u, "unary_attrs": get(u).sample(ctx, ins), "reduce": r,
                "reduce_attrs": _reduce_attrs(ctx, r, ins[0], True if violate else None)}

    def steps(self, a):
        s = [Step(a["unary"], a["unary_attrs"], (In(0),)), Step(a["reduce"], a["reduce_attrs"], (Out(0),))]
        if a["violate"] == "single_consumer":
            s.append(Step("Add", {}, (Out(1), Out(0))))
        return s


def _reduce_attrs(ctx, op, x, keep: bool | None = None) -> dict:
    a = get(op).sample(ctx, [x])
    if keep is not None:
        a["keepdims"] = int(keep)
    return a


OPS = [TvmElementwiseIntoReduction]
