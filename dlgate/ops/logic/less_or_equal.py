from __future__ import annotations

import torch

from dlgate.ops.logic._shared import Compare


class LessOrEqual(Compare):
    onnx_op = "LessOrEqual"
    fn = torch.le

    siblings = "order-comparison"


OPS = [LessOrEqual]
