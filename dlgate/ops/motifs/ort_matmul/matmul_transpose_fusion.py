from __future__ import annotations

from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F32, F64, OrtMotif
from dlgate.ops.motifs.ort_matmul._shared import _n


class MatMulTransposeFusion(OrtMotif):
    """``matmul_transpose_fusion.cc`` (level 2): a float32 or float64 Transpose that swaps
    the last two axes of MatMul's A or B becomes ``com.microsoft:FusedMatMul``'s transA /
    transB (the Transpose stays when something else reads it)."""

    onnx_op = "Transpose"
    onnx_ops = ("MatMul",)
    rewrite = "MatmulTransposeFusion"
    expects = ("transformer:MatmulTransposeFusion", "fused:com.microsoft:FusedMatMul")
    level = "extended"
    fuse_dtypes = (F32, F64)
    arity = 2
    ranks = (3, 4)
    conditions = ("perm", "dtype")

    def draw(self, ctx, ins, violate):
        x = ins[0]
        r = x.rank
        if violate == "perm":  # a rotation of all axes: the last two are not just swapped
            perm = [r - 1] + list(range(r - 1))
        else:
            perm = list(range(r - 2)) + [r - 1, r - 2]
        t = [x.shape[p] for p in perm]
        side = ctx.choice(("a", "b"))
        n = _n(ctx)
        other = tuple(t[:-2]) + ((t[-1], n) if side == "a" else (n, t[-2]))
        return {"perm": perm, "side": side, "other": other, "rank": r}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["other"])

    def steps(self, a):
        tr = Step("Transpose", {"perm": a["perm"], "omit": False}, (In(0),))
        mm = Step("MatMul", {}, (Out(0), In(1)) if a["side"] == "a" else (In(1), Out(0)))
        return [tr, mm]


OPS = [MatMulTransposeFusion]
