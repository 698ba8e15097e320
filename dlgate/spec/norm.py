"""Normalization: BatchNormalization (inference), LayerNormalization, InstanceNormalization,
GroupNormalization. Floating-point types only; all inputs share X's dtype."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec import sym
from dlgate.spec.base import OpSpec, TensorType, f32

EPS_DEFAULT = f32(1e-5)


def _eps(ctx) -> float:
    return ctx.choice((EPS_DEFAULT, EPS_DEFAULT, f32(1e-3), f32(1e-2), ctx.uniform(1e-6, 1e-1)))


def _chan(v, rank):
    """A per-channel vector reshaped to broadcast over axis 1 of a rank-``rank`` tensor."""
    return v.reshape((1, -1) + (1,) * (rank - 2))


class Norm(OpSpec):
    """Y has X's type; the further inputs are per-channel vectors of size C = X.shape[1]."""

    ranks = (2, 3, 4, 5)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.dtypes = tuple((t,) * cls.arity for t in dt.FLOATS)

    def sample(self, ctx, ins):
        return {"epsilon": _eps(ctx)}

    def param_shape(self, x, a):
        return (x[1],)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self.param_shape(ins[0].shape, a))

    def requires(self, ins, a):
        want = self.param_shape(ins[0].shape, a)
        out = []
        for t in ins[1:]:
            if t.rank != len(want):
                return [False]
            out += [d == e for d, e in zip(t.shape, want)]
        return out

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        a = self.sample(ctx, [out])
        shape = self.param_shape(out.shape, a)
        return [out] + [TensorType(out.dtype, shape) for _ in range(self.arity - 1)], a


class BatchNormalization(Norm):
    """Inference mode: ``scale * (x - mean) / sqrt(var + eps) + B`` in X's dtype, as the
    ONNX reference computes it."""

    onnx_op = "BatchNormalization"
    arity = 5
    restricted = True

    def sample(self, ctx, ins):
        return {"epsilon": _eps(ctx), "momentum": ctx.choice((f32(0.9), ctx.uniform(0.0, 1.0)))}

    def reference_defect(self, a, ins, opset):
        if opset < 14:
            # BatchNormalization-9 is inference-only, but onnx.reference's version takes a
            # training path whenever momentum is set, and the schema default always sets it.
            return "onnx.reference's BatchNormalization-9 normalizes with batch statistics (training path)"
        return None

    def onnx_attrs(self, a, b):
        attrs = {"epsilon": b.opt(a["epsilon"], EPS_DEFAULT), "momentum": b.opt(a["momentum"], f32(0.9))}
        if b.opset >= 14:  # training_mode appears in BatchNormalization-14
            attrs["training_mode"] = b.opt(0, 0)
        return attrs

    def torch(self, a, x, s, bias, mean, var):
        r = x.dim()
        s, bias, mean, var = (_chan(v, r) for v in (s, bias, mean, var))
        return s * (x - mean) / torch.sqrt(var + a["epsilon"]) + bias

    def input_range(self, a, i):
        return (0.1, 2.0) if i == 4 else None  # the variance

    def losses(self, a, x, s, bias, mean, var):
        return [L.gt0(var.double() + a["epsilon"])]


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
        return super().requires(ins, a) + [a["num_groups"] >= 1, sym.mod(ins[0].shape[1], a["num_groups"]) == 0]

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


class LayerNormalization(Norm):
    """Normalization over the trailing axes from ``axis``; Scale and B shaped like them.
    Statistics in float32 for float16 (stash_type 1), as the ONNX function body does."""

    onnx_op = "LayerNormalization"
    arity = 3
    min_opset = 17
    ranks = (1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        return {"epsilon": _eps(ctx), "axis": ctx.axis(ins[0].rank)}

    def param_shape(self, x, a):
        ax = a["axis"] % len(x)
        return tuple(x[ax:])

    def value_range(self, a, ranges, ins):
        # over a single element every normalized value is exactly 0: the output is the bias
        n = 1
        for d in ins[0].shape[a["axis"] % ins[0].rank:]:
            n *= d
        if n != 1:
            return None
        return [ranges[2] if len(ranges) > 2 else (0.0, 0.0)]

    def onnx_attrs(self, a, b):
        return {"epsilon": b.opt(a["epsilon"], EPS_DEFAULT), "axis": b.opt(a["axis"], -1),
                "stash_type": b.opt(1, 1)}

    def torch(self, a, x, s, bias=None):
        shape = tuple(x.shape[a["axis"] % x.dim():])
        xw = x.float() if x.dtype == torch.float16 else x
        y = F.layer_norm(xw, shape, eps=a["epsilon"]).to(x.dtype) * s
        return y if bias is None else y + bias


class LayerNormalizationNoB(LayerNormalization):
    """LayerNormalization with the optional B input omitted."""

    name = "LayerNormalizationNoB"
    arity = 2


OPS = [BatchNormalization, InstanceNormalization, GroupNormalization, LayerNormalization, LayerNormalizationNoB]
