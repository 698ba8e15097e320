from __future__ import annotations

import torch

from dlgate.ops.activation._shared import AxisActivation


class Softmax(AxisActivation):
    onnx_op = "Softmax"

    def torch(self, a, x):
        return torch.softmax(x, dim=a["axis"])

    out_range = (0.0, 1.0)

    def value_range(self, a, ranges, ins):
        # along an axis of size 1 every output is exactly 1
        return [(1.0, 1.0)] if ins[0].shape[a["axis"]] == 1 else [self.out_range]

    def anchor(self, a, anchors, ins):
        return 1.0 / ins[0].shape[a["axis"]]  # n probabilities summing to 1 straddle 1/n

    def exact(self, a, exacts, ins):
        return 1.0 if ins[0].shape[a["axis"]] == 1 else None  # exp(x - x) / exp(x - x)


OPS = [Softmax]
