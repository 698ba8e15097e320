from __future__ import annotations

import torch

from dlgate.ops.logic._shared import Compare


class Greater(Compare):
    onnx_op = "Greater"
    fn = torch.gt

    siblings = "order-comparison"


OPS = [Greater]
