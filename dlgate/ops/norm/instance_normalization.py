from __future__ import annotations

import math

import torch

from dlgate.ops.base import TensorType
from dlgate.ops.norm._shared import EPS_DEFAULT, Norm, _affine, affine_span, _chan, _unit, _zmax


class InstanceNormalization(Norm):
    """Per-sample, per-channel normalization over the spatial axes."""

    onnx_op = "InstanceNormalization"
    arity = 3
    ranks = (3, 4, 5)

    def onnx_attrs(self, a, b):
        return {"epsilon": b.opt(a["epsilon"], EPS_DEFAULT)}

    def torch(self, a, x, s, bias):
        # float16 is computed in float32 and rounded once, as onnxruntime does; onnx.reference
        # computes the variance in float16 and can differ by more than float16 tolerance
        # when a channel's variance is tiny.
        r, axes = x.dim(), tuple(range(2, x.dim()))
        w = torch.float32 if x.dtype == torch.float16 else x.dtype
        xw = x.to(w)
        mean = xw.mean(dim=axes, keepdim=True)
        var = ((xw - mean) ** 2).mean(dim=axes, keepdim=True)
        y = _chan(s.to(w), r) * (xw - mean) / torch.sqrt(var + a["epsilon"]) + _chan(bias.to(w), r)
        return y.to(x.dtype)

    centred = True

    def _n(self, x: TensorType) -> int:
        return math.prod(x.shape[2:])

    def value_range(self, a, ranges, ins):
        # scale * z + bias, z standardized over n elements (two-pass variance)
        x = ins[0]
        z = _zmax(self._n(x), a["epsilon"], ranges[0], _unit(x.dtype), two_pass=True)
        return [_affine(z, ranges[1], ranges[2])]

    def exact(self, a, exacts, ins):
        # over a single element z is exactly 0: each channel's output is its bias
        return exacts[2] if self._n(ins[0]) == 1 else None

    def input_span(self, a, i, span, ins):
        return affine_span(i, span, self._n(ins[0]))


OPS = [InstanceNormalization]
