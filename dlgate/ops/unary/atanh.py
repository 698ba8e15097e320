from __future__ import annotations

import torch

from dlgate.ops.base import Increasing
from dlgate.ops.unary._shared import UnitInterval


class Atanh(Increasing, UnitInterval):
    onnx_op = "Atanh"
    fn = torch.atanh

    open_domain = True  # atanh(+-1) is +-inf


OPS = [Atanh]
