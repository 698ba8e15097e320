from __future__ import annotations

from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Out, Step, reread
from dlgate.ops.motifs.ort_common import OrtMotif
from dlgate.ops.registry import get


class GemmTransposeFusion(OrtMotif):
    """``gemm_transpose_fusion.cc`` (a rule): a Transpose with perm [1, 0], read only by
    Gemm as A or B, is folded into the Gemm's transA / transB."""

    onnx_op = "Transpose"
    onnx_ops = ("Gemm",)
    rewrite = "GemmTransposeFusion"
    expects = ("removed:Transpose",)
    arity = 3
    ranks = (2,)
    conditions = ("single_consumer",)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        at = TensorType(x.dtype, (x.shape[1], x.shape[0]))  # Transpose's output, Gemm's A
        gemm = get("Gemm").sample(ctx, [at])
        n = ctx.dim(16)
        m, k = (at.shape[1], at.shape[0]) if gemm["transA"] else at.shape
        return {"gemm": gemm, "b": (n, k) if gemm["transB"] else (k, n), "c": ctx.choice(((n,), (1, n), (m, n)))}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["b"] if i == 1 else a["c"])

    def steps(self, a):
        s = [Step("Transpose", {"perm": [1, 0], "omit": False}, (In(0),)), Step("Gemm", a["gemm"], (Out(0), In(1), In(2)))]
        if a["violate"] == "single_consumer":
            s += reread(s, 0, 1, "ReduceSum", {"keepdims": 1, "axes": [0, 1]})
        return s

    def constant_input(self, a, i):
        return True


OPS = [GemmTransposeFusion]
