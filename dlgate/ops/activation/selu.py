from __future__ import annotations

import torch

from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import INF_ONLY, Increasing


class Selu(Increasing, Activation):
    onnx_op = "Selu"
    params = (("alpha", 0.5, 3.0, 1.67326319217681884765625),
              ("gamma", 0.5, 2.0, 1.05070102214813232421875))

    def torch(self, a, x):
        return a["gamma"] * torch.where(x > 0, x, a["alpha"] * torch.expm1(x))

    nonfinite = INF_ONLY


OPS = [Selu]
