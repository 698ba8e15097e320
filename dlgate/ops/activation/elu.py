from __future__ import annotations

import torch.nn.functional as F

from dlgate.ops.activation._shared import Exponential


class Elu(Exponential):
    onnx_op = "Elu"
    fn = F.elu


OPS = [Elu]
