from __future__ import annotations

import numpy as np
import torch

from dlgate.ops.activation._shared import AxisActivation
from dlgate.ops.base import INF


class LogSoftmax(AxisActivation):
    onnx_op = "LogSoftmax"

    def torch(self, a, x):
        return torch.log_softmax(x, dim=a["axis"])

    def value_range(self, a, ranges, ins):
        return [(0.0, 0.0)] if ins[0].shape[a["axis"]] == 1 else [(-INF, 0.0)]

    def anchor(self, a, anchors, ins):
        return -float(np.log(ins[0].shape[a["axis"]]))  # log of probabilities straddling 1/n

    def exact(self, a, exacts, ins):
        return 0.0 if ins[0].shape[a["axis"]] == 1 else None  # x - x - log(1)


OPS = [LogSoftmax]
