from __future__ import annotations

from dlgate.ops.motif import In, Step
from dlgate.ops.motifs.tvm_common import TvmMotif
from dlgate.ops.registry import get


#: Reductions the importer decomposes -> the fused function their element-wise part and
#: sum make (ReduceL2's square root and ReduceLogSumExp's log-add stay outside).
DECOMPOSED = {"ReduceL1": "abs_sum", "ReduceL2": "multiply_sum", "ReduceSumSquare": "multiply_sum",
              "ReduceLogSumExp": "subtract_exp_sum"}


class TvmReduceDecomposition(TvmMotif):
    """ReduceL1, ReduceL2, ReduceSumSquare or ReduceLogSumExp: the importer writes
    element-wise ops feeding a sum, FuseOps fuses them (``abs_sum``, ``multiply_sum``,
    ``subtract_exp_sum``). Broken (``decomposed``): a reduction the importer writes as one
    Relax op (ReduceSum, ReduceMax), which leaves nothing to fuse."""

    onnx_op = "ReduceL2"
    onnx_ops = tuple(DECOMPOSED) + ("ReduceSum", "ReduceMax")
    rewrite = "ONNX importer reduction decomposition + FuseOps"
    expects = tuple(f"fused:{v}" for v in sorted(set(DECOMPOSED.values())))
    arity = 1
    ranks = (1, 2, 3, 4)
    conditions = ("decomposed",)

    def draw(self, ctx, ins, violate):
        op = ctx.choice(("ReduceSum", "ReduceMax") if violate else tuple(DECOMPOSED))
        return {"op": op, "op_attrs": get(op).sample(ctx, ins)}

    def steps(self, a):
        return [Step(a["op"], a["op_attrs"], (In(0),))]


OPS = [TvmReduceDecomposition]
