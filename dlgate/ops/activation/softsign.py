from __future__ import annotations

import torch.nn.functional as F

from dlgate.ops.activation._shared import Activation


class Softsign(Activation):
    onnx_op = "Softsign"
    fn = F.softsign

    monotone = 1
    out_range = (-1.0, 1.0)


OPS = [Softsign]
