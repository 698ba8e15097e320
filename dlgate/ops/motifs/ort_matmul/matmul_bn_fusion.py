from __future__ import annotations

from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F32, F64, OrtMotif, single_consumer
from dlgate.ops.motifs.ort_matmul._shared import _n
from dlgate.ops.registry import get


class MatMulBnFusion(OrtMotif):
    """``matmul_bn_fusion.cc`` (a level-1 rule): MatMul(A, B) of rank-2 A and constant B,
    read only by a BatchNormalization with constant scale, bias, mean and variance,
    becomes Gemm with the statistics folded into B and C. A rank-3 A (``rank_2`` broken)
    is the rule's other side: BatchNormalization then normalizes the MatMul's rows (axis 1),
    not the columns B's statistics would fold into, and the rule must decline (onnxruntime
    1.20 fused it anyway and failed to build the session)."""

    onnx_op = "MatMul"
    onnx_ops = ("BatchNormalization",)
    rewrite = "MatmulBNFusion"
    expects = ("removed:BatchNormalization",)
    arity = 6
    ranks = (2, 3)
    types = (F32, F64)
    conditions = ("weights_constant", "bn_constant", "single_consumer", "rank_2")

    def sample(self, ctx, ins):
        # the first input's rank decides the rank_2 side: a rank-3 A breaks it, a rank-2 A
        # holds it and may break another condition
        a = super().sample(ctx, ins)
        if ins[0].rank == 3:
            a.update(self.draw(ctx, ins, "rank_2"), violate="rank_2")
        elif a["violate"] == "rank_2":
            a.update(self.draw(ctx, ins, None), violate=None)
        return a

    def draw(self, ctx, ins, violate):
        n = max(2, _n(ctx))
        if ins[0].rank == 3 and ctx.coin(0.5):
            # as many columns as rows: BatchNormalization's statistics then fit the columns
            # too, and only the rank tells the rule not to fold them
            n = ins[0].shape[1]
        out = ins[0].shape[:-1] + (n,)  # the MatMul's output
        bn = get("BatchNormalization").sample(ctx, [ins[0].with_shape(out)])
        return {"n": n, "c": out[1], "bn": bn}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, (ins[0].shape[-1], a["n"]) if i == 1 else (a.get("c", a["n"]),))

    def steps(self, a):
        s = [Step("MatMul", {}, (In(0), In(1))), Step("BatchNormalization", a["bn"], (Out(0), In(2), In(3), In(4), In(5)))]
        return single_consumer(a, s, 0, 1)

    def constant_input(self, a, i):
        v = a["violate"]
        if i == 1:
            return v != "weights_constant"
        return not (v == "bn_constant" and i == 4)  # a live mean


OPS = [MatMulBnFusion]
