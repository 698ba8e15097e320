from __future__ import annotations

import torch

from dlgate.ops import losses as L
from dlgate.ops.base import Stepwise
from dlgate.ops.unary._shared import Unary


class Floor(Stepwise, Unary):
    onnx_op = "Floor"
    fn = torch.floor
    proxy = L.proxy_floor


OPS = [Floor]
