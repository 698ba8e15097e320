from __future__ import annotations

import torch

from dlgate.ops.bitwise._shared import Bitwise


class BitwiseAnd(Bitwise):
    onnx_op = "BitwiseAnd"
    fn = torch.bitwise_and

    siblings = "bitwise"


OPS = [BitwiseAnd]
