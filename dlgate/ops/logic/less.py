from __future__ import annotations

import torch

from dlgate.ops.logic._shared import Compare


class Less(Compare):
    onnx_op = "Less"
    fn = torch.lt

    siblings = "order-comparison"


OPS = [Less]
