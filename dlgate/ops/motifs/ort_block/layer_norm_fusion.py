from __future__ import annotations

from dlgate.ops.motif import In, Out, Step
from dlgate.ops.motifs.ort_block._shared import _RowNorm
from dlgate.ops.motifs.ort_common import F32, F64, scalar


class LayerNormFusion(_RowNorm):
    """``layer_norm_fusion.cc`` (``LayerNormFusionL1`` into the standard LayerNormalization
    from opset 17, ``LayerNormFusionL2`` into the contrib one before): ``(x - mean) /
    sqrt(var + eps) * gamma + beta`` over the last axis, gamma and beta constant vectors;
    statistics over another axis are left alone."""

    onnx_op = "Mul"
    onnx_ops = ("ReduceMean", "Sub", "Pow", "Add", "Sqrt", "Div")
    rewrite = "LayerNormFusion"
    expects = ("transformer:LayerNormFusionL1", "transformer:LayerNormFusionL2")
    arity = 3
    # no float16: its step-by-step rounding of x - mean is ill-conditioned on short rows,
    # and onnxruntime runs the decomposition in float32 (see docs/limitations.md)
    types = (F32, F64)

    def steps(self, a):
        s = _layer_norm(a, In(0), [a["axis"]], a["eps"])
        return s + [Step("Mul", {}, (Out(6), In(1))), Step("Add", {}, (Out(7), In(2)))]


def _layer_norm(a, x, axes, eps) -> list:
    """ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div: (x - mean) / sqrt(var + eps)."""
    k = {"keepdims": 1, "axes": axes}
    c = lambda v, h="c": scalar(v, a["dtype"], h)  # noqa: E731
    return [Step("ReduceMean", k, (x,)), Step("Sub", {}, (x, Out(0))), Step("Pow", {}, (Out(1), c(2.0, "two"))),
            Step("ReduceMean", k, (Out(2),)), Step("Add", {}, (Out(3), c(eps, "eps"))), Step("Sqrt", {}, (Out(4),)),
            Step("Div", {}, (Out(1), Out(5)))]


OPS = [LayerNormFusion]
