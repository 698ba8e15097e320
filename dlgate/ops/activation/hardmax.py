from __future__ import annotations

import torch

from dlgate.ops.activation._shared import AxisActivation


class Hardmax(AxisActivation):
    """One-hot of the *first* maximum along ``axis`` (ONNX's tie-breaking, and NumPy's
    argmax, which treats the first NaN as the maximum), computed without relying on
    PyTorch's own argmax tie-breaking."""
    onnx_op = "Hardmax"

    def torch(self, a, x):
        ax = a["axis"] % x.dim()
        m = x.amax(dim=ax, keepdim=True)
        hit = torch.where(torch.isnan(m), torch.isnan(x), x == m)
        first = hit & (torch.cumsum(hit.to(torch.int64), dim=ax) == 1)
        return first.to(x.dtype)

    integral_out = True
    out_range = (0.0, 1.0)
    jumps = True
    steerable = False

    def value_range(self, a, ranges, ins):
        return [(1.0, 1.0)] if ins[0].shape[a["axis"]] == 1 else [self.out_range]

    def exact(self, a, exacts, ins):
        # each slice along the axis holds one 1, and 0s beside it when it is longer
        return 0.0 if ins[0].shape[a["axis"]] > 1 else 1.0


OPS = [Hardmax]
