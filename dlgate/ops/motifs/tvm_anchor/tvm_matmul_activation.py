from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.binary._shared import broadcast_partner
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.tvm_anchor._shared import _AnchorEpilogue
from dlgate.ops.motifs.tvm_common import ACTIVATIONS, named


class TvmMatMulActivation(_AnchorEpilogue):
    """MatMul of two live operands of two or more dims, batch dims broadcast (numpy
    style), then an activation: ``matmul_<act>``. Broken (``two_dim_operands``): the
    second operand is 1-D, which the importer promotes and squeezes back around the
    product, so the activation meets an injective op, not the matmul."""

    onnx_op = "MatMul"
    onnx_ops = tuple(ACTIVATIONS)
    rewrite = "FuseOps (broadcast matmul + element-wise)"
    expects = named(("matmul",))
    arity = 2
    ranks = (2, 3, 4)
    types = dt.FLOATS + dt.COMMON_INTS
    min_opset = 14  # integer Relu
    conditions = ("two_dim_operands",)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        names = tuple(ACTIVATIONS) if dt.is_float(x.dtype) else ("Relu",)
        a = {"n": ctx.dim(16), "batch": list(broadcast_partner(ctx, tuple(x.shape[:-2])))}
        return self.epilogue(ctx, a, x, names)

    def input_type(self, ctx, i, ins, a, dtype):
        k = ins[0].shape[-1]
        shape = (k,) if a["violate"] else tuple(a["batch"]) + (k, a["n"])
        return ins[0].with_dtype(dtype).with_shape(shape)

    def requires(self, ins, a):
        # a reused second operand must keep the draw's side of the decision
        if len(ins) > 1 and (ins[1].rank == 1) != (a["violate"] == "two_dim_operands"):
            return [False]
        return super().requires(ins, a)

    def steps(self, a):
        return [Step("MatMul", {}, (In(0), In(1))), Step(a["act"], a["act_attrs"], (Out(0),))]


OPS = [TvmMatMulActivation]
