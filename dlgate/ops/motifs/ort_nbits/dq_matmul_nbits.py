from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_nbits._shared import BLOCKS, OTHER_BLOCKS, _NBits, dq_weights, float_const, weight_const


class DQMatMulNBits(_NBits):
    """DequantizeLinear of a constant [K, N] int4, uint4, int8 or uint8 matrix, blocked
    along K (axis 0) with a block size that is a power of two of at least 16, read only by
    MatMul as its B, becomes MatMulNBits (an Add of a [N] bias after it, which
    MatMulAddFusion makes a Gemm first, becomes its bias). Blocks along N (axis 1) or of
    another size are declined."""

    onnx_op = "MatMul"  # the op whose schema takes the motif's input
    onnx_ops = ("DequantizeLinear", "Add")
    rewrite = "DQMatMulToMatMulNBits (QDQSelectorActionTransformer)"
    expects = ("fused:com.microsoft:MatMulNBits",)
    ranks = (1, 2, 3)
    conditions = ("block_size", "axis")

    def draw(self, ctx, ins, violate):
        k, n = ins[0].shape[-1], max(2, ctx.dim(16))
        bits, qt = self._width(ctx)
        block = ctx.choice(OTHER_BLOCKS if violate == "block_size" else BLOCKS)
        dq = dq_weights(ctx, k, n, bits, qt, 1 if violate == "axis" else 0, block, ctx.coin(0.7))
        return {"dq": dq, "bias": ctx.coin(0.5)}

    def steps(self, a):
        s = [Step("DequantizeLinear", a["dq"], (weight_const(a, a["dq"], "w"),)), Step("MatMul", {}, (In(0), Out(0)))]
        if a["bias"]:
            s.append(Step("Add", {}, (Out(1), float_const(a, "b", (a["dq"]["n"],)))))
        return s


OPS = [DQMatMulNBits]
