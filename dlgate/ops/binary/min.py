from __future__ import annotations

import torch

from dlgate.ops.binary._shared import Extremum


class Min(Extremum):
    onnx_op = "Min"
    fn = torch.minimum
    pick = min


OPS = [Min]
