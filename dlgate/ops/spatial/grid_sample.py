from __future__ import annotations

import math

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.spatial._shared import _hull0


FLOAT_PAIRS = tuple((t, t) for t in dt.FLOATS)

# -- GridSample ------------------------------------------------------------------------------
PADDING_MODES = ("zeros", "border", "reflection")
#: Keys' cubic convolution coefficient ONNX (and PyTorch) use, and the largest sum of the
#: absolute values of its four weights (at t = 0.5).
CUBIC_A = -0.75
CUBIC_ABS_SUM = 1.375

#: Beyond this magnitude a grid coordinate names no pixel in any precision (float32 spacing
#: there exceeds the image): results are reported undefined, and the reference holds it.
FAR = 1e6


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
    arity = 2
    dtypes = FLOAT_PAIRS
    ranks = (4, 5)
    min_opset = 16
    symbolic_ok = False

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

    def onnx_attrs(self, a, b):
        mode = a["mode"]
        if b.opset < 20:
            mode = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
        return {"mode": b.opt(mode, "bilinear" if b.opset < 20 else "linear"),
                "padding_mode": b.opt(a["padding_mode"], "zeros"),
                "align_corners": b.opt(a["align_corners"], 0)}

    def torch(self, a, x, grid):
        y = grid_sample(x.to(torch.float64), grid.to(torch.float64), a["mode"], a["padding_mode"],
                        bool(a["align_corners"]))
        return y.to(x.dtype)

    interpolates = True
    gaps = (("integer, bool and string X", "interpolating them is not meaningful and onnxruntime has no kernel"),
            ("X and grid of different float types", "no exporter writes it"),
            ("reflection padding with align_corners=1 over a size-1 dim",
             "the reflection range is empty: onnxruntime and onnx.reference divide by zero"),
            ("5-D cubic", "onnxruntime fails at run time (only 4-D cubic) and TVM's importer raises "
                          "NotImplementedError; the reference implements it (tested against onnx.reference)"))
    safe = {1: (-1.2, 1.2)}  # grid positions: inside [-1, 1], a few beyond (padding)

    def discontinuous(self, a):
        return a["mode"] == "nearest"

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

    def undefined(self, a, ins, out_types):
        if ins[1].numel() and float(torch.nan_to_num(ins[1].detach().double().abs(), nan=0.0).max()) > FAR:
            return f"grid coordinates beyond {FAR:g} name no pixel: past it, float spacing exceeds the image"
        return None


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


OPS = [GridSample]
