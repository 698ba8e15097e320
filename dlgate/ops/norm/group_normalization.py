from __future__ import annotations

import math

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import TensorType
from dlgate.ops.norm._shared import EPS_DEFAULT, Norm, _affine, affine_span, _chan, _eps, _zmax


class GroupNormalization(Norm):
    """Opset 21 semantics: per-channel scale and bias; statistics in float32 (stash_type)."""

    onnx_op = "GroupNormalization"
    arity = 3
    min_opset = 21

    def sample(self, ctx, ins):
        # float64 statistics for float64 inputs: a float32 stash cannot meet float64 tolerances.
        return {"epsilon": _eps(ctx), "num_groups": ctx.divisor(ins[0].shape[1]),
                "stash_type": 11 if ins[0].dtype == dt.FLOAT64 else 1}

    def requires(self, ins, a):
        # stash_type is a dtype code: 1 (float32) or 11 (float64) are the precisions dlgate has
        return super().requires(ins, a) + [a["num_groups"] >= 1, sym.mod(ins[0].shape[1], a["num_groups"]) == 0,
                                           a["stash_type"] in (1, 11)]

    def onnx_attrs(self, a, b):
        return {"epsilon": b.opt(a["epsilon"], EPS_DEFAULT), "num_groups": a["num_groups"],
                "stash_type": b.opt(a["stash_type"], 1)}

    def torch(self, a, x, s, bias):
        # The ONNX function body: statistics in the stash type with var = E[x^2] - E[x]^2.
        r, g = x.dim(), a["num_groups"]
        x3 = x.to(torch.float64 if a["stash_type"] == 11 else torch.float32).reshape(x.shape[0], g, -1)
        mean = x3.mean(dim=2, keepdim=True)
        var = (x3 * x3).mean(dim=2, keepdim=True) - mean * mean
        y = ((x3 - mean) / torch.sqrt(var + a["epsilon"])).reshape(x.shape).to(x.dtype)
        return y * _chan(s, r) + _chan(bias, r)

    centred = True

    def _n(self, a, x: TensorType) -> int:
        return x.shape[1] // a["num_groups"] * math.prod(x.shape[2:])

    def value_range(self, a, ranges, ins):
        # scale * z + bias, z standardized over a group's n elements in the stash type
        u = 2.0 ** (-53 if a["stash_type"] == 11 else -24)
        z = _zmax(self._n(a, ins[0]), a["epsilon"], ranges[0], u)
        return [_affine(z, ranges[1], ranges[2])]

    def exact(self, a, exacts, ins):
        # over a single element z is exactly 0 (x - mean, x * x - mean * mean): the bias
        return exacts[2] if self._n(a, ins[0]) == 1 else None

    def input_span(self, a, i, span, ins):
        return affine_span(i, span, self._n(a, ins[0]))


OPS = [GroupNormalization]
