from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.motif import In, Out, Step, last
from dlgate.ops.motifs.tvm_common import TvmMotif


class TvmDataflowReshape(TvmMotif):
    """MatMul, Reshape (or Flatten) to two dims, MatMul, with constant weights: neither
    product takes the reshape (an injective op fuses only into injective or element-wise
    consumers, and a matmul's epilogue must be element-wise), so it stays a reshape kernel
    inside the dataflow block, which ``RewriteDataflowReshape`` turns into a view. Broken
    (``lone_reshape``): a Relu after the reshape, which fuses with it (``reshape_relu``),
    so no pure reshape kernel is left."""

    onnx_op = "MatMul"
    onnx_ops = ("Reshape", "Flatten", "Relu")
    rewrite = "RewriteDataflowReshape"
    expects = ("pass:RewriteDataflowReshape",)
    arity = 3
    ranks = (3, 4)
    # no float16: onnxruntime runs a float16 MatMul chain in float32 without rounding the
    # intermediate product (see TvmAttentionScores), beyond float16's tolerance
    types = (dt.FLOAT32, dt.FLOAT64)
    conditions = ("lone_reshape",)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        n1, n2 = ctx.dim(8), ctx.dim(8)
        mid = tuple(x.shape[:-1]) + (n1,)
        if ctx.coin():
            k = ctx.rng.randint(1, x.rank - 1)  # keeps the last dim in the second factor
            op, attrs = "Flatten", {"axis": k}
            cols = sym.prod(mid[k:])
        else:
            cols = n1
            shape = [sym.prod(mid) // n1, n1]
            op, attrs = "Reshape", {"shape": shape, "spec": [-1, n1] if ctx.coin() else shape}
        return {"n1": n1, "n2": n2, "cols": cols, "op": op, "op_attrs": attrs}

    def input_type(self, ctx, i, ins, a, dtype):
        shape = (ins[0].shape[-1], a["n1"]) if i == 1 else (a["cols"], a["n2"])
        return ins[0].with_dtype(dtype).with_shape(shape)

    def steps(self, a):
        s = [Step("MatMul", {}, (In(0), In(1))), Step(a["op"], a["op_attrs"], (Out(0),))]
        if a["violate"] == "lone_reshape":
            s.append(Step("Relu", {}, (Out(1),)))
        return s + [Step("MatMul", {}, (last(s), In(2)))]

    def constant_input(self, a, i):
        return True


OPS = [TvmDataflowReshape]
