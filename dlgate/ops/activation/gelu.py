from __future__ import annotations

import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.ops.activation._shared import Activation
from dlgate.ops.base import INF


class Gelu(Activation):
    onnx_op = "Gelu"
    min_opset = 20

    def sample(self, ctx, ins):
        return {"approximate": ctx.choice(("none", "tanh"))}

    def onnx_attrs(self, a, b):
        return {"approximate": b.opt(a["approximate"], "none")}

    def torch(self, a, x):
        return F.gelu(x, approximate=a["approximate"])

    # smallest at about -0.7518 (-0.16997) exactly, -0.7525 (-0.17004) with tanh
    valley = (-0.8, -0.7, -0.1701)
    out_range = (-0.1701, INF)

    def reference_defect(self, a, ins, opset):
        if ins and ins[0].dtype == dt.FLOAT64:
            # its function body's Erf is np.vectorize(math.erf, otypes=["f"]): float32 values,
            # which 1 + erf(x / sqrt(2)) turns into relative errors of 1e-5 at x = -3
            return "onnx.reference computes float64 Gelu's Erf in float32 (1e-5 relative error below x = -3)"
        return None


OPS = [Gelu]
