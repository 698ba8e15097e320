from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.tvm_anchor._shared import _AnchorEpilogue
from dlgate.ops.motifs.tvm_anchor.tvm_matmul_bias_activation import TvmMatMulBiasActivation
from dlgate.ops.motifs.tvm_common import ACTIVATIONS, activation


class TvmDiamondFusion(_AnchorEpilogue):
    """The diamond of ``fuse_ops.cc``'s note: MatMul + bias whose output feeds two
    activations that rejoin in a Mul. The Mul post-dominates the anchor through
    element-wise paths only, so the whole diamond is one function,
    ``matmul_add_<act1>_<act2>_multiply``. Broken (``elementwise_branches``): the second
    branch is a reduction (ReduceMean, kept dims) instead, and the anchor stops at its bias."""

    onnx_op = "MatMul"
    onnx_ops = ("Add", "Mul", "ReduceMean") + tuple(ACTIVATIONS)
    rewrite = "FuseOps (post-dominator through element-wise branches)"
    expects = tuple(f"fused:matmul_add_{p}_{q}_multiply" for p in ACTIVATIONS.values()
                    for q in ACTIVATIONS.values())
    arity = 3
    ranks = (2, 3, 4)
    conditions = ("elementwise_branches",)
    input_type = TvmMatMulBiasActivation.input_type
    constant_input = TvmMatMulBiasActivation.constant_input

    def draw(self, ctx, ins, violate):
        a = self.epilogue(ctx, {"n": ctx.dim(16)}, ins[0])
        a["act2"], a["act2_attrs"] = activation(ctx, ins[0])
        return a

    def steps(self, a):
        s = [Step("MatMul", {}, (In(0), In(1))), Step("Add", {}, (Out(0), In(2))),
             Step(a["act"], a["act_attrs"], (Out(1),))]
        if a["violate"] == "elementwise_branches":
            s.append(Step("ReduceMean", {"keepdims": 1, "axes": [a["out_rank"] - 1]}, (Out(1),)))
        else:
            s.append(Step(a["act2"], a["act2_attrs"], (Out(1),)))
        return s + [Step("Mul", {}, (Out(2), Out(3)))]


OPS = [TvmDiamondFusion]
