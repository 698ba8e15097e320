from __future__ import annotations

import torch

from dlgate.ops.logic._shared import Logical


class Xor(Logical):
    onnx_op = "Xor"
    fn = torch.logical_xor

    siblings = "logical"


OPS = [Xor]
