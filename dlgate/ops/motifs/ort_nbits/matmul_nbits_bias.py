from __future__ import annotations

from dlgate.ops.motif import In, Out, Step, last
from dlgate.ops.motifs.ort_nbits._shared import BLOCKS, I8, U8, _NBits, dq_weights, float_const, weight_const


class MatMulNBitsBias(_NBits):
    """``matmul_nbits_fusion.cc``: a MatMulNBits read only by an Add of a constant bias of
    shape [N] takes it as its bias input. MatMulAddFusion (level 1) makes a Gemm of every
    MatMul + Add first, except the projections of an attention block it leaves for
    AttentionFusion: a LayerNormalization read by exactly three MatMuls and one Add, whose
    other operand an Add makes. So the motif is that block, each projection's weights
    4-bit (DQ -> MatMul -> Add bias), the three summed and added back to the normalized
    input. A bias of shape [1, N] is declined (``bias_shape``); with two projections
    (``attention_shape``) MatMulAddFusion takes the pairs first."""

    onnx_op = "LayerNormalization"
    onnx_ops = ("DequantizeLinear", "MatMul", "Add")
    rewrite = "MatMulNBitsFusion"
    ranks = (3,)
    conditions = ("bias_shape", "attention_shape")

    def draw(self, ctx, ins, violate):
        h = ins[0].shape[-1]
        qt = ctx.choice((I8, U8))
        block = ctx.choice(BLOCKS)
        n = 2 if violate == "attention_shape" else 3
        dqs = [dq_weights(ctx, h, h, 4, qt, 0, block, ctx.coin(0.7)) for _ in range(n)]
        return {"dqs": dqs, "h": h, "bias": (1, h) if violate == "bias_shape" else (h,),
                "ln": {"epsilon": ctx.choice((1e-5, 1e-12)), "axis": -1, "stash_type": 1}}

    def steps(self, a):
        h = a["h"]
        s = [Step("LayerNormalization", a["ln"], (In(0), float_const(a, "gamma", (h,), 0.5, 1.5),
                                                  float_const(a, "beta", (h,))))]
        heads = []
        for i, dq in enumerate(a["dqs"]):
            s.append(Step("DequantizeLinear", dq, (weight_const(a, dq, f"w{i}"),)))
            s.append(Step("MatMul", {}, (Out(0), last(s))))
            s.append(Step("Add", {}, (last(s), float_const(a, f"b{i}", a["bias"]))))
            heads.append(last(s))
        total = heads[0]
        for head in heads[1:]:
            s.append(Step("Add", {}, (total, head)))
            total = last(s)
        return s + [Step("Add", {}, (Out(0), total))]


OPS = [MatMulNBitsBias]
