from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import INF, UNBOUNDED, OpSpec


# -- Resize -------------------------------------------------------------------------------

#: Spatial scales as exact fractions p/q, all exactly representable in float32, so that
#: floor(dim * scale), out / in and the coordinate maps agree bit for bit across runtimes.
RATIOS = ((1, 4), (1, 2), (3, 4), (1, 1), (5, 4), (3, 2), (2, 1), (5, 2), (3, 1), (4, 1))
#: (mode, coordinate_transformation_mode) pairs checked against onnxruntime and onnx.reference.
COMBOS = {
    "nearest": ("asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"),
    "linear": ("asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"),
    "cubic": ("asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"),
}
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


class Resize(OpSpec):
    """Resizes the trailing one or two dims of a rank-3/4 input by exact ratios p/q
    (``scales``, output floor(dim * p / q)) or to exact sizes dim * p / q (``sizes``);
    roi is empty. d * p / q is always an integer: otherwise onnxruntime recomputes the
    scale as out/in while onnx.reference keeps the given one (and uses the unrounded length
    for align_corners). Cubic needs rank 4 (onnxruntime); cubic + pytorch_half_pixel with
    an output length of 1 is left out (onnx.reference does not apply the length-1 rule).
    Integer inputs use nearest only (linear/cubic rounding is unspecified), and so does
    float64 (onnx.reference's interpolation weights are float32-accurate);
    tf_crop_and_resize, antialias, keep_aspect_ratio_policy and the axes input are not
    generated."""

    onnx_op = "Resize"
    dtypes = tuple((t,) for t in dt.FLOATS + (dt.INT8, dt.UINT8, dt.INT32, dt.INT64))
    ranks = (3, 4)

    def _mode_attrs(self, ctx, dtype, rank):
        modes = ("nearest", "linear", "cubic") if rank == 4 else ("nearest", "linear")
        # float64: onnx.reference interpolates in float32 precision, so nearest only
        mode = ctx.choice(modes) if dtype in (dt.FLOAT32, dt.FLOAT16) else "nearest"
        ctms = [c for c in COMBOS[mode] if c != "half_pixel_symmetric" or ctx.opset >= 19]
        a = {"mode": mode, "ctm": ctx.choice(ctms), "nearest_mode": None, "cubic_a": None, "exclude_outside": None}
        if mode == "nearest":
            a["nearest_mode"] = ctx.choice(NEAREST_MODES)
        if mode == "cubic":
            a["cubic_a"] = ctx.choice((-0.75, -0.5))
            a["exclude_outside"] = int(ctx.coin(0.3))
        return a

    def sample(self, ctx, ins):
        x = ins[0]
        a = self._mode_attrs(ctx, x.dtype, x.rank)
        nsp = ctx.choice((1, 2))
        pq = [[1, 1]] * (x.rank - nsp) + [list(ctx.choice(RATIOS)) for _ in range(nsp)]
        if ctx.degenerate_draw():  # scales (or sizes) of 1: the identity resize
            pq = [[1, 1]] * x.rank
        a["pq"] = pq
        a["use_sizes"] = int(ctx.coin(0.4))
        a["sizes"] = [sym.div(d * p, q) for d, (p, q) in zip(x.shape, pq)] if a["use_sizes"] else None
        return a

    def backward(self, ctx, out):
        if out.rank not in self.ranks or not self.sigs(out.dtype):
            return None
        a = self._mode_attrs(ctx, out.dtype, out.rank)
        nsp = ctx.choice((1, 2))
        a["use_sizes"] = int(ctx.coin(0.4))
        shape, pq = list(out.shape), [[1, 1]] * out.rank
        for i in range(out.rank - nsp, out.rank):
            o = out.shape[i]
            p, q = ctx.choice(RATIOS)
            d = o * q // p if (o * q) % p == 0 else None
            if d is None or d < 1 or d > ctx.limits.max_dim:
                p = q = 1
                d = o
            shape[i], pq[i] = d, [p, q]
        a["pq"] = pq
        a["sizes"] = list(out.shape) if a["use_sizes"] else None
        return [out.with_shape(shape)], a

    def requires(self, ins, a):
        out = []
        for d, (p, q) in zip(ins[0].shape, a["pq"]):
            out += [sym.div(d * p, q) >= 1, sym.mod(d * p, q) == 0]
            if a["mode"] == "cubic" and a["ctm"] == "pytorch_half_pixel" and p != q:
                out.append(sym.div(d * p, q) >= 2)  # onnx.reference ignores the length-1 rule here
        if a["mode"] == "cubic":
            out.append(ins[0].rank == 4)  # onnxruntime: bicubic over the trailing two dims only
        if a["use_sizes"]:
            out += [s == sym.div(d * p, q) for s, d, (p, q) in zip(a["sizes"], ins[0].shape, a["pq"])]
        return out

    def infer(self, ins, a):
        return [ins[0].with_shape([sym.div(d * p, q) for d, (p, q) in zip(ins[0].shape, a["pq"])])]

    def onnx(self, b, a, xs, ys):
        if a["use_sizes"]:
            ins = [xs[0], "", "", b.ints(a["sizes"])]
        else:
            ins = [xs[0], "", b.const(np.array([p / q for p, q in a["pq"]], dtype=np.float32))]
        b.node("Resize", ins, ys, mode=b.opt(a["mode"], "nearest"),
               coordinate_transformation_mode=b.opt(a["ctm"], "half_pixel"),
               nearest_mode=None if a["nearest_mode"] is None else b.opt(a["nearest_mode"], "round_prefer_floor"),
               cubic_coeff_a=None if a["cubic_a"] is None else b.opt(a["cubic_a"], -0.75),
               exclude_outside=None if a["exclude_outside"] is None else b.opt(a["exclude_outside"], 0))

    def torch(self, a, x):
        for ax, (p, q) in enumerate(a["pq"]):
            if p == q:
                continue
            d = x.shape[ax]
            o = d * p // q
            w = _weights(a, d, o, p / q)
            if a["mode"] == "nearest":
                x = x.index_select(ax, torch.from_numpy(w))
                continue
            ct = torch.float64 if x.dtype == torch.float64 else torch.float32
            y = torch.matmul(x.movedim(ax, -1).to(ct), torch.from_numpy(w.T).to(ct))
            x = y.to(x.dtype).movedim(-1, ax)
        return x

    interpolates = True

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        if a["mode"] != "cubic":
            return [(lo, hi)]  # copies (nearest) or convex combinations (linear)
        for d, (p, q) in zip(ins[0].shape, a["pq"]):
            if p == q:
                continue
            if sym.is_sym(d):
                return [UNBOUNDED]
            w = _weights(a, d, d * p // q, p / q)
            # a row's weights sum to 1, those below 0 to -neg: y = lo + sum w (x - lo)
            # lies in [lo - neg (hi - lo), hi + neg (hi - lo)]
            neg = float(-np.minimum(w, 0.0).sum(axis=1).min())
            if neg > 0:
                if lo == -INF or hi == INF:
                    return [UNBOUNDED]
                lo, hi = lo - neg * (hi - lo), hi + neg * (hi - lo)
        return [(lo, hi)]


def _source(ctm: str, x: np.ndarray, d: int, o: int, scale: float) -> np.ndarray:
    """ONNX Resize's coordinate transformation (output coordinate -> input coordinate)."""
    if ctm == "asymmetric":
        return x / scale
    if ctm == "align_corners":
        return np.zeros_like(x) if o == 1 else x * (d - 1) / (o - 1)
    if ctm == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if o > 1 else np.zeros_like(x)
    if ctm == "half_pixel_symmetric":
        adj = o / (scale * d)
        return d / 2 * (1 - adj) + (x + 0.5) / scale - 0.5
    return (x + 0.5) / scale - 0.5  # half_pixel


def _cubic_coeffs(r: np.ndarray, A: float) -> np.ndarray:
    def near(t):  # |t| <= 1
        return ((A + 2) * t - (A + 3)) * t * t + 1

    def far(t):  # 1 < |t| < 2
        return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A

    return np.stack([far(r + 1), near(r), near(1 - r), far(2 - r)], axis=-1)


def _weights(a: dict, d: int, o: int, scale: float):
    """Index list (nearest) or (o, d) interpolation matrix (linear, cubic) for one axis."""
    x = _source(a["ctm"], np.arange(o, dtype=np.float64), d, o, scale)
    mode = a["mode"]
    if mode == "nearest":
        nm = a["nearest_mode"]
        idx = {"round_prefer_floor": np.ceil(x - 0.5), "round_prefer_ceil": np.floor(x + 0.5),
               "floor": np.floor(x), "ceil": np.ceil(x)}[nm]
        return np.clip(idx, 0, d - 1).astype(np.int64)
    W = np.zeros((o, d))
    rows = np.arange(o)
    if mode == "linear":
        x = np.clip(x, 0, d - 1)
        x0 = np.floor(x)
        r = x - x0
        x0 = x0.astype(np.int64)
        np.add.at(W, (rows, x0), 1 - r)
        np.add.at(W, (rows, np.minimum(x0 + 1, d - 1)), r)
        return W
    x0 = np.floor(x)
    r = x - x0
    c = _cubic_coeffs(r, a["cubic_a"])
    pts = x0.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    if a["exclude_outside"]:
        c = np.where((pts >= 0) & (pts <= d - 1), c, 0.0)
        c = c / c.sum(axis=1, keepdims=True)
    for j in range(4):
        np.add.at(W, (rows, np.clip(pts[:, j], 0, d - 1)), c[:, j])
    return W


OPS = [Resize]
