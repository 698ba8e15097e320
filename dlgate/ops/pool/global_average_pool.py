from __future__ import annotations

from dlgate.ops.pool._shared import _GlobalPool


class GlobalAveragePool(_GlobalPool):
    onnx_op = "GlobalAveragePool"

    keeps_range = True
    siblings = "global-pool"


OPS = [GlobalAveragePool]
