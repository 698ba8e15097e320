from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.tvm_anchor._shared import _AnchorEpilogue
from dlgate.ops.motifs.tvm_common import ACTIVATIONS, named


class TvmMatMulBiasActivation(_AnchorEpilogue):
    """MatMul by a constant (K, N) weight, Add of a constant (N,) bias, an activation:
    ``matmul_add_<activation>`` (batched left operands broadcast against the 2-D weight)."""

    onnx_op = "MatMul"
    onnx_ops = ("Add",) + tuple(ACTIVATIONS)
    rewrite = "FuseOps (matmul + bias + activation)"
    expects = named(("matmul_add",))
    arity = 3
    ranks = (2, 3, 4)

    def draw(self, ctx, ins, violate):
        return self.epilogue(ctx, {"n": ctx.dim(16)}, ins[0])

    def head(self, a):
        return [Step("MatMul", {}, (In(0), In(1))), Step("Add", {}, (Out(0), In(2)))]

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0].with_dtype(dtype).with_shape((ins[0].shape[-1], a["n"]) if i == 1 else (a["n"],))

    def constant_input(self, a, i):
        return True


OPS = [TvmMatMulBiasActivation]
