from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from dlgate.ops.base import TensorType
from dlgate.ops.norm._shared import EPS_DEFAULT, Norm, _affine, affine_span, _eps, _unit, _zmax


class LayerNormalization(Norm):
    """Normalization over the trailing axes from ``axis`` (every axis, negative spellings
    too); Scale and B shaped like them. ``stash_type`` is 1 (float32 statistics), written
    out or left to its default: the only value of the Mean/InvStdDev type U that dlgate
    has. float16 statistics are computed in float32, as the function body does; float64
    ones in float64, as onnxruntime and onnx.reference compute them (the function body
    would cast them to float32: a difference of float32 rounding, well within the float64
    comparison tolerance but not the spec tests' tighter one)."""

    onnx_op = "LayerNormalization"
    arity = 3
    min_opset = 17
    ranks = (1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        return {"epsilon": _eps(ctx), "axis": ctx.axis(ins[0].rank), "stash_type": 1}

    def onnx_attrs(self, a, b):
        return {"epsilon": b.opt(a["epsilon"], EPS_DEFAULT), "axis": b.opt(a["axis"], -1),
                "stash_type": b.opt(a.get("stash_type", 1), 1)}

    def torch(self, a, x, s, bias=None):
        shape = tuple(x.shape[a["axis"] % x.dim():])
        xw = x.float() if x.dtype == torch.float16 else x
        y = F.layer_norm(xw, shape, eps=a["epsilon"]).to(x.dtype) * s
        return y if bias is None else y + bias

    centred = True
    gaps = (("stash_type 16 (bfloat16 statistics)",
             "no bfloat16 dtype in dlgate; onnxruntime ignores stash_type and onnx.reference raises "
             "NotImplementedError for it"),
            ("float64 inputs with float32 statistics (stash_type 1 literally)",
             "onnxruntime and onnx.reference keep float64; the reference follows them (see the docstring)"))

    def param_shape(self, x, a):
        ax = a["axis"] % len(x)
        return tuple(x[ax:])

    def _n(self, a, x: TensorType) -> int:
        return math.prod(x.shape[a["axis"] % x.rank:])

    def value_range(self, a, ranges, ins):
        # scale * z + bias, z standardized over n elements
        x = ins[0]
        z = _zmax(self._n(a, x), a["epsilon"], ranges[0], _unit(x.dtype))
        return [_affine(z, ranges[1], ranges[2] if len(ranges) > 2 else (0.0, 0.0))]

    def exact(self, a, exacts, ins):
        # over a single element z is exactly 0: the output is the bias (0 without one)
        if self._n(a, ins[0]) != 1:
            return None
        return exacts[2] if len(exacts) > 2 else 0.0

    def input_span(self, a, i, span, ins):
        return affine_span(i, span, self._n(a, ins[0]), has_bias=len(ins) > 2)


class LayerNormalizationNoB(LayerNormalization):
    """LayerNormalization with the optional B input omitted."""

    name = "LayerNormalizationNoB"
    arity = 2


OPS = [LayerNormalization, LayerNormalizationNoB]
