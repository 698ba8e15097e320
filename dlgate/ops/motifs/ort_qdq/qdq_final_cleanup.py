from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_qdq._shared import I8, _QDQ, U8, fq


class QDQFinalCleanup(_QDQ):
    """``qdq_final_cleanup.cc`` (level 2, after the QDQ fusions): a DQ -> Q pair that maps
    every value to itself is removed. Q(uint8, z) -> DQ -> Q(int8, z - 128) -> DQ becomes
    such a pair once ``QDQS8ToU8Transformer`` (where registered) has turned the int8 pair
    into uint8 with zero point z; a zero point off by one is no identity."""

    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear",)
    rewrite = "QDQFinalCleanupTransformer"
    level = "extended"
    conditions = ("identity_pair",)
    #: The transformer that makes the pair an identity, registered on some machines only.
    needs = "QDQS8ToU8Transformer"

    def draw(self, ctx, ins, violate):
        q1 = fq(ctx, U8, z=ctx.rng.randint(100, 150))
        z2 = q1["zp"] - 128 + (ctx.choice((-1, 1)) if violate == "identity_pair" else 0)
        return {"q1": q1, "q2": fq(ctx, I8, q1["e"], z2)}

    def steps(self, a):
        return [Step("FakeQuant", a["q1"], (In(0),)), Step("FakeQuant", a["q2"], (Out(0),)), Step("Neg", {}, (Out(1),))]


OPS = [QDQFinalCleanup]
