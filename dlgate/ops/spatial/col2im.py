from __future__ import annotations

import math

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType
from dlgate.ops.linalg._shared import sum_bounds


class Col2Im(OpSpec):
    """Col2Im (N, C * prod(block), L) -> (N, C, *image_shape): every column's block added
    back at its sliding position (PyTorch's fold, N-D), with strides, dilations and pads;
    ``image_shape`` and ``block_shape`` are constants. 1-D to 3-D images (dilated: 2-D only,
    see ``gaps``)."""

    onnx_op = "Col2Im"
    min_opset = 18
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (3,)
    symbolic_ok = False

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

    keeps_integers = True
    gaps = (("integer, bool and string inputs", "onnxruntime implements float only (TVM lacks Col2Im)"),
            ("dilations > 1 on 1-D and 3-D images",
             "onnxruntime 1.32 computes them wrong (its N-D path; 2-D is right): every such case would report it"))

    def value_range(self, a, ranges, ins):
        return [sum_bounds(tuple(ranges[0]), 0, math.prod(a["block_shape"]))]


# -- Col2Im ---------------------------------------------------------------------------------------
def _factorizations(n: int, parts: int) -> list:
    """Every ordered way to write n as a product of ``parts`` positive factors."""
    if parts == 1:
        return [[n]]
    return [[d] + rest for d in range(1, n + 1) if n % d == 0 for rest in _factorizations(n // d, parts - 1)]


OPS = [Col2Im]
