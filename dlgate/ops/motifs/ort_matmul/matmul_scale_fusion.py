from __future__ import annotations

from dlgate.ops.base import TensorType
from dlgate.ops.motif import In, Out, Step, reread
from dlgate.ops.motifs.ort_common import F32, OrtMotif
from dlgate.ops.motifs.ort_matmul._shared import _n


class MatMulScaleFusion(OrtMotif):
    """``matmul_scale_fusion.cc`` (level 2): a float32 Mul or Div by a constant scalar on
    an input of MatMul, or on its output when nothing else reads it, becomes
    ``com.microsoft:FusedMatMul``'s alpha. The scalar is a one-element tensor of a rank up to
    the scaled tensor's; one rank more (``scale_rank`` broken) broadcasts the result up a
    rank, which the fusion must decline."""

    onnx_op = "MatMul"
    onnx_ops = ("Mul", "Div")
    rewrite = "MatMulScaleFusion"
    expects = ("transformer:MatMulScaleFusion", "fused:com.microsoft:FusedMatMul")
    level = "extended"
    fuse_dtypes = (F32,)
    arity = 3
    ranks = (2, 3, 4)
    conditions = ("scale_constant", "scale_scalar", "single_consumer", "dtype", "scale_rank")

    def draw(self, ctx, ins, violate):
        x = ins[0]
        where = "out" if violate == "single_consumer" or (violate == "scale_scalar" and x.shape[-1] < 2) \
            else ctx.choice(("a", "b", "out"))
        n = max(2, _n(ctx))
        if violate == "scale_scalar":
            shape = (n,) if where != "a" else (x.shape[-1],)  # a vector (of 2 or more) along the last axis
        else:
            # one element, of a rank up to the tensor it scales; one more (scale_rank broken)
            # broadcasts the result up a rank, and the fusion must decline (onnxruntime before
            # 1.23 folded it into alpha and lost that rank)
            scaled = 2 if where == "b" else x.rank
            shape = (1,) * (scaled + 1 if violate == "scale_rank" else ctx.choice((0, 1, scaled)))
        return {"where": where, "op": ctx.choice(("Mul", "Div")) if where == "out" else "Mul", "b": (x.shape[-1], n),
                "shape": shape}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, a["b"] if i == 1 else a["shape"])

    def steps(self, a):
        v, where = a["violate"], a["where"]
        scale = In(2)
        if where == "a":
            s = [Step(a["op"], {}, (In(0), scale)), Step("MatMul", {}, (Out(0), In(1)))]
        elif where == "b":
            s = [Step(a["op"], {}, (In(1), scale)), Step("MatMul", {}, (In(0), Out(0)))]
        else:
            s = [Step("MatMul", {}, (In(0), In(1))), Step(a["op"], {}, (Out(0), scale))]
        if v == "single_consumer":
            s += reread(s, 0, 1, "ReduceSum", {"keepdims": 0, "axes": list(range(len(a["b"])))})
        return s

    def constant_input(self, a, i):
        return i == 2 and a["violate"] != "scale_constant"  # B stays live: a constant B would be folded


OPS = [MatMulScaleFusion]
