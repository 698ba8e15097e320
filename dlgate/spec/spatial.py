"""Spatial operators: sampling (GridSample, AffineGrid, and the two chained as a spatial
transformer), regions of interest (RoiAlign, MaxRoiPool), deformable convolution
(DeformConv), unpooling (MaxPool -> MaxUnpool, as exporters write it), Col2Im,
CenterCropPad and NonMaxSuppression.

Every reference follows the ONNX operator specification; where the specification is silent
it follows what ONNX points to and the implementations agree on (PyTorch's grid_sample for
GridSample's cubic border padding, against onnx.reference), ONNX's own reference and
conformance data (RoiAlign's max mode), or, where ONNX has no reference, onnxruntime's
Caffe-derived code (MaxRoiPool's bins); where readings still differ the spec reports the
regime in ``undefined`` (RoiAlign's max mode, ties in MaxUnpool's and NonMaxSuppression's
selections).

Constant inputs (regions, batch indices, shapes, boxes, thresholds) are chosen in
``sample`` and written by the lowering; grids, thetas, offsets, masks and scores are graph
tensors. The NonMaxSuppression specs fix their (data-dependent) output size by
construction: either no box can suppress another (``iou_threshold`` 1), or the boxes are
constant clusters whose members overlap beyond the threshold while clusters are disjoint,
so exactly one box survives per cluster whatever the scores.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.spec import sym
from dlgate.spec.base import OpSpec, TensorType
from dlgate.spec.conv import _spatial_attrs
from dlgate.spec.linalg import plus_bounds, product_bounds, sum_bounds
from dlgate.spec.pool import MaxPoolWithIndices, _out_size

FLOAT_PAIRS = tuple((t, t) for t in dt.FLOATS)


def _hull0(r: tuple) -> tuple:
    """Bounds ``r`` widened to hold 0 (zero padding, empty bins)."""
    return (min(r[0], 0.0), max(r[1], 0.0))


def _dyadic(x: float, bits: int = 10) -> bool:
    return float(x * (1 << bits)).is_integer()


# -- GridSample ------------------------------------------------------------------------------
PADDING_MODES = ("zeros", "border", "reflection")
#: Keys' cubic convolution coefficient ONNX (and PyTorch) use, and the largest sum of the
#: absolute values of its four weights (at t = 0.5).
CUBIC_A = -0.75
CUBIC_ABS_SUM = 1.375


def _cubic_weights(t):
    """Keys' four weights for taps floor(x) - 1 .. floor(x) + 2 at fraction ``t``."""
    a = CUBIC_A
    x1, x2 = t + 1, 1 - t
    return [((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a,
            ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1,
            ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a]


def _reflect(x, lo: float, hi: float):
    """onnx.reference's ``_gs_reflect``: reflect by the near border until inside [lo, hi]."""
    span = hi - lo
    d_lo = lo - x
    n_lo = torch.floor(d_lo / span)
    r_lo = d_lo - n_lo * span
    below = torch.where(torch.remainder(n_lo, 2) == 0, lo + r_lo, hi - r_lo)
    d_hi = x - hi
    n_hi = torch.floor(d_hi / span)
    r_hi = d_hi - n_hi * span
    above = torch.where(torch.remainder(n_hi, 2) == 0, hi - r_hi, lo + r_hi)
    return torch.where(x < lo, below, torch.where(x > hi, above, x))


#: Beyond this magnitude a grid coordinate names no pixel in any precision (float32 spacing
#: there exceeds the image): results are reported undefined, and the reference holds it.
FAR = 1e6


def grid_sample(x, grid, mode: str, padding: str, align: bool):
    """ONNX GridSample on float64 tensors, any number of spatial dims: X (N, C, *S), grid
    (N, *O, r) with grid[..., 0] the position along the last spatial dim. Denormalize; for
    nearest round half to even first; outside [x_min, x_max] reflect the position
    (reflection) or, for nearest and linear, clamp it to [0, size - 1] (border); then read
    each tap, zero outside the image (zeros), clamped (border) or reflected (reflection).
    Cubic border sampling keeps the position and clamps each tap (the image padded with its
    border values: PyTorch, onnxruntime, TVM; onnx.reference clamps the position, which
    for linear and nearest comes to the same)."""
    n, c = x.shape[:2]
    sizes = list(x.shape[2:])
    r = len(sizes)
    out = tuple(grid.shape[1:-1])
    g = grid.reshape(n, -1, r)
    taps_per_dim = []
    for i, size in enumerate(sizes):
        v = g[..., r - 1 - i]
        # coordinates far outside the image (|grid| > FAR, see GridSample.undefined) are
        # held at FAR: past it, float spacing exceeds a pixel and no index is meaningful
        v = v.clamp(-FAR, FAR)
        pos = (v + 1) / 2 * (size - 1) if align else ((v + 1) * size - 1) / 2
        lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
        if mode == "nearest":
            pos = torch.round(pos)  # half to even
        outside = (pos < lo) | (pos > hi)
        if padding == "border" and mode != "cubic":
            pos = torch.where(outside, pos.clamp(0, size - 1), pos)
        elif padding == "reflection":
            pos = torch.where(outside, _reflect(pos, lo, hi), pos)
        if mode == "nearest":
            base, weights = torch.trunc(pos), [torch.ones_like(pos)]
            offsets = [0]
        else:
            base = torch.floor(pos)
            t = pos - base
            if mode == "linear":
                weights, offsets = [1 - t, t], [0, 1]
            else:
                weights, offsets = _cubic_weights(t), [-1, 0, 1, 2]
        taps = []
        for off, w in zip(offsets, weights):
            idx = base + off
            if padding == "zeros":
                ok = (idx >= 0) & (idx <= size - 1)
                w = torch.where(ok, w, torch.zeros_like(w))
                idx = idx.clamp(0, size - 1)
            elif padding == "border":
                idx = idx.clamp(0, size - 1)
            else:
                idx = torch.trunc(_reflect(idx, lo, hi)) if size > 1 else torch.zeros_like(idx)
            taps.append((idx.to(torch.int64), w))
        taps_per_dim.append(taps)
    flat = x.reshape(n, c, -1)
    strides = [math.prod(sizes[i + 1:]) for i in range(r)]
    y = torch.zeros((n, c, g.shape[1]), dtype=x.dtype)
    combos = [[]]
    for taps in taps_per_dim:
        combos = [cmb + [t] for cmb in combos for t in taps]
    for cmb in combos:
        idx = sum(t[0] * s for t, s in zip(cmb, strides))
        w = math.prod(t[1] for t in cmb) if len(cmb) > 1 else cmb[0][1]
        vals = flat.gather(2, idx.clamp(0, flat.shape[2] - 1).unsqueeze(1).expand(n, c, idx.shape[1]))
        y = y + vals * w.unsqueeze(1)
    # a NaN coordinate samples nothing: its outputs are NaN (its index above is arbitrary)
    y = torch.where(torch.isnan(g).any(-1).unsqueeze(1), torch.full_like(y, float("nan")), y)
    return y.reshape((n, c) + out)


class GridSample(OpSpec):
    """Every interpolation mode (named bilinear / bicubic before opset 20, linear / cubic
    after), padding mode and ``align_corners``, 4-D, and 5-D from opset 20 (where ONNX
    defines it; linear and nearest only, see ``gaps``). The grid is a graph tensor, drawn
    within [-1.2, 1.2]: positions inside the image and a little beyond, where each padding
    mode acts. Nearest is discontinuous at half-way positions (ONNX rounds half to even
    from opset 20).

    ONNX says only "use border values for out-of-bound grid locations" (and points to
    PyTorch's grid_sample): for cubic beyond the image PyTorch, onnxruntime and TVM pad the
    image with its border values (cubic mixes border and inner pixels), onnx.reference
    clamps the *location* (one border pixel); the reference follows the former, and
    ``reference_defect`` names the latter.
    """

    onnx_op = "GridSample"
    interpolates = True
    arity = 2
    dtypes = FLOAT_PAIRS
    ranks = (4, 5)
    min_opset = 16
    symbolic_ok = False
    gaps = (("integer, bool and string X", "interpolating them is not meaningful and onnxruntime has no kernel"),
            ("X and grid of different float types", "no exporter writes it"),
            ("reflection padding with align_corners=1 over a size-1 dim",
             "the reflection range is empty: onnxruntime and onnx.reference divide by zero"),
            ("5-D cubic", "onnxruntime fails at run time (only 4-D cubic) and TVM's importer raises "
                          "NotImplementedError; the reference implements it (tested against onnx.reference)"))

    def sample(self, ctx, ins):
        x = ins[0]
        r = x.rank - 2
        a = {"mode": ctx.choice(("linear", "linear", "nearest", "cubic")), "padding_mode": ctx.choice(PADDING_MODES),
             "align_corners": int(ctx.coin(0.5)), "out": [ctx.dim(8) for _ in range(r)],
             "volumetric_ok": ctx.opset >= 20}
        if a["padding_mode"] == "reflection" and any(d == 1 for d in x.shape[2:]):
            a["align_corners"] = 0
        if r == 3 and a["mode"] == "cubic":
            a["mode"] = "linear"
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, (ins[0].shape[0],) + tuple(a["out"]) + (ins[0].rank - 2,))

    def requires(self, ins, a):
        x, g = ins
        r = x.rank - 2
        if g.rank != r + 2 or r not in (2, 3):
            return [False]
        cons = [g.shape[0] == x.shape[0], g.shape[-1] == r, r == 2 or (a["volumetric_ok"] and a["mode"] != "cubic")]
        if a["padding_mode"] == "reflection" and a["align_corners"]:
            cons += [d > 1 for d in x.shape[2:]]
        return cons

    def infer(self, ins, a):
        x, g = ins
        return [x.with_shape(tuple(x.shape[:2]) + tuple(g.shape[1:-1]))]

    def backward(self, ctx, out):
        if out.rank not in (4, 5) or (out.rank == 5 and ctx.opset < 20) or out.dtype not in dt.FLOATS:
            return None
        r = out.rank - 2
        n, c = out.shape[:2]
        cap = max(1, ctx.limits.max_elems // max(1, n * c))
        x = TensorType(out.dtype, (n, c) + ctx.shape(r, min(cap, 512)))
        grid = TensorType(out.dtype, (n,) + tuple(out.shape[2:]) + (r,))
        a = self.sample(ctx, [x])
        a["out"] = list(out.shape[2:])
        return [x, grid], a

    def discontinuous(self, a):
        return a["mode"] == "nearest"

    def input_range(self, a, i):
        return (-1.2, 1.2) if i == 1 else None

    def value_range(self, a, ranges, ins):
        r = ranges[0]
        if a["mode"] == "cubic":
            m = max(abs(r[0]), abs(r[1])) * CUBIC_ABS_SUM ** (ins[0].rank - 2)
            return [(-m, m)]
        return [_hull0(r) if a["padding_mode"] == "zeros" else tuple(r)]

    def reference_defect(self, a, ins, opset):
        if opset < 20 and a["mode"] != "nearest":
            return "onnx.reference's GridSample knows only the opset-20 mode names (linear, cubic)"
        if a["mode"] == "cubic" and a["padding_mode"] == "border":
            return ("onnx.reference's cubic GridSample clamps out-of-image positions to the border before "
                    "interpolating, where PyTorch, onnxruntime and TVM pad the image")
        if ins[0].dtype == dt.FLOAT64:
            return "onnx.reference's GridSample denormalizes the grid in float32"
        if ins[0].dtype == dt.FLOAT16:
            return ("onnx.reference's GridSample computes float16 positions and weights in float16 arithmetic "
                    "(nearest then rounds positions near a half-way point to the other pixel)")
        return None

    def onnx_attrs(self, a, b):
        mode = a["mode"]
        if b.opset < 20:
            mode = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
        return {"mode": b.opt(mode, "bilinear" if b.opset < 20 else "linear"),
                "padding_mode": b.opt(a["padding_mode"], "zeros"),
                "align_corners": b.opt(a["align_corners"], 0)}

    def undefined(self, a, ins, out_types):
        if ins[1].numel() and float(torch.nan_to_num(ins[1].detach().double().abs(), nan=0.0).max()) > FAR:
            return f"grid coordinates beyond {FAR:g} name no pixel: past it, float spacing exceeds the image"
        return None

    def torch(self, a, x, grid):
        y = grid_sample(x.to(torch.float64), grid.to(torch.float64), a["mode"], a["padding_mode"],
                        bool(a["align_corners"]))
        return y.to(x.dtype)


# -- AffineGrid ------------------------------------------------------------------------------
def _base_coords(size: int, align: bool):
    """AffineGrid's evenly spaced positions along one dim, as ONNX's function body builds
    them (start + i * step)."""
    i = torch.arange(size, dtype=torch.float64)
    if align:
        return -1.0 + i * (2.0 / (size - 1))
    step = 2.0 / size
    return (-1.0 + step / 2) + i * step


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
    gaps = (("spatial size 1 with align_corners=1", "ONNX's function body gives NaN (H, W) or -1 (D), PyTorch 0"),
            ("float16 2-D with a batch of 1",
             "ONNX's function body squeezes theta's rows without axes, dropping N = 1 too: onnxruntime (which "
             "runs the body for float16) fails in its Split"))

    def _attrs(self, ctx, n: int, spatial: tuple) -> dict:
        align = int(ctx.coin(0.5)) if all(s > 1 for s in spatial) else 0
        return {"size": [n, ctx.int(1, 8)] + list(spatial), "align_corners": align}

    def sample(self, ctx, ins):
        t = ins[0]
        r = 2 if tuple(t.shape[1:]) == (2, 3) else 3
        return self._attrs(ctx, t.shape[0], tuple(ctx.dim(8) for _ in range(r)))

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

    def backward(self, ctx, out):
        if out.rank not in (4, 5) or out.shape[-1] != out.rank - 2 or out.dtype not in dt.FLOATS:
            return None
        r = out.rank - 2
        theta = TensorType(out.dtype, (out.shape[0], r, r + 1))
        return [theta], self._attrs(ctx, out.shape[0], tuple(out.shape[1:-1]))

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


class AffineGridSample(GridSample):
    """The spatial-transformer idiom exporters write for ``F.grid_sample(x,
    F.affine_grid(theta, size))``: AffineGrid (``size`` = (N, C, *out), a constant) feeding
    GridSample. X (N, C, *S) comes first (so any 4-D tensor can start an instance), theta
    (N, r, r + 1) second, drawn within [-0.4, 0.4] so the positions stay within [-1.2, 1.2].
    Both operators take the same ``align_corners`` (PyTorch's STN code passes one), except
    that AffineGrid's is 0 where an output dim is 1 (see AffineGrid). The grid is rounded to
    theta's type between the two, as the model computes it. No float16 (see ``gaps``)."""

    name = "AffineGridSample"
    onnx_op = "GridSample"
    onnx_ops = ("AffineGrid",)
    min_opset = 20
    dtypes = tuple((t, t) for t in (dt.FLOAT32, dt.FLOAT64))
    gaps = GridSample.gaps + (
        ("float16", "AffineGrid's positions computed in float16 (ONNX's function body) move the samples by "
                    "rounding amounts the interpolation amplifies beyond the float16 tolerance"),)

    def sample(self, ctx, ins):
        a = super().sample(ctx, ins)
        x = ins[0]
        a["size"] = [x.shape[0], x.shape[1]] + list(a["out"])
        a["grid_align"] = a["align_corners"] if all(d > 1 for d in a["out"]) else 0
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        r = ins[0].rank - 2
        return TensorType(dtype, (ins[0].shape[0], r, r + 1))

    def requires(self, ins, a):
        x, theta = ins
        r = x.rank - 2
        if theta.rank != 3 or r not in (2, 3) or len(a["size"]) != r + 2:
            return [False]
        cons = [theta.shape[0] == x.shape[0], theta.shape[1] == r, theta.shape[2] == r + 1,
                a["size"][:2] == list(x.shape[:2]), r == 2 or a["mode"] != "cubic"]
        if a["padding_mode"] == "reflection" and a["align_corners"]:
            cons += [d > 1 for d in x.shape[2:]]
        if a["grid_align"]:
            cons += [d > 1 for d in a["size"][2:]]
        return cons

    def infer(self, ins, a):
        return [ins[0].with_shape(tuple(ins[0].shape[:2]) + tuple(a["size"][2:]))]

    def backward(self, ctx, out):
        res = super().backward(ctx, out)
        if res is None:
            return None
        (x, _), a = res
        r = x.rank - 2
        a["size"] = [x.shape[0], x.shape[1]] + list(out.shape[2:])
        a["grid_align"] = a["align_corners"] if all(d > 1 for d in out.shape[2:]) else 0
        return [x, TensorType(x.dtype, (x.shape[0], r, r + 1))], a

    def input_range(self, a, i):
        return (-0.4, 0.4) if i == 1 else None

    def reference_defect(self, a, ins, opset):
        if ins[0].dtype != dt.FLOAT32:
            return "onnx.reference's AffineGrid always returns float32"
        return super().reference_defect(a, ins, opset)

    def onnx(self, b, a, xs, ys):
        grid = b.node("AffineGrid", [xs[1], b.ints(a["size"], hint="size")], 1,
                      align_corners=b.opt(a["grid_align"], 0))[0]
        b.node("GridSample", [xs[0], grid], ys, **self.onnx_attrs(a, b))

    def torch(self, a, x, theta):
        grid = AffineGrid().torch({"size": a["size"], "align_corners": a["grid_align"]}, theta)
        return super().torch(a, x, grid)


# -- RoiAlign / MaxRoiPool ---------------------------------------------------------------------
SCALES = (0.25, 0.5, 1.0, 2.0)


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
    gaps = (("regions reaching outside the image or under one pixel",
             "implementations clamp or stretch them differently (output_half_pixel forces 1x1)"),)

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

    def value_range(self, a, ranges, ins):
        return [tuple(ranges[0]) if a["mode"] == "avg" else _hull0(ranges[0])]

    def undefined(self, a, ins, out_types):
        if a["mode"] == "max":
            return ("RoiAlign max mode: ONNX's reference takes the largest weighted corner value per sample, "
                    "its text reads as interpolating first (onnx/onnx#4764)")
        return None

    def onnx(self, b, a, xs, ys):
        npt = dt.NUMPY[a["dtype"]]
        rois = b.const(np.asarray(a["rois"], dtype=npt).reshape(-1, 4), hint="rois")
        bi = b.const(np.asarray(a["batch_indices"], dtype=np.int64), hint="batch_indices")
        b.node(self.onnx_op, [xs[0], rois, bi], ys, mode=b.opt(a["mode"], "avg"),
               output_height=b.opt(a["output_height"], 1), output_width=b.opt(a["output_width"], 1),
               sampling_ratio=b.opt(a["sampling_ratio"], 0), spatial_scale=b.opt(a["spatial_scale"], 1.0),
               coordinate_transformation_mode=b.opt(a["coordinate_transformation_mode"], "half_pixel"))


class MaxRoiPool(OpSpec):
    """Caffe's ROI pooling, as onnxruntime implements it (ONNX says only "max pooling across
    each RoI"): region corners rounded to pixels (here already whole pixels after
    ``spatial_scale``), bins ``floor(i * size / pooled)`` to ``ceil((i + 1) * size / pooled)``
    with ``size = end - start + 1``. Regions lie inside the image, every bin holds a
    pixel (an empty bin gives 0 by convention) and ``size / pooled`` is a short binary
    fraction, so the bin edges are exact in every implementation. onnx.reference has no
    MaxRoiPool."""

    onnx_op = "MaxRoiPool"
    keeps_range = True
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (4,)
    symbolic_ok = False
    gaps = (("empty bins and regions outside the image", "clipping and empty bins are conventions of Caffe's code"),)

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

    def reference_defect(self, a, ins, opset):
        return "onnx.reference has no MaxRoiPool"

    def onnx(self, b, a, xs, ys):
        rois = b.const(np.asarray(a["rois"], dtype=dt.NUMPY[a["dtype"]]).reshape(-1, 5), hint="rois")
        b.node(self.onnx_op, [xs[0], rois], ys, pooled_shape=list(a["pooled_shape"]),
               spatial_scale=b.opt(a["spatial_scale"], 1.0))


# -- DeformConv ----------------------------------------------------------------------------------
def _bilinear_zero(img, py, px):
    """Bilinear samples of ``img`` (B, K, H, W) at positions py, px (B, *P) with zeros
    outside the image (every corner outside reads 0): (B, K, *P)."""
    bsz, k, h, w = img.shape
    y0, x0 = torch.floor(py), torch.floor(px)
    flat = img.reshape(bsz, k, -1)
    res = torch.zeros((bsz, k) + tuple(py.shape[1:]), dtype=img.dtype)
    for dy, wy in ((0, 1 - (py - y0)), (1, py - y0)):
        for dx, wx in ((0, 1 - (px - x0)), (1, px - x0)):
            yi, xi = y0 + dy, x0 + dx
            ok = (yi >= 0) & (yi <= h - 1) & (xi >= 0) & (xi <= w - 1)
            idx = (yi.clamp(0, h - 1) * w + xi.clamp(0, w - 1)).to(torch.int64).clamp(0, h * w - 1)
            idx = idx.reshape(bsz, 1, -1)
            v = flat.gather(2, idx.expand(bsz, k, idx.shape[2])).reshape(res.shape)
            res = res + v * torch.where(ok, wy * wx, torch.zeros_like(wy)).unsqueeze(1)
    # a NaN position samples nothing: NaN (its index above is arbitrary)
    nan = (torch.isnan(py) | torch.isnan(px)).unsqueeze(1)
    return torch.where(nan, torch.full_like(res, float("nan")), res)


class DeformConv(OpSpec):
    """2-D deformable convolution (v2 with ``mask``): each kernel tap reads X at its regular
    position plus a learnt offset (offset[:, 2 * tap] along H, [2 * tap + 1] along W, per
    offset group), by bilinear interpolation with zeros outside the image, times the mask,
    then an ordinary grouped convolution. Offsets, mask, weights and bias are graph tensors.
    Twins without bias (``DeformConvNoBias``, B spelled as an empty input) and without mask
    (``DeformConvNoMask``)."""

    onnx_op = "DeformConv"
    min_opset = 19
    ranks = (4,)
    has_bias = True
    has_mask = True
    gaps = (("1-D and 3-D DeformConv", "onnx.reference implements 2-D only and onnxruntime 2-D only"),)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls._setup()

    @classmethod
    def _setup(cls):
        cls.arity = 3 + int(cls.has_bias) + int(cls.has_mask)
        cls.dtypes = tuple((t,) * cls.arity for t in dt.FLOATS)

    def sample(self, ctx, ins):
        c = ins[0].shape[1]
        a = _spatial_attrs(ctx, 2, kmax=3)
        if ctx.symbolic:
            a["group"], a["offset_group"] = ctx.divisor(c), ctx.divisor(c)
        else:
            a["group"] = 1 if ctx.coin(0.5) else ctx.divisor(c)
            a["offset_group"] = 1 if ctx.coin(0.5) else ctx.divisor(c)
        a["m_per_group"] = ctx.int(1, ctx.limits.max_dim if ctx.symbolic else 8)
        a["spell_kernel"] = ctx.coin(0.5)
        return a

    def _out(self, x, a):
        r = 2
        return [sym.div(x.shape[2 + i] + a["pads"][i] + a["pads"][i + r] - a["dilations"][i] * (a["kernel"][i] - 1) - 1,
                        a["strides"][i]) + 1 for i in range(r)]

    def _expected(self, ins, a) -> list:
        x = ins[0]
        n, c = x.shape[:2]
        kk = a["kernel"][0] * a["kernel"][1]
        oh, ow = self._out(x, a)
        shapes = [(a["group"] * a["m_per_group"], sym.div(c, a["group"])) + tuple(a["kernel"]),
                  (n, a["offset_group"] * kk * 2, oh, ow)]
        if self.has_bias:
            shapes.append((a["group"] * a["m_per_group"],))
        if self.has_mask:
            shapes.append((n, a["offset_group"] * kk, oh, ow))
        return shapes

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self._expected(ins, a)[i - 1])

    def requires(self, ins, a):
        x = ins[0]
        cons = [a["group"] >= 1, a["offset_group"] >= 1, a["m_per_group"] >= 1,
                sym.mod(x.shape[1], a["group"]) == 0, sym.mod(x.shape[1], a["offset_group"]) == 0]
        for t, want in zip(ins[1:], self._expected(ins, a)):
            if t.rank != len(want):
                return [False]
            cons += [p == q for p, q in zip(t.shape, want)]
        for i in range(2):
            k, s, d = a["kernel"][i], a["strides"][i], a["dilations"][i]
            cons += [k >= 1, s >= 1, d >= 1, a["pads"][i] >= 0, a["pads"][i + 2] >= 0]
            cons.append(x.shape[2 + i] + a["pads"][i] + a["pads"][i + 2] - d * (k - 1) - 1 >= 0)
        return cons

    def infer(self, ins, a):
        x = ins[0]
        return [x.with_shape((x.shape[0], a["group"] * a["m_per_group"]) + tuple(self._out(x, a)))]

    def value_range(self, a, ranges, ins):
        # each output sums C/group * kH * kW products (sample * weight [* mask]), a sample
        # lying between the input's values and 0 (zero padding)
        x = ins[0]
        terms = (x.shape[1] // a["group"]) * a["kernel"][0] * a["kernel"][1]
        factors = [_hull0(ranges[0]), ranges[1]] + ([ranges[-1]] if self.has_mask else [])
        y = sum_bounds(product_bounds(*factors), 0, terms)
        return [plus_bounds(y, ranges[3]) if self.has_bias else y]

    def reference_defect(self, a, ins, opset):
        x = ins[0]
        if x.shape[2] == 1 or x.shape[3] == 1:
            return "onnx.reference's DeformConv normalizes positions by (size - 1): a size-1 dim divides by 0"
        if x.dtype == dt.FLOAT64:
            return "onnx.reference's DeformConv samples through its GridSample, which denormalizes in float32"
        if x.dtype == dt.FLOAT16:
            return ("onnx.reference's DeformConv interpolates with float16 weights and accumulates the "
                    "products in float16 (errors of several 1e-2)")
        return None

    def onnx(self, b, a, xs, ys):
        ins = list(xs[:3])
        k = 3
        if self.has_bias:
            ins.append(xs[k])
            k += 1
        if self.has_mask:
            if not self.has_bias:
                ins.append("")
            ins.append(xs[k])
        b.node(self.onnx_op, ins, ys, group=b.opt(a["group"], 1), offset_group=b.opt(a["offset_group"], 1),
               strides=b.opt(a["strides"], [1, 1]), dilations=b.opt(a["dilations"], [1, 1]),
               pads=b.opt(a["pads"], [0, 0, 0, 0]), kernel_shape=a["kernel"] if a["spell_kernel"] else None)

    def torch(self, a, x, w, offset, *rest):
        rest = list(rest)
        bias = rest.pop(0) if self.has_bias else None
        mask = rest.pop(0) if self.has_mask else None
        dtype = x.dtype
        x, w, offset = x.to(torch.float64), w.to(torch.float64), offset.to(torch.float64)
        n, c, _, _ = x.shape
        kh, kw = a["kernel"]
        og, g = a["offset_group"], a["group"]
        oh, ow = offset.shape[2:]
        off = offset.reshape(n, og, kh, kw, 2, oh, ow)
        sh, sw = a["strides"]
        dh, dw = a["dilations"]
        base_h = (torch.arange(kh, dtype=torch.float64) * dh)[:, None, None, None] + \
            (torch.arange(oh, dtype=torch.float64) * sh - a["pads"][0])[None, None, :, None]
        base_w = (torch.arange(kw, dtype=torch.float64) * dw)[None, :, None, None] + \
            (torch.arange(ow, dtype=torch.float64) * sw - a["pads"][1])[None, None, None, :]
        py = (base_h + off[:, :, :, :, 0]).reshape(n * og, kh, kw, oh, ow)
        px = (base_w + off[:, :, :, :, 1]).reshape(n * og, kh, kw, oh, ow)
        img = x.reshape(n * og, c // og, x.shape[2], x.shape[3])
        cols = _bilinear_zero(img, py, px).reshape(n, og, c // og, kh, kw, oh, ow)
        if mask is not None:
            cols = cols * mask.to(torch.float64).reshape(n, og, 1, kh, kw, oh, ow)
        cols = cols.reshape(n, g, c // g, kh, kw, oh, ow)
        y = torch.einsum("ngcijhw,gmcij->ngmhw", cols, w.reshape(g, -1, c // g, kh, kw))
        y = y.reshape(n, -1, oh, ow)
        if bias is not None:
            y = y + bias.to(torch.float64).reshape(1, -1, 1, 1)
        return y.to(dtype)


DeformConv._setup()


class DeformConvNoBias(DeformConv):
    name = "DeformConvNoBias"
    has_bias = False


class DeformConvNoMask(DeformConv):
    name = "DeformConvNoMask"
    has_mask = False


# -- MaxPool -> MaxUnpool ---------------------------------------------------------------------
class MaxUnpool(OpSpec):
    """MaxUnpool as exporters write it (``F.max_unpool`` after ``F.max_pool(...,
    return_indices=True)``): MaxPool with its indices output, then MaxUnpool of its values
    at those indices, with ``output_shape`` the pooled input's shape (or without it where
    the default size, ``(out - 1) * stride - pads + kernel``, is that shape already). The
    result is the input at each window's maximum and 0 elsewhere. A window whose (nonzero)
    maximum occurs twice leaves the position unspecified: ``undefined``. Unit dilations and
    no ceil_mode (MaxUnpool has neither)."""

    gaps = (("pads that make the default unpooled size below 1 (with output_shape given)",
             "onnxruntime computes and refuses that size even though output_shape replaces it"),
            ("storage_order 1", "MaxUnpool reads the indices row-major"))

    onnx_op = "MaxUnpool"
    onnx_ops = ("MaxPool",)
    keeps_integers = True
    jumps = True
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (3, 4, 5)
    symbolic_ok = False
    _pool = MaxPoolWithIndices()

    def _pool_attrs(self, a) -> dict:
        r = len(a["kernel"])
        return {"kernel": a["kernel"], "strides": a["strides"], "dilations": [1] * r, "pads": a["pads"],
                "ceil_mode": 0, "auto_pad": "NOTSET", "storage_order": 0}

    def _default_size(self, x, a) -> list:
        r = x.rank - 2
        out = [_out_size(x.shape[2 + i], a["kernel"][i], a["strides"][i], 1, a["pads"][i], a["pads"][i + r], 0)
               for i in range(r)]
        return [(o - 1) * a["strides"][i] - a["pads"][i] - a["pads"][i + r] + a["kernel"][i] for i, o in enumerate(out)]

    def sample(self, ctx, ins):
        r = ins[0].rank - 2
        k = [ctx.int(1, 4) for _ in range(r)]
        s = [ctx.int(1, 3) if ctx.coin(0.7) else k[i] for i in range(r)]
        pads = [0] * (2 * r) if ctx.coin(0.5) else [ctx.int(0, k[i % r] - 1) for i in range(2 * r)]
        a = {"kernel": k, "strides": s, "pads": pads}
        explicit = ctx.coin(0.6) or self._default_size(ins[0], a) != list(ins[0].shape[2:])
        a["output_shape"] = list(ins[0].shape) if explicit else None
        return a

    def requires(self, ins, a):
        x = ins[0]
        if x.rank - 2 != len(a["kernel"]):
            return [False]
        cons = list(self._pool.requires(ins, self._pool_attrs(a)))
        # onnxruntime computes the default size even when output_shape is given, and
        # refuses one below 1
        cons += [d >= 1 for d in self._default_size(x, a)]
        if a["output_shape"] is None:
            cons.append(self._default_size(x, a) == list(x.shape[2:]))
        else:
            cons.append(list(a["output_shape"]) == list(x.shape))
        return cons

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.rank not in self.ranks or out.dtype not in dt.FLOATS:
            return None
        a = self.sample(ctx, [out])
        return [out], a

    def value_range(self, a, ranges, ins):
        return [_hull0(ranges[0])]

    def _pooled(self, a, x):
        return self._pool.torch(self._pool_attrs(a), x)

    def torch(self, a, x):
        vals, idx = self._pooled(a, x)
        y = torch.zeros(x.numel(), dtype=x.dtype)
        y[idx.reshape(-1)] = vals.reshape(-1)
        return y.reshape(x.shape)

    def undefined(self, a, ins, out_types):
        vals, _ = self._pool._windows_and_indices(self._pool_attrs(a), ins[0])
        top = vals.amax(dim=2, keepdim=True)
        ties = ((vals == top).sum(dim=2) > 1) & (top.squeeze(2) != 0)
        if bool(ties.any()):
            return "a MaxPool window holds its (nonzero) maximum more than once: ONNX leaves the index unspecified"
        return None

    def reference_defect(self, a, ins, opset):
        why = self._pool.reference_defect(self._pool_attrs(a), ins, opset)
        if why:
            return why
        if a["output_shape"] is not None and self._default_size(ins[0], a) != list(ins[0].shape[2:]):
            return ("onnx.reference's MaxUnpool scatters into the default-size output and pads that to "
                    "output_shape, instead of indexing output_shape's tensor")
        return None

    def onnx(self, b, a, xs, ys):
        r = len(a["kernel"])
        common = {"kernel_shape": a["kernel"], "strides": b.opt(a["strides"], [1] * r),
                  "pads": b.opt(a["pads"], [0] * (2 * r))}
        y, idx = b.node("MaxPool", [xs[0]], 2, **common)
        ins = [y, idx]
        if a["output_shape"] is not None:
            ins.append(b.ints(a["output_shape"], hint="output_shape"))
        b.node(self.onnx_op, ins, ys, **common)


# -- Col2Im ---------------------------------------------------------------------------------------
def _factorizations(n: int, parts: int) -> list:
    """Every ordered way to write n as a product of ``parts`` positive factors."""
    if parts == 1:
        return [[n]]
    return [[d] + rest for d in range(1, n + 1) if n % d == 0 for rest in _factorizations(n // d, parts - 1)]


class Col2Im(OpSpec):
    """Col2Im (N, C * prod(block), L) -> (N, C, *image_shape): every column's block added
    back at its sliding position (PyTorch's fold, N-D), with strides, dilations and pads;
    ``image_shape`` and ``block_shape`` are constants. 1-D to 3-D images (dilated: 2-D only,
    see ``gaps``)."""

    onnx_op = "Col2Im"
    keeps_integers = True
    min_opset = 18
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (3,)
    symbolic_ok = False
    gaps = (("integer, bool and string inputs", "onnxruntime implements float only (TVM lacks Col2Im)"),
            ("dilations > 1 on 1-D and 3-D images",
             "onnxruntime 1.32 computes them wrong (its N-D path; 2-D is right): every such case would report it"))

    @staticmethod
    def _blocks(image, k, s, d, pads) -> list:
        r = len(image)
        return [(image[i] + pads[i] + pads[i + r] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(r)]

    def _dim_attrs(self, ctx, k: int, dilate: bool = True):
        s = ctx.int(1, 3) if ctx.coin(0.5) else 1
        d = ctx.int(1, 2) if dilate and ctx.coin(0.3) else 1
        return s, d, [ctx.int(0, 2) if ctx.coin(0.4) else 0 for _ in range(2)]

    def sample(self, ctx, ins):
        _, kk, length = ins[0].shape
        r = ctx.choice((1, 2, 2, 3))
        block, rest = [], kk
        for _ in range(r):
            block.append(ctx.divisor(rest, 4))
            rest //= block[-1]
        nb = ctx.choice(_factorizations(length, r))
        image, strides, dils, pb, pe = [], [], [], [], []
        dilate = r == 2
        for i in range(r):
            s, d, (p0, p1) = self._dim_attrs(ctx, block[i], dilate)
            size = (nb[i] - 1) * s + d * (block[i] - 1) + 1 - p0 - p1 + ctx.int(0, s - 1)
            if size < 1:
                p0 = p1 = 0
                size = (nb[i] - 1) * s + d * (block[i] - 1) + 1
            image.append(size)
            strides.append(s)
            dils.append(d)
            pb.append(p0)
            pe.append(p1)
        return {"image_shape": image, "block_shape": block, "strides": strides, "dilations": dils, "pads": pb + pe}

    def requires(self, ins, a):
        x = ins[0]
        k, img = a["block_shape"], a["image_shape"]
        if x.rank != 3 or not 1 <= len(k) <= 3 or len(img) != len(k):
            return [False]
        nb = self._blocks(img, k, a["strides"], a["dilations"], a["pads"])
        dilated_nd = len(k) != 2 and max(a["dilations"]) > 1
        return ([x.shape[1] % math.prod(k) == 0, x.shape[2] == math.prod(nb), not dilated_nd] + [n >= 1 for n in nb]
                + [v >= 1 for v in img + k + a["strides"] + a["dilations"]] + [p >= 0 for p in a["pads"]])

    def infer(self, ins, a):
        x = ins[0]
        return [x.with_shape((x.shape[0], x.shape[1] // math.prod(a["block_shape"])) + tuple(a["image_shape"]))]

    def backward(self, ctx, out):
        if out.rank not in (3, 4, 5) or out.dtype not in dt.FLOATS:
            return None
        r = out.rank - 2
        img = list(out.shape[2:])
        k, strides, dils, pb, pe = [], [], [], [], []
        for i in range(r):
            ki = ctx.int(1, min(4, img[i] + 2))
            s, d, (p0, p1) = self._dim_attrs(ctx, ki, r == 2)
            if img[i] + p0 + p1 - d * (ki - 1) - 1 < 0:
                ki, d = 1, 1
            k.append(ki)
            strides.append(s)
            dils.append(d)
            pb.append(p0)
            pe.append(p1)
        a = {"image_shape": img, "block_shape": k, "strides": strides, "dilations": dils, "pads": pb + pe}
        nb = self._blocks(img, k, strides, dils, pb + pe)
        x = TensorType(out.dtype, (out.shape[0], out.shape[1] * math.prod(k), math.prod(nb)))
        return [x], a

    def value_range(self, a, ranges, ins):
        return [sum_bounds(tuple(ranges[0]), 0, math.prod(a["block_shape"]))]

    def onnx(self, b, a, xs, ys):
        r = len(a["image_shape"])
        b.node(self.onnx_op, [xs[0], b.ints(a["image_shape"], hint="image_shape"),
                              b.ints(a["block_shape"], hint="block_shape")], ys,
               strides=b.opt(a["strides"], [1] * r), dilations=b.opt(a["dilations"], [1] * r),
               pads=b.opt(a["pads"], [0] * (2 * r)))

    def torch(self, a, x):
        k, img, s, d, pads = a["block_shape"], a["image_shape"], a["strides"], a["dilations"], a["pads"]
        r = len(k)
        nb = self._blocks(img, k, s, d, pads)
        n, c = x.shape[0], x.shape[1] // math.prod(k)
        cols = x.to(torch.float64).reshape((n, c) + tuple(k) + tuple(nb))
        full = [img[i] + pads[i] + pads[i + r] for i in range(r)]
        y = torch.zeros((n, c) + tuple(full), dtype=torch.float64)
        for tap in np.ndindex(*k):
            idx = (slice(None), slice(None)) + tuple(
                slice(tap[i] * d[i], tap[i] * d[i] + (nb[i] - 1) * s[i] + 1, s[i]) for i in range(r))
            y[idx] += cols[(slice(None), slice(None)) + tuple(tap)]
        crop = (slice(None), slice(None)) + tuple(slice(pads[i], pads[i] + img[i]) for i in range(r))
        return y[crop].to(x.dtype)


# -- CenterCropPad ----------------------------------------------------------------------------
class CenterCropPad(OpSpec):
    """Crop (the window starting at floor((in - out) / 2)) or zero-pad (floor((out - in) / 2)
    before, the rest after) each axis of ``axes`` (all when absent; possibly negative) to
    the constant ``shape`` (int64).

    No int32 ``shape``: ONNX's function body for CenterCropPad (which onnxruntime expands)
    takes ``Max(Shape(input), shape)``, int64 against int32, and fails type checking."""

    onnx_op = "CenterCropPad"
    keeps_integers = True
    min_opset = 18
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)
    symbolic_ok = False
    gaps = (("an int32 shape input", "ONNX's function body mixes it with int64 in Max: onnxruntime refuses the model"),)

    def _attrs(self, ctx, x: TensorType, targets=None) -> dict:
        """Attributes for input ``x``: random targets, or the given output shape (the
        axes then cover every dim that changes)."""
        r = x.rank
        must = [] if targets is None else [ax for ax in range(r) if targets[ax] != x.shape[ax]]
        axes = list(range(r)) if ctx.coin(0.3) else sorted(set(must) | set(ctx.axes(r, 1)))
        if targets is None:
            shape = []
            for ax in axes:
                n = x.shape[ax]
                shape.append(ctx.choice((n, max(1, n - ctx.int(1, 4)), n + ctx.int(1, 4))))
        else:
            shape = [targets[ax] for ax in axes]
        spelled = None if axes == list(range(r)) and ctx.coin(0.5) else [
            ax - r if ctx.coin(0.3) else ax for ax in axes]
        return {"shape": shape, "axes": spelled}

    def _axes(self, a, r: int) -> list:
        return list(range(r)) if a["axes"] is None else [ax % r for ax in a["axes"]]

    def sample(self, ctx, ins):
        return self._attrs(ctx, ins[0])

    def requires(self, ins, a):
        r = ins[0].rank
        axes = self._axes(a, r)
        if a["axes"] is not None and not all(-r <= ax < r for ax in a["axes"]):
            return [False]
        return [len(set(axes)) == len(axes), len(axes) == len(a["shape"])] + [s >= 1 for s in a["shape"]]

    def infer(self, ins, a):
        x = ins[0]
        shape = list(x.shape)
        for ax, s in zip(self._axes(a, x.rank), a["shape"]):
            shape[ax] = s
        return [x.with_shape(shape)]

    def backward(self, ctx, out):
        if out.rank not in self.ranks:
            return None
        shape = [max(1, n + ctx.rng.randint(-3, 3)) if ctx.coin(0.6) else n for n in out.shape]
        x = out.with_shape(shape)
        if x.numel > ctx.limits.max_elems:
            return None
        return [x], self._attrs(ctx, x, list(out.shape))

    def value_range(self, a, ranges, ins):
        x = ins[0]
        pads = any(s > x.shape[ax] for ax, s in zip(self._axes(a, x.rank), a["shape"]))
        return [_hull0(ranges[0]) if pads else tuple(ranges[0])]

    def onnx(self, b, a, xs, ys):
        shape = b.ints(a["shape"], hint="shape")
        b.node(self.onnx_op, [xs[0], shape], ys, axes=a["axes"])

    def torch(self, a, x):
        y = x
        for ax, s in zip(self._axes(a, x.dim()), a["shape"]):
            n = y.shape[ax]
            if s < n:
                y = y.narrow(ax, (n - s) // 2, s)
            elif s > n:
                before = (s - n) // 2
                parts = []
                for width in (before, s - n - before):
                    shape = list(y.shape)
                    shape[ax] = width
                    parts.append(torch.zeros(shape, dtype=y.dtype))
                y = torch.cat([parts[0], y, parts[1]], dim=ax)
        return y


# -- NonMaxSuppression ------------------------------------------------------------------------
def _iou(b1, b2, center: int) -> float:
    """onnx.reference's IOU (0 when the boxes do not overlap or one is empty), in float64."""
    if center:
        c1 = (b1[0] - b1[2] / 2, b1[1] - b1[3] / 2, b1[0] + b1[2] / 2, b1[1] + b1[3] / 2)
        c2 = (b2[0] - b2[2] / 2, b2[1] - b2[3] / 2, b2[0] + b2[2] / 2, b2[1] + b2[3] / 2)
        (x1a, y1a, x2a, y2a), (x1b, y1b, x2b, y2b) = c1, c2
    else:
        y1a, x1a, y2a, x2a = min(b1[0], b1[2]), min(b1[1], b1[3]), max(b1[0], b1[2]), max(b1[1], b1[3])
        y1b, x1b, y2b, x2b = min(b2[0], b2[2]), min(b2[1], b2[3]), max(b2[0], b2[2]), max(b2[1], b2[3])
    iw = min(x2a, x2b) - max(x1a, x1b)
    ih = min(y2a, y2b) - max(y1a, y1b)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    a1, a2 = (x2a - x1a) * (y2a - y1a), (x2b - x1b) * (y2b - y1b)
    union = a1 + a2 - inter
    return 0.0 if a1 <= 0 or a2 <= 0 or union <= 0 else inter / union


def _nms_select(scores: np.ndarray, keep) -> list:
    """Greedy selection over one (batch, class) row: box indices by descending score (ties:
    the lower index first), each kept when ``keep(index, selected)`` says so."""
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    chosen: list = []
    for i in order:
        if keep(i, chosen):
            chosen.append(i)
    return chosen


class NonMaxSuppression(OpSpec):
    """Scores (B, classes, n) and boxes (B, n, 4) are graph tensors (float32, the only type
    ONNX allows; the spec takes scores first, so any rank-3 tensor can start an instance,
    and the lowering passes boxes first); ``iou_threshold`` is 1, so no box can suppress
    another (an IOU is at most 1 and suppression needs strictly more) and the output size
    is certain: ``B * classes * min(max_output_boxes_per_class, n)`` rows (batch, class,
    box) by descending score. ``score_threshold`` is absent or -inf. Equal scores leave the
    order unspecified (ONNX says nothing; onnx.reference and onnxruntime put the lower
    index first): ``undefined``."""

    onnx_op = "NonMaxSuppression"
    schema_inputs = (1, 0)
    arity = 2
    dtypes = ((dt.FLOAT32, dt.FLOAT32),)
    ranks = (3,)
    jumps = True
    integral_out = True
    symbolic_ok = False
    gaps = (("iou_threshold below 1 with boxes from the graph, a score_threshold that can cut",
             "the output size would depend on the values"),)

    def _common(self, ctx, n: int) -> dict:
        return {"max_output": ctx.int(1, n + 2), "center_point_box": int(ctx.coin(0.4)),
                "score_threshold": ctx.choice((None, "-inf"))}

    def sample(self, ctx, ins):
        return self._common(ctx, ins[0].shape[2])

    def input_type(self, ctx, i, ins, a, dtype):
        b, _, n = ins[0].shape
        return TensorType(dtype, (b, n, 4))

    def requires(self, ins, a):
        scores, boxes = ins
        if boxes.rank != 3 or scores.rank != 3:
            return [False]
        return [boxes.shape[2] == 4, scores.shape[0] == boxes.shape[0], scores.shape[2] == boxes.shape[1],
                a["max_output"] >= 1]

    def _count(self, ins, a) -> int:
        b, c, n = ins[0].shape
        return b * c * min(a["max_output"], n)

    def infer(self, ins, a):
        return [TensorType(dt.INT64, (self._count(ins, a), 3))]

    def backward(self, ctx, out):
        if out.rank != 2 or out.shape[1] != 3 or out.dtype != dt.INT64:
            return None
        rows = out.shape[0]
        opts = [(b, c, k) for b in range(1, 4) for c in range(1, 5) for k in range(1, 17) if b * c * k == rows]
        if not opts:
            return None
        b, c, k = ctx.choice(opts)
        n = ctx.int(k, 16)
        a = self._common(ctx, n)
        a["max_output"] = k if k < n else ctx.int(n, n + 2)
        return [TensorType(dt.FLOAT32, (b, c, n)), TensorType(dt.FLOAT32, (b, n, 4))], a

    def value_range(self, a, ranges, ins):
        return [(0.0, float(max(ins[0].shape) - 1))]

    def _select(self, a, scores) -> list:
        return [_nms_select(scores[b, c], lambda i, chosen: len(chosen) < a["max_output"])
                for b in range(scores.shape[0]) for c in range(scores.shape[1])]

    def torch(self, a, scores, boxes=None):
        s = scores.detach().numpy()
        rows = []
        for (b, c), chosen in zip(np.ndindex(*s.shape[:2]), self._select(a, s)):
            rows += [[b, c, i] for i in chosen]
        return torch.tensor(rows, dtype=torch.int64).reshape(-1, 3)

    def _ties(self, a, scores) -> str | None:
        s = scores.detach().numpy()
        for (b, c), chosen in zip(np.ndindex(*s.shape[:2]), self._select(a, s)):
            row = s[b, c]
            for i in chosen:
                if int((row == row[i]).sum()) > 1:
                    return "NonMaxSuppression: a selected box's score equals another's; ONNX leaves the choice open"
        return None

    def undefined(self, a, ins, out_types):
        return self._ties(a, ins[0]) or self._near_identical(a, ins[1])

    def _near_identical(self, a, boxes):
        boxes = boxes.detach().to(torch.float64).numpy()
        for b in range(boxes.shape[0]):
            for i in range(boxes.shape[1]):
                for j in range(i):
                    if _iou(boxes[b, i], boxes[b, j], a["center_point_box"]) > 1 - 1e-5:
                        return "NonMaxSuppression: two boxes are (nearly) identical, their IOU may round above 1"
        return None

    def _thresholds(self, b, a, iou: float) -> list:
        ins = [b.const(np.asarray([a["max_output"]], dtype=np.int64), hint="max_output"),
               b.const(np.asarray([iou], dtype=np.float32), hint="iou_threshold")]
        if a["score_threshold"] is not None:
            ins.append(b.const(np.asarray([-np.inf], dtype=np.float32), hint="score_threshold"))
        return ins

    def onnx(self, b, a, xs, ys):
        b.node(self.onnx_op, [xs[1], xs[0]] + self._thresholds(b, a, 1.0), ys,
               center_point_box=b.opt(a["center_point_box"], 0))


class NonMaxSuppressionClusters(NonMaxSuppression):
    """Scores (B, classes, n) from the graph, boxes a constant: per batch, clusters of
    jittered copies of a box, each member overlapping every other beyond ``iou_threshold``
    (by at least 0.05) and clusters far apart, so greedy suppression keeps exactly the
    best-scored box of each cluster: ``min(max_output_boxes_per_class, clusters)`` rows
    per batch and class, whatever the scores. Every batch has the same number of
    clusters."""

    name = "NonMaxSuppressionClusters"
    schema_inputs = (1,)
    arity = 1
    dtypes = ((dt.FLOAT32,),)
    gaps = ()

    def _boxes(self, ctx, batches: int, n: int, clusters: int, thr: float, center: int):
        boxes, members = [], []
        for _ in range(batches):
            ids = list(range(clusters)) + [ctx.rng.randrange(clusters) for _ in range(n - clusters)]
            ctx.rng.shuffle(ids)
            rows = [None] * n
            for cl in range(clusters):
                cx, cy = 16.0 * cl, 16.0 * ctx.rng.randint(0, 3)
                w, h = 4.0 + ctx.rng.randint(0, 16) / 4, 4.0 + ctx.rng.randint(0, 16) / 4
                group = [i for i in range(n) if ids[i] == cl]
                for jitter in (0.5, 0.25, 0.125, 0.0):
                    cand = []
                    for _ in group:
                        dx, dy, dw, dh = (ctx.rng.randint(-4, 4) * jitter / 4 for _ in range(4))
                        cand.append((cx + dx, cy + dy, w + dw, h + dh))
                    ious = [_iou(p, q, 1) for k, p in enumerate(cand) for q in cand[:k]]
                    if all(v > thr + 0.05 for v in ious):
                        break
                for i, (x0, y0, ww, hh) in zip(group, cand):
                    if center:
                        rows[i] = [x0, y0, ww, hh]
                    else:
                        y1, x1, y2, x2 = y0 - hh / 2, x0 - ww / 2, y0 + hh / 2, x0 + ww / 2
                        rows[i] = [y2, x2, y1, x1] if ctx.coin(0.2) else [y1, x1, y2, x2]
            boxes.append(rows)
            members.append(ids)
        return boxes, members

    def sample(self, ctx, ins):
        batches, classes, n = ins[0].shape
        a = self._common(ctx, n)
        clusters = ctx.rng.randint(1, min(n, 6))
        a["max_output"] = ctx.int(1, clusters + 1)
        a["iou_threshold"] = ctx.choice((0.0, 0.25, 0.5, 0.7))
        a["boxes"], a["clusters"] = self._boxes(ctx, batches, n, clusters, a["iou_threshold"], a["center_point_box"])
        return a

    def input_type(self, ctx, i, ins, a, dtype):
        raise AssertionError("one input")

    def requires(self, ins, a):
        s = ins[0]
        if s.rank != 3:
            return [False]
        shape = np.shape(a["boxes"])
        return [shape == (s.shape[0], s.shape[2], 4), a["max_output"] >= 1]

    def _count(self, ins, a) -> int:
        s = ins[0]
        return s.shape[0] * s.shape[1] * min(a["max_output"], max(a["clusters"][0]) + 1)

    def backward(self, ctx, out):
        if out.rank != 2 or out.shape[1] != 3 or out.dtype != dt.INT64:
            return None
        rows = out.shape[0]
        opts = [(b, c, k) for b in range(1, 4) for c in range(1, 5) for k in range(1, 7) if b * c * k == rows]
        if not opts:
            return None
        b, c, k = ctx.choice(opts)
        n = ctx.int(k, 12)
        a = self._common(ctx, n)
        clusters = k if ctx.coin(0.5) else ctx.int(k, n)
        a["max_output"] = k if k < clusters else ctx.int(k, k + 1)
        a["iou_threshold"] = ctx.choice((0.0, 0.25, 0.5, 0.7))
        a["boxes"], a["clusters"] = self._boxes(ctx, b, n, clusters, a["iou_threshold"], a["center_point_box"])
        return [TensorType(dt.FLOAT32, (b, c, n))], a

    def value_range(self, a, ranges, ins):
        return [(0.0, float(max(ins[0].shape) - 1))]

    def _select(self, a, scores) -> list:
        out = []
        for b in range(scores.shape[0]):
            ids = a["clusters"][b]
            for c in range(scores.shape[1]):
                out.append(_nms_select(scores[b, c], lambda i, chosen, ids=ids: len(chosen) < a["max_output"]
                                       and all(ids[j] != ids[i] for j in chosen)))
        return out

    def undefined(self, a, ins, out_types):
        return self._ties(a, ins[0])

    def onnx(self, b, a, xs, ys):
        boxes = b.const(np.asarray(a["boxes"], dtype=np.float32), hint="boxes")
        b.node(self.onnx_op, [boxes, xs[0]] + self._thresholds(b, a, a["iou_threshold"]), ys,
               center_point_box=b.opt(a["center_point_box"], 0))


OPS = [GridSample, AffineGrid, AffineGridSample, RoiAlign, MaxRoiPool, DeformConv, DeformConvNoBias, DeformConvNoMask, MaxUnpool,
       Col2Im, CenterCropPad, NonMaxSuppression, NonMaxSuppressionClusters]
