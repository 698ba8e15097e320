from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.conv._shared import _spatial_attrs
from dlgate.ops.linalg._shared import product_bounds, sum_bounds
from dlgate.ops.linalg.gemm import plus_bounds
from dlgate.ops.spatial._shared import _hull0


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

    gaps = (("1-D and 3-D DeformConv", "onnx.reference implements 2-D only and onnxruntime 2-D only"),)

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


DeformConv._setup()


class DeformConvNoBias(DeformConv):
    name = "DeformConvNoBias"
    has_bias = False


class DeformConvNoMask(DeformConv):
    name = "DeformConvNoMask"
    has_mask = False


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


OPS = [DeformConv, DeformConvNoBias, DeformConvNoMask]
