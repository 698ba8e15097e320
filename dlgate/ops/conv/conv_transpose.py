from __future__ import annotations

from dlgate import dtypes as dt
from dlgate.ops.conv._shared import _ConvBase


class ConvTranspose(_ConvBase):
    """No float16: onnxruntime's CPU kernel accumulates overlapping windows in float16
    (errors of ~3e-2 on 100-term sums, beyond the float16 tolerance). ``output_shape`` only
    with an even total padding (split evenly) and no entry below the input's size."""

    onnx_op = "ConvTranspose"
    types = (dt.FLOAT32, dt.FLOAT64)
    transpose = True

    gaps = (("float16", "onnxruntime accumulates overlapping windows in float16"),
            ("output_shape with an odd total padding",
             "ONNX gives the extra pixel to the beginning, onnxruntime to the end"),
            ("output_shape entries below the input's size",
             "ONNX's shape inference then gives up (a rank-2 output), which the full checker refuses"))


class ConvTransposeNoBias(ConvTranspose):
    name = "ConvTransposeNoBias"
    has_bias = False


OPS = [ConvTranspose, ConvTransposeNoBias]
