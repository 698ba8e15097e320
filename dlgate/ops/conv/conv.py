from __future__ import annotations

from dlgate.ops.conv._shared import _ConvBase


class Conv(_ConvBase):
    onnx_op = "Conv"


class ConvNoBias(Conv):
    name = "ConvNoBias"
    has_bias = False


OPS = [Conv, ConvNoBias]
