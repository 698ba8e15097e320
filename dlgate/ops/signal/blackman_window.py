from __future__ import annotations

from dlgate.ops.signal._shared import _Window


class BlackmanWindow(_Window):
    onnx_op = "BlackmanWindow"
    onnx_ops = ("Shape", "Gather")


OPS = [BlackmanWindow]
