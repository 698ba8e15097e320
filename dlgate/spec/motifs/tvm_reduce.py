"""TVM Relax ``FuseOps`` around reductions. A comm-reduce PrimFunc (sum, max, min, prod)
takes the element-wise ops that produce its input (``<ew>_sum``) but never fuses forward;
a reduction legalized together with its element-wise finish (``mean``: sum then divide)
is out-element-wise-fusable and takes an epilogue (``mean_<act>``). The ONNX importer
writes ReduceL1, ReduceL2, ReduceSumSquare and ReduceLogSumExp as element-wise ops feeding
a sum, which the same rule fuses."""
from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.spec.motif import In, Motif, Out, Step
from dlgate.spec.motifs.tvm_common import ACTIVATIONS, activation, named
from dlgate.spec.registry import get

FLOAT_SIGS = tuple((t,) for t in dt.FLOATS)

#: Element-wise ONNX operators -> their Relax PrimFunc names.
UNARY = {"Exp": "exp", "Abs": "abs", "Neg": "negative", "Sigmoid": "sigmoid", "Relu": "relu", "Tanh": "tanh"}
#: Comm-reduce ONNX reductions -> their PrimFunc names.
REDUCE = {"ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min"}


def _reduce_attrs(ctx, op, x, keep: bool | None = None) -> dict:
    a = get(op).sample(ctx, [x])
    if keep is not None:
        a["keepdims"] = int(keep)
    return a


class TvmElementwiseIntoReduction(Motif):
    """An element-wise op whose only consumer is a sum, max or min reduction fuses into it:
    ``<ew>_<reduce>``. Broken (``single_consumer``): the element-wise output is also added
    to the (kept-dims) reduction's result, so its post-dominator lies past the reduction
    and the path through the reduction is not injective: no fusion."""

    name = "TvmElementwiseIntoReduction"
    onnx_op = "ReduceSum"
    onnx_ops = ("ReduceMax", "ReduceMin", "Add") + tuple(UNARY)
    optimizer = "tvm"
    rewrite = "FuseOps (element-wise into comm-reduce)"
    expects = tuple(f"fused:{u}_{r}" for u in UNARY.values() for r in REDUCE.values())
    conditions = ("single_consumer",)
    arity = 1
    ranks = (1, 2, 3, 4)
    dtypes = FLOAT_SIGS

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


#: Reductions the importer decomposes -> the fused function their element-wise part and
#: sum make (ReduceL2's square root and ReduceLogSumExp's log-add stay outside).
DECOMPOSED = {"ReduceL1": "abs_sum", "ReduceL2": "multiply_sum", "ReduceSumSquare": "multiply_sum",
              "ReduceLogSumExp": "subtract_exp_sum"}


class TvmReduceDecomposition(Motif):
    """ReduceL1, ReduceL2, ReduceSumSquare or ReduceLogSumExp: the importer writes
    element-wise ops feeding a sum, FuseOps fuses them (``abs_sum``, ``multiply_sum``,
    ``subtract_exp_sum``). Broken (``decomposed``): a reduction the importer writes as one
    Relax op (ReduceSum, ReduceMax), which leaves nothing to fuse."""

    name = "TvmReduceDecomposition"
    onnx_op = "ReduceL2"
    onnx_ops = tuple(DECOMPOSED) + ("ReduceSum", "ReduceMax")
    optimizer = "tvm"
    rewrite = "ONNX importer reduction decomposition + FuseOps"
    expects = tuple(f"fused:{v}" for v in sorted(set(DECOMPOSED.values())))
    conditions = ("decomposed",)
    arity = 1
    ranks = (1, 2, 3, 4)
    dtypes = FLOAT_SIGS

    def draw(self, ctx, ins, violate):
        op = ctx.choice(("ReduceSum", "ReduceMax") if violate else tuple(DECOMPOSED))
        return {"op": op, "op_attrs": get(op).sample(ctx, ins)}

    def steps(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0),))]


class TvmMeanEpilogue(Motif):
    """ReduceMean, legalized as one sum-then-divide PrimFunc (out-element-wise-fusable),
    takes a following activation: ``mean_<act>``. Broken (``reduction_with_epilogue``):
    ReduceSum instead, a pure comm-reduce, which FuseOps never fuses forward."""

    name = "TvmMeanEpilogue"
    onnx_op = "ReduceMean"
    onnx_ops = ("ReduceSum",) + tuple(ACTIVATIONS)
    optimizer = "tvm"
    rewrite = "FuseOps (mean + element-wise)"
    expects = named(("mean",))
    conditions = ("reduction_with_epilogue",)
    arity = 1
    ranks = (1, 2, 3, 4)
    dtypes = FLOAT_SIGS

    def draw(self, ctx, ins, violate):
        op = "ReduceSum" if violate else "ReduceMean"
        act, act_attrs = activation(ctx, ins[0])
        return {"op": op, "op_attrs": get(op).sample(ctx, ins), "act": act, "act_attrs": act_attrs}

    def steps(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0),)), Step(a["act"], a["act_attrs"], (Out(0),))]


OPS = [TvmElementwiseIntoReduction, TvmReduceDecomposition, TvmMeanEpilogue]
