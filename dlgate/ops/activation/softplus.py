from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import INF, Increasing


class Softplus(Increasing, Activation):
    onnx_op = "Softplus"
    fn = F.softplus  # log(1 + exp(x)), linear past 20 like a stable log-add-exp

    out_range = (0.0, INF)

    def undefined(self, a, ins, out_types):
        x = ins[0]
        if x.numel() and float(x.detach().double().max()) > math.log(float(torch.finfo(x.dtype).max)):
            return (f"exp(x) overflows {out_types[0].dtype}: the function body log(exp(x) + 1) gives inf where "
                    "the exact value is finite (about x)")
        return None


OPS = [Softplus]
