from __future__ import annotations

import numpy as np
import torch

from dlgate.ops import sym
from dlgate.ops.base import IEEE
from dlgate.ops.index._shared import MAX_INDICES, _budget, _nested, _spell
from dlgate.ops.index.gather import Gather


class GatherElements(Gather):
    """``indices`` of the data's shape except along ``axis`` (onnx.reference insists on
    equal sizes elsewhere), values in [-n, n-1]."""

    onnx_op = "GatherElements"
    #: np.choose (onnx.reference's implementation) takes at most 63 choices.
    ref_max_n = 63

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        n = x.shape[ax]
        other = sym.prod(x.shape) // n
        m = ctx.rng.randint(1, max(1, min(8, MAX_INDICES // other)))
        ishape = x.shape[:ax] + (m,) + x.shape[ax + 1:]
        return {"axis": _spell(ctx, ax, x.rank), "indices": _nested(ctx, ishape, -n, n - 1)}

    def backward(self, ctx, out):
        if out.rank < 1 or out.numel > MAX_INDICES:
            return None
        ax = ctx.rng.randrange(out.rank)
        n = ctx.rng.randint(1, max(1, min(ctx.limits.max_dim, _budget(ctx, out.numel // out.shape[ax]))))
        x = out.with_shape(out.shape[:ax] + (n,) + out.shape[ax + 1:])
        return [x], {"axis": _spell(ctx, ax, out.rank), "indices": _nested(ctx, out.shape, -n, n - 1)}

    def backward_ranks(self, out):
        return (out.rank,)

    def requires(self, ins, a):
        s, r = ins[0].shape, ins[0].rank
        ishape, ax = np.shape(a["indices"]), a["axis"] % r
        same = len(ishape) == r and all(ishape[i] == s[i] for i in range(r) if i != ax)
        return [same] + super().requires(ins, a)

    def infer(self, ins, a):
        return [ins[0].with_shape(np.shape(a["indices"]))]

    def torch(self, a, x):
        ax = a["axis"] % x.dim()
        idx = torch.tensor(a["indices"], dtype=torch.int64).reshape(np.shape(a["indices"]))
        idx = torch.where(idx < 0, idx + x.shape[ax], idx)
        return torch.gather(x, ax, idx)

    nonfinite = IEEE
    exact_values = True

    def reference_defect(self, a, ins, opset):
        s, ishape = tuple(ins[0].shape), np.shape(a["indices"])
        if a["axis"] == -1 and ishape != s:
            # shape[:dim] + shape[dim + 1:] is the whole shape after shape[:-1] for dim = -1
            return "onnx.reference's GatherElements compares the wrong dims for axis -1 (ValueError)"
        # np.choose fails beyond 63 choices; the fallback is right only for 2-D data,
        # axis 1 and a single index per row.
        if s[a["axis"] % len(s)] > self.ref_max_n and not (len(s) == 2 and a["axis"] == 1 and ishape[1] == 1):
            return "onnx.reference's GatherElements uses np.choose, which takes at most 63 choices"
        return None


OPS = [GatherElements]
