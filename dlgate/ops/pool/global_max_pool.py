from __future__ import annotations

from dlgate.ops.pool._shared import _GlobalPool


class GlobalMaxPool(_GlobalPool):
    onnx_op = "GlobalMaxPool"

    keeps_range = True
    exact_values = True
    siblings = "global-pool"

    def reference_defect(self, a, ins, opset):
        if ins[0].rank != 4:
            return "onnx.reference's GlobalMaxPool reduces axes (r-2, r-1): the spatial axes only at rank 4"
        return None


OPS = [GlobalMaxPool]
