from __future__ import annotations

import torch

from dlgate.ops.binary._shared import Extremum


class Max(Extremum):
    onnx_op = "Max"
    fn = torch.maximum
    pick = max


OPS = [Max]
