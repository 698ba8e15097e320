from __future__ import annotations

from dlgate.ops.signal._shared import _Window


class HannWindow(_Window):
    onnx_op = "HannWindow"
    onnx_ops = ("Shape", "Gather")


OPS = [HannWindow]
