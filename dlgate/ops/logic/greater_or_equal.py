from __future__ import annotations

import torch

from dlgate.ops.logic._shared import Compare


class GreaterOrEqual(Compare):
    onnx_op = "GreaterOrEqual"
    fn = torch.ge

    siblings = "order-comparison"


OPS = [GreaterOrEqual]
