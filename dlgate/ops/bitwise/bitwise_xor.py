from __future__ import annotations

import torch

from dlgate.ops.bitwise._shared import Bitwise


class BitwiseXor(Bitwise):
    onnx_op = "BitwiseXor"
    fn = torch.bitwise_xor

    siblings = "bitwise"


OPS = [BitwiseXor]
