from __future__ import annotations

import torch

from dlgate.ops.reduce._shared import ReduceExtremum


class ReduceMax(ReduceExtremum):
    onnx_op = "ReduceMax"
    pick = torch.amax


OPS = [ReduceMax]
