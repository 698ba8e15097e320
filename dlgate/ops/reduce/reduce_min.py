from __future__ import annotations

import torch

from dlgate.ops.reduce._shared import ReduceExtremum


class ReduceMin(ReduceExtremum):
    onnx_op = "ReduceMin"
    pick = torch.amin


OPS = [ReduceMin]
