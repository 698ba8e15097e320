from __future__ import annotations

import torch

from dlgate.ops.logic._shared import Logical


class And(Logical):
    onnx_op = "And"
    fn = torch.logical_and

    siblings = "logical"


OPS = [And]
