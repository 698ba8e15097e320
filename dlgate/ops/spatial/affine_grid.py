from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType


class AffineGrid(OpSpec):
    """theta (N, 2, 3) or (N, 3, 4) a graph tensor, ``size`` a constant (N, C, H, W) or
    (N, C, D, H, W). Output positions are theta times (x, y[, z], 1), x along the last dim.
    No spatial size 1 with ``align_corners=1``: ONNX's function body then divides 2 by 0 for
    H and W (NaN) but takes step 0 for D, and PyTorch puts the single position at 0."""

    onnx_op = "AffineGrid"
    min_opset = 20
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (3,)
    symbolic_ok = False

    def _attrs(self, ctx, n: int, spatial: tuple) -> dict:
        align = int(ctx.coin(0.5)) if all(s > 1 for s in spatial) else 0
        return {"size": [n, ctx.int(1, 8)] + list(spatial), "align_corners": align}

    def sample(self, ctx, ins):
        t = ins[0]
        r = 2 if tuple(t.shape[1:]) == (2, 3) else 3
        return self._attrs(ctx, t.shape[0], tuple(ctx.dim(8) for _ in range(r)))

    def backward(self, ctx, out):
        if out.rank not in (4, 5) or out.shape[-1] != out.rank - 2 or out.dtype not in dt.FLOATS:
            return None
        r = out.rank - 2
        theta = TensorType(out.dtype, (out.shape[0], r, r + 1))
        return [theta], self._attrs(ctx, out.shape[0], tuple(out.shape[1:-1]))

    def requires(self, ins, a):
        t = ins[0]
        r = len(a["size"]) - 2
        if r not in (2, 3) or t.rank != 3:
            return [False]
        cons = [t.shape[0] == a["size"][0], t.shape[1] == r, t.shape[2] == r + 1,
                not (t.dtype == dt.FLOAT16 and r == 2 and t.shape[0] == 1)]
        if a["align_corners"]:
            cons += [s > 1 for s in a["size"][2:]]
        return cons + [s >= 1 for s in a["size"]]

    def infer(self, ins, a):
        r = len(a["size"]) - 2
        return [ins[0].with_shape((a["size"][0],) + tuple(a["size"][2:]) + (r,))]

    def onnx(self, b, a, xs, ys):
        b.node(self.onnx_op, [xs[0], b.ints(a["size"])], ys, align_corners=b.opt(a["align_corners"], 0))

    def torch(self, a, theta):
        spatial = a["size"][2:]
        align = bool(a["align_corners"])
        axes = [_base_coords(s, align) for s in spatial]
        mesh = torch.meshgrid(*axes, indexing="ij")  # (D,) H, W
        # homogeneous positions (x, y[, z], 1): x runs along the last dim
        pos = torch.stack(list(reversed(mesh)) + [torch.ones_like(mesh[0])], dim=-1)
        y = torch.einsum("...k,nrk->n...r", pos, theta.to(torch.float64))
        return y.to(theta.dtype)

    gaps = (("spatial size 1 with align_corners=1", "ONNX's function body gives NaN (H, W) or -1 (D), PyTorch 0"),
            ("float16 2-D with a batch of 1",
             "ONNX's function body squeezes theta's rows without axes, dropping N = 1 too: onnxruntime (which "
             "runs the body for float16) fails in its Split"))

    def value_range(self, a, ranges, ins):
        # each output is r products theta * position (positions within [-1, 1]) plus a
        # translation
        lo, hi = ranges[0]
        m = max(abs(lo), abs(hi)) * (len(a["size"]) - 2)
        return [(lo - m, hi + m)]

    def reference_defect(self, a, ins, opset):
        if ins[0].dtype != dt.FLOAT32:
            return "onnx.reference's AffineGrid always returns float32"
        return None


# -- AffineGrid ------------------------------------------------------------------------------
def _base_coords(size: int, align: bool):
    """AffineGrid's evenly spaced positions along one dim, as ONNX's function body builds
    them (start + i * step)."""
    i = torch.arange(size, dtype=torch.float64)
    if align:
        return -1.0 + i * (2.0 / (size - 1))
    step = 2.0 / size
    return (-1.0 + step / 2) + i * step


OPS = [AffineGrid]
