from __future__ import annotations

import torch.nn.functional as F

from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import Increasing


class Softsign(Increasing, Activation):
    onnx_op = "Softsign"
    fn = F.softsign

    out_range = (-1.0, 1.0)


OPS = [Softsign]
