from __future__ import annotations

from dlgate.ops.motifs.ort_conv._shared import _ConvThen


class ConvMulFusion(_ConvThen):
    """``conv_mul_fusion.cc``: Conv -> Mul by a constant [M, 1, ...] scales the weights and bias."""

    onnx_ops = ("Mul",)
    rewrite = "ConvMulFusion"
    expects = ("removed:Mul",)
    binop = "Mul"


OPS = [ConvMulFusion]
