from __future__ import annotations

import torch

from dlgate.ops.logic._shared import Logical


class Or(Logical):
    onnx_op = "Or"
    fn = torch.logical_or

    siblings = "logical"


OPS = [Or]
