from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import Stepwise
from dlgate.ops.unary._shared import Unary


class Ceil(Stepwise, Unary):
    onnx_op = "Ceil"
    fn = torch.ceil
    proxy = L.proxy_ceil


OPS = [Ceil]
