from __future__ import annotations

from dlgate.ops.base import UNBOUNDED
from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_common import F32
from dlgate.ops.motifs.ort_qdq._shared import _QDQ, fq
from dlgate.ops.registry import get


class ClipQuantFusion(_QDQ):
    """``clip_quantizelinear.cc`` (a level-2 rule): a Clip with constant bounds read only
    by a QuantizeLinear is dropped when its bounds hold the Q's whole representable range
    ([(qmin - z) * s, (qmax - z) * s], the bounds FakeQuant's value model gives its
    output); a narrower Clip stays."""

    onnx_op = "Clip"
    onnx_ops = ("QuantizeLinear", "DequantizeLinear")
    rewrite = "ClipQuantFusion"
    expects = ("removed:Clip",)
    level = "extended"
    conditions = ("wide_bounds",)

    def draw(self, ctx, ins, violate):
        q = fq(ctx)
        s = q["scale"]
        qlo, qhi = get("FakeQuant").value_range(q, [UNBOUNDED], ins[:1])[0]
        if violate == "wide_bounds":
            bounds = (qlo + (qhi - qlo) / 4, qhi)  # cuts off the lower quarter
        else:
            bounds = (qlo - ctx.choice((0.0, s, 1.0)), qhi + ctx.choice((0.0, s, 1.0)))
        return {"q": q, "clip": {"dtype": F32, "min": float(bounds[0]), "max": float(bounds[1])}}

    def steps(self, a):
        return [Step("Neg", {}, (In(0),)), Step("Clip", a["clip"], (Out(0),)), Step("FakeQuant", a["q"], (Out(1),)),
                Step("Neg", {}, (Out(2),))]


OPS = [ClipQuantFusion]
