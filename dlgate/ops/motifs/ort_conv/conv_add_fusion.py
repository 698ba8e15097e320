from __future__ import annotations

from dlgate.ops.motifs.ort_conv._shared import _ConvThen


class ConvAddFusion(_ConvThen):
    """``conv_add_fusion.cc``: Conv -> Add of a constant [M, 1, ...] becomes the Conv's bias."""

    onnx_ops = ("Add",)
    rewrite = "ConvAddFusion"
    expects = ("removed:Add",)
    binop = "Add"


OPS = [ConvAddFusion]
