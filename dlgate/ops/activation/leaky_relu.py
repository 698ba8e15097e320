from __future__ import annotations

import torch

from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import INF_ONLY, Increasing


class LeakyRelu(Increasing, Activation):
    onnx_op = "LeakyRelu"
    params = (("alpha", 0.0, 1.0, 0.01),)

    def torch(self, a, x):
        return torch.where(x >= 0, x, x * a["alpha"])

    def value_range(self, a, ranges, ins):
        # non-decreasing (alpha >= 0); written out so alpha = 0 at -inf gives 0, not NaN
        lo, hi = ranges[0]
        f = lambda x: x if x >= 0 else (0.0 if a["alpha"] == 0 else a["alpha"] * x)  # noqa: E731
        return [(f(lo), f(hi))]

    def defines_nonfinite(self, a, ins):
        return INF_ONLY if a["alpha"] > 0 else frozenset()  # alpha * -inf with alpha 0: NaN, or 0?


OPS = [LeakyRelu]
