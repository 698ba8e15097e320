from __future__ import annotations

from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Out, Step, reread
from dlgate.ops.motifs.ort_common import F16, F32, OrtMotif
from dlgate.ops.motifs.ort_matmul._shared import _n


class MatMulAddFusion(OrtMotif):
    """``matmul_add_fusion.cc``: float32 or float16 MatMul(A, B) with B of rank 2, read
    only by an Add of a bias of N > 1 elements that Gemm's C takes ([N], [1, N], [M, N];
    [N] only for A of rank 3, which is reshaped to 2-D around the Gemm), becomes Gemm."""

    onnx_op = "MatMul"
    onnx_ops = ("Add",)
    rewrite = "MatMulAddFusion"
    expects = ("transformer:MatMulAddFusion", "fused:Gemm")
    fuse_dtypes = (F32, F16)
    arity = 3
    ranks = (2, 3)
    conditions = ("single_consumer", "b_rank", "bias_shape", "dtype")

    def draw(self, ctx, ins, violate):
        x = ins[0]
        n = max(2, _n(ctx))
        m = x.shape[-2]
        if violate == "bias_shape":
            c = ()  # a scalar bias
        else:  # A of rank 3 is reshaped to 2-D around the Gemm, its bias must be [N]
            c = ctx.choice(((n,), (1, n), (m, n))) if x.rank == 2 else (n,)
        b = (2, x.shape[-1], n) if violate == "b_rank" else (x.shape[-1], n)
        return {"b": b, "c": c, "rank": x.rank}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["b"] if i == 1 else a["c"])

    def steps(self, a):
        s = [Step("MatMul", {}, (In(0), In(1))), Step("Add", {}, (Out(0), In(2)))]
        if a["violate"] == "single_consumer":
            s += reread(s, 0, 1, op="Mul")
        return s

    def constant_input(self, a, i):
        return True


OPS = [MatMulAddFusion]
