from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.spatial._shared import SCALES, _dyadic


class MaxRoiPool(OpSpec):
    """Caffe's ROI pooling, as onnxruntime implements it (ONNX says only "max pooling across
    each RoI"): region corners rounded to pixels (here already whole pixels after
    ``spatial_scale``), bins ``floor(i * size / pooled)`` to ``ceil((i + 1) * size / pooled)``
    with ``size = end - start + 1``. Regions lie inside the image, every bin holds a
    pixel (an empty bin gives 0 by convention) and ``size / pooled`` is a short binary
    fraction, so the bin edges are exact in every implementation. onnx.reference has no
    MaxRoiPool."""

    onnx_op = "MaxRoiPool"
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (4,)
    symbolic_ok = False

    def _attrs(self, ctx, x: TensorType, n_rois: int, pooled=None) -> dict | None:
        n, _, h, w = x.shape
        scale = ctx.choice(SCALES)
        if pooled is None:
            pooled = [ctx.int(1, min(4, h)), ctx.int(1, min(4, w))]
        rois = []
        for _ in range(n_rois):
            box = []
            for size, p in ((w, pooled[1]), (h, pooled[0])):
                lens = [L for L in range(p, size + 1) if _dyadic(L / p, 6)]
                if not lens:
                    return None
                length = ctx.choice(lens)
                start = ctx.rng.randint(0, size - length)
                box.append((start, start + length - 1))
            (x1, x2), (y1, y2) = box
            rois.append([float(ctx.rng.randrange(n))] + [v / scale for v in (x1, y1, x2, y2)])
        return {"pooled_shape": pooled, "spatial_scale": scale, "rois": rois, "dtype": x.dtype}

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0], ctx.rng.randint(1, 4)) or {"rois": None}

    def backward(self, ctx, out):
        if out.rank != 4 or out.dtype not in dt.FLOATS:
            return None
        k, c, ph, pw = out.shape
        n = ctx.int(1, 3)
        cap = max(4, ctx.limits.max_elems // max(1, n * c))
        hw = ctx.shape(2, min(cap, 256))
        x = TensorType(out.dtype, (n, c, max(ph, hw[0]), max(pw, hw[1])))
        a = self._attrs(ctx, x, k, [ph, pw])
        return None if a is None else ([x], a)

    def _regions(self, a):
        s = a["spatial_scale"]
        return [(int(r[0]),) + tuple(int(round(v * s)) for v in r[1:]) for r in a["rois"]]

    def requires(self, ins, a):
        x = ins[0]
        if a.get("rois") is None or x.rank != 4 or x.dtype != a["dtype"]:
            return [False]
        n, _, h, w = x.shape
        ph, pw = a["pooled_shape"]
        cons = []
        for (b, x1, y1, x2, y2), roi in zip(self._regions(a), a["rois"]):
            cons += [0 <= b < n, 0 <= x1 <= x2 < w, 0 <= y1 <= y2 < h,
                     all(float(v * a["spatial_scale"]).is_integer() for v in roi[1:])]
            cons += [y2 - y1 + 1 >= ph, x2 - x1 + 1 >= pw,
                     _dyadic((y2 - y1 + 1) / ph, 6), _dyadic((x2 - x1 + 1) / pw, 6)]
        return cons

    def infer(self, ins, a):
        x = ins[0]
        return [x.with_shape((len(a["rois"]), x.shape[1]) + tuple(a["pooled_shape"]))]

    def onnx(self, b, a, xs, ys):
        rois = b.const(np.asarray(a["rois"], dtype=dt.NUMPY[a["dtype"]]).reshape(-1, 5), hint="rois")
        b.node(self.onnx_op, [xs[0], rois], ys, pooled_shape=list(a["pooled_shape"]),
               spatial_scale=b.opt(a["spatial_scale"], 1.0))

    def torch(self, a, x):
        ph, pw = a["pooled_shape"]
        outs = []
        for b, x1, y1, x2, y2 in self._regions(a):
            rh, rw = Fraction(y2 - y1 + 1, ph), Fraction(x2 - x1 + 1, pw)
            y = torch.empty((x.shape[1], ph, pw), dtype=x.dtype)
            for i in range(ph):
                hs, he = y1 + math.floor(i * rh), y1 + math.ceil((i + 1) * rh)
                for j in range(pw):
                    ws, we = x1 + math.floor(j * rw), x1 + math.ceil((j + 1) * rw)
                    y[:, i, j] = x[b, :, hs:he, ws:we].amax(dim=(1, 2))
            outs.append(y)
        return torch.stack(outs)

    keeps_range = True
    gaps = (("empty bins and regions outside the image", "clipping and empty bins are conventions of Caffe's code"),)

    def reference_defect(self, a, ins, opset):
        return "onnx.reference has no MaxRoiPool"


OPS = [MaxRoiPool]
