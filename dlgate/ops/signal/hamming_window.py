from __future__ import annotations

from dlgate.ops.signal._shared import _Window


class HammingWindow(_Window):
    onnx_op = "HammingWindow"
    onnx_ops = ("Shape", "Gather")


OPS = [HammingWindow]
