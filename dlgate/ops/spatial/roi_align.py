from __future__ import annotations

import math

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.spatial._shared import SCALES, _dyadic, _hull0


class RoiAlign(OpSpec):
    """Regions as constants inside the image (on a quarter-pixel grid scaled by a power of
    two, so every implementation computes the same positions exactly, and the adaptive
    sample count ``ceil(roi / output)`` is never a rounding away from an integer), at least
    one pixel wide and high (onnxruntime stretches smaller ones in output_half_pixel mode).
    Both modes, both coordinate transformations, every sampling ratio including adaptive 0.

    ``max`` is as ONNX's reference and conformance data define it (and onnxruntime computes
    it): per sample the largest of the four *weighted* corner values, then the largest over
    the samples. ONNX's text ("the value of the sampled locations are computed directly
    through bilinear interpolation") reads as interpolating first (TVM, mmcv); the dispute
    is open (onnx/onnx#4764), so ``undefined`` reports max mode.
    """

    onnx_op = "RoiAlign"
    min_opset = 16
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (4,)
    symbolic_ok = False

    def _attrs(self, ctx, x: TensorType, n_rois: int) -> dict:
        n, _, h, w = x.shape
        scale = ctx.choice(SCALES)
        oh, ow = ctx.int(1, 4), ctx.int(1, 4)
        rois, bi = [], []
        for _ in range(n_rois):
            x1, x2 = _roi_span(ctx, w, 1.0, 0.25)
            y1, y2 = _roi_span(ctx, h, 1.0, 0.25)
            rois.append([x1 / scale, y1 / scale, x2 / scale, y2 / scale])
            bi.append(ctx.rng.randrange(n))
        return {"mode": ctx.choice(("avg", "avg", "max")), "output_height": oh, "output_width": ow,
                "sampling_ratio": ctx.choice((0, 0, 1, 2, 3)), "spatial_scale": scale,
                "coordinate_transformation_mode": ctx.choice(("half_pixel", "output_half_pixel")),
                "rois": rois, "batch_indices": bi, "dtype": x.dtype}

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0], ctx.rng.randint(1, 4))

    def backward(self, ctx, out):
        if out.rank != 4 or out.dtype not in dt.FLOATS:
            return None
        k, c = out.shape[:2]
        n = ctx.int(1, 3)
        cap = max(4, ctx.limits.max_elems // max(1, n * c))
        hw = ctx.shape(2, min(cap, 256))
        x = TensorType(out.dtype, (n, c) + tuple(max(2, d) for d in hw))
        a = self._attrs(ctx, x, k)
        a["output_height"], a["output_width"] = out.shape[2], out.shape[3]
        return [x], a

    def _scaled(self, a):
        return [[c * a["spatial_scale"] for c in roi] for roi in a["rois"]]

    def requires(self, ins, a):
        x = ins[0]
        if x.rank != 4 or x.dtype != a["dtype"]:
            return [False]
        n, _, h, w = x.shape
        cons = [0 <= b < n for b in a["batch_indices"]] + [len(a["rois"]) == len(a["batch_indices"])]
        for x1, y1, x2, y2 in self._scaled(a):
            cons += [0 <= x1, x1 + 1 <= x2, x2 <= w, 0 <= y1, y1 + 1 <= y2, y2 <= h]
            cons += [all(_dyadic(v) for v in (x1, y1, x2, y2))]
        return cons

    def infer(self, ins, a):
        x = ins[0]
        return [x.with_shape((len(a["rois"]), x.shape[1], a["output_height"], a["output_width"]))]

    def onnx(self, b, a, xs, ys):
        npt = dt.NUMPY[a["dtype"]]
        rois = b.const(np.asarray(a["rois"], dtype=npt).reshape(-1, 4), hint="rois")
        bi = b.const(np.asarray(a["batch_indices"], dtype=np.int64), hint="batch_indices")
        b.node(self.onnx_op, [xs[0], rois, bi], ys, mode=b.opt(a["mode"], "avg"),
               output_height=b.opt(a["output_height"], 1), output_width=b.opt(a["output_width"], 1),
               sampling_ratio=b.opt(a["sampling_ratio"], 0), spatial_scale=b.opt(a["spatial_scale"], 1.0),
               coordinate_transformation_mode=b.opt(a["coordinate_transformation_mode"], "half_pixel"))

    def _samples(self, a, roi, size_h, size_w):
        """Per axis (y then x): sample positions (out, grid) and the sample grid size."""
        half = a["coordinate_transformation_mode"] == "half_pixel"
        off = 0.5 if half else 0.0
        x1, y1, x2, y2 = [v * a["spatial_scale"] - off for v in roi]
        res = []
        for start, end, pooled in ((y1, y2, a["output_height"]), (x1, x2, a["output_width"])):
            length = end - start
            if not half:
                length = max(length, 1.0)
            bin_size = length / pooled
            grid = a["sampling_ratio"] if a["sampling_ratio"] > 0 else math.ceil(length / pooled)
            grid = max(grid, 1)
            p = torch.arange(pooled, dtype=torch.float64).unsqueeze(1)
            i = torch.arange(grid, dtype=torch.float64).unsqueeze(0)
            res.append((start + p * bin_size + (i + 0.5) * bin_size / grid, grid))
        return res

    def torch(self, a, x):
        xd = x.to(torch.float64)
        _, c, h, w = x.shape
        outs = []
        for roi, b in zip(a["rois"], a["batch_indices"]):
            (py, gh), (px, gw) = self._samples(a, roi, h, w)
            yl, yh, wyl, wyh = _bilinear_1d(py, h)  # (oh, gh)
            xl, xh, wxl, wxh = _bilinear_1d(px, w)  # (ow, gw)
            img = xd[b]  # (C, H, W)

            def corner(yi, xi, wy, wx, img=img):
                v = img[:, yi[:, :, None, None], xi[None, None, :, :]]  # (C, oh, gh, ow, gw)
                return v * (wy[:, :, None, None] * wx[None, None, :, :])

            parts = [corner(yl, xl, wyl, wxl), corner(yl, xh, wyl, wxh), corner(yh, xl, wyh, wxl),
                     corner(yh, xh, wyh, wxh)]
            if a["mode"] == "avg":
                y = sum(parts).sum(dim=(2, 4)) / max(gh * gw, 1)
            else:
                y = torch.stack(parts).amax(dim=0).amax(dim=(2, 4))
            outs.append(y)
        return torch.stack(outs).to(x.dtype)

    gaps = (("regions reaching outside the image or under one pixel",
             "implementations clamp or stretch them differently (output_half_pixel forces 1x1)"),)

    def value_range(self, a, ranges, ins):
        return [tuple(ranges[0]) if a["mode"] == "avg" else _hull0(ranges[0])]

    def undefined(self, a, ins, out_types):
        if a["mode"] == "max":
            return ("RoiAlign max mode: ONNX's reference takes the largest weighted corner value per sample, "
                    "its text reads as interpolating first (onnx/onnx#4764)")
        return None


def _roi_span(ctx, size: int, min_len: float, quantum: float) -> tuple:
    """A [start, end] segment inside [0, size] on a grid of ``quantum``, at least
    ``min_len`` long."""
    steps = int(round(size / quantum))
    need = max(1, math.ceil(min_len / quantum))
    start = ctx.rng.randint(0, max(0, steps - need))
    end = ctx.rng.randint(min(steps, start + need), steps)
    return start * quantum, end * quantum


def _bilinear_1d(pos, size: int):
    """RoiAlign's (ORT's) per-axis bilinear taps at positions ``pos`` (float64, already
    known inside [-1, size]): (low, high, weight of low, weight of high)."""
    pos = pos.clamp(min=0.0)
    low = torch.floor(pos)
    top = low >= size - 1
    low = torch.where(top, torch.full_like(low, size - 1), low)
    high = torch.where(top, low, low + 1)
    pos = torch.where(top, low, pos)
    frac = pos - low
    return low.to(torch.int64), high.to(torch.int64), 1 - frac, frac


OPS = [RoiAlign]
