from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import Stepwise
from dlgate.ops.unary._shared import Unary


class Round(Stepwise, Unary):
    onnx_op = "Round"  # half to even in both ONNX and PyTorch
    fn = torch.round
    proxy = L.proxy_round


OPS = [Round]
