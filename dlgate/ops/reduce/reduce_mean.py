from __future__ import annotations

import torch

from dlgate.ops.reduce._shared import Reduce


class ReduceMean(Reduce):
    """Floats only: ONNX leaves the rounding of integer means to the backend."""

    onnx_op = "ReduceMean"
    noop_identity = True

    keeps_range = True

    def fn(self, x, dims, keep):
        return torch.mean(x, dims, keepdim=keep)


OPS = [ReduceMean]
