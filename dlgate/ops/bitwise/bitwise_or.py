from __future__ import annotations

import torch

from dlgate.ops.bitwise._shared import Bitwise


class BitwiseOr(Bitwise):
    onnx_op = "BitwiseOr"
    fn = torch.bitwise_or

    siblings = "bitwise"


OPS = [BitwiseOr]
