from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_qdq._shared import _QDQ, fq
from dlgate.ops.registry import get


class QDQDropPair(_QDQ):
    """``qdq_selector_action_transformer.cc``'s DropQDQ rule (level 2): DQ -> Transpose,
    Reshape or MaxPool -> Q with the same type, scale and zero point on both sides drops
    the DQ and Q around the node, which then moves the quantized values themselves."""

    onnx_op = "QuantizeLinear"
    onnx_ops = ("DequantizeLinear", "Transpose", "Reshape", "MaxPool")
    rewrite = "QDQSelectorActionTransformer"
    level = "extended"
    ranks = (1, 2, 3, 4)
    conditions = ("same_quantization",)

    def draw(self, ctx, ins, violate):
        x = ins[0]
        ops = ["Transpose", "Reshape"] + (["MaxPool"] if x.rank >= 3 else [])
        op = ctx.choice(ops)
        attrs = get(op).sample(ctx, [x])
        if op == "MaxPool":
            attrs.update(auto_pad="NOTSET", pads=[0] * len(attrs["pads"]), ceil_mode=0)
        q = fq(ctx)
        return {"q": q, "q2": other(ctx, q) if violate == "same_quantization" else q, "op": op, "attrs": attrs}

    def steps(self, a):
        return [Step("FakeQuant", a["q"], (In(0),)), Step(a["op"], a["attrs"], (Out(0),)),
                Step("FakeQuant", a["q2"], (Out(1),)), Step("Neg", {}, (Out(2),))]


def other(ctx, q: dict) -> dict:
    """Another quantization of the same type: the scale doubled or halved."""
    return fq(ctx, q["to"], q["e"] + ctx.choice((-1, 1)), q["zp"])


OPS = [QDQDropPair]
