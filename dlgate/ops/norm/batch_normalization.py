from __future__ import annotations

import math

import torch

from dlgate import dtypes as dt
from dlgate.ops import losses as L
from dlgate.ops.base import UNBOUNDED, Restricted, TensorType, f32
from dlgate.ops.binary._shared import mul_bounds
from dlgate.ops.linalg.gemm import plus_bounds
from dlgate.ops.norm._shared import EPS_DEFAULT, INF, Norm, _chan, _eps


class BatchNormalization(Restricted, Norm):
    """Inference mode: ``scale * (x - mean) / sqrt(var + eps) + B``, float16 computed in
    float32 and rounded once (as onnxruntime does, and onnx.reference from the float32
    epsilon on): rounding each of the four steps to float16 can land an ulp away from the
    correctly rounded value, which a cancelling Add downstream magnifies.

    X may be 1-D (N values, one channel: the parameters are [1] vectors), as the schema
    allows since version 9. The schema types mean/var apart from X from opset 14 (U), and
    scale/B too from opset 15 (T1, T2): a quarter of the draws there mix float types
    (float16 X with float32 statistics, as mixed-precision exporters write). The result is
    X's type, computed in the promotion of all five types (float32 at least), as
    onnx.reference computes it."""

    onnx_op = "BatchNormalization"
    arity = 5
    ranks = (1, 2, 3, 4, 5)
    #: (T, T1, T1, T2, T2): X, scale and B, mean and var; the schema rejects mixed ones
    #: before opset 14 (and T1 other than T before 15), so they are drawn only there.
    dtypes = tuple((t, t1, t1, t2, t2) for t in dt.FLOATS for t1 in dt.FLOATS for t2 in dt.FLOATS)
    #: The share of mixed signatures among a draw's signatures, where any is allowed.
    MIXED_SHARE = 0.25
    #: How much likelier, among the mixed signatures, the one real exporters write: float16
    #: X with float16/float32 parameters (mixed-precision models keep float32 statistics).
    REAL_MIX = 4.0

    def param_shape(self, x, a):
        return (x[1],) if len(x) > 1 else (1,)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self.param_shape(ins[0].shape, a))

    def backward(self, ctx, out):
        got = super().backward(ctx, out)
        if got is None or ctx.opset < 14 or not ctx.coin(self.MIXED_SHARE):
            return got
        ins, a = got
        floats = [t for t in dt.FLOATS if t in ctx.dtypes]
        if out.dtype == dt.FLOAT16 and dt.FLOAT32 in floats and ctx.coin(0.5):
            floats = [dt.FLOAT16, dt.FLOAT32]  # the mix real exporters write, as in sig_weights
        t1 = ctx.choice(floats) if ctx.opset >= 15 else out.dtype  # BatchNormalization-14: scale/B are T
        t2 = ctx.choice(floats)
        shape = ins[1].shape
        return [ins[0], TensorType(t1, shape), TensorType(t1, shape), TensorType(t2, shape), TensorType(t2, shape)], a

    def sample(self, ctx, ins):
        return {"epsilon": _eps(ctx), "momentum": ctx.choice((f32(0.9), ctx.uniform(0.0, 1.0)))}

    def onnx_attrs(self, a, b):
        attrs = {"epsilon": b.opt(a["epsilon"], EPS_DEFAULT), "momentum": b.opt(a["momentum"], f32(0.9))}
        if b.opset >= 14:  # training_mode appears in BatchNormalization-14
            attrs["training_mode"] = b.opt(0, 0)
        return attrs

    def torch(self, a, x, s, bias, mean, var):
        r = x.dim()
        w = x.dtype
        for v in (s, bias, mean, var):
            w = torch.promote_types(w, v.dtype)
        w = torch.float32 if w == torch.float16 else w
        s, bias, mean, var = (_chan(v.to(w), r) for v in (s, bias, mean, var))
        return (s * (x.to(w) - mean) / torch.sqrt(var + a["epsilon"]) + bias).to(x.dtype)

    safe = {4: (0.1, 2.0)}  # the variance

    @staticmethod
    def _real_mix(sig) -> bool:
        return sig[0] == dt.FLOAT16 and all(t in (dt.FLOAT16, dt.FLOAT32) for t in sig[1:])

    def sig_weights(self, sigs) -> list | None:
        """Homogeneous signatures as often as before mixed ones were allowed; the mixed ones
        share ``MIXED_SHARE`` of the draws (uniform over all 27 would make them 8 in 9),
        float16 X with float32 statistics the likeliest of them (``REAL_MIX``)."""
        mixed = [len(set(s)) > 1 for s in sigs]
        n_same = len(sigs) - sum(mixed)
        raw = [self.REAL_MIX if self._real_mix(s) else 1.0 for s in sigs]
        total = sum(r for r, m in zip(raw, mixed) if m)
        if not total or not n_same:
            return None
        k = self.MIXED_SHARE * n_same / ((1 - self.MIXED_SHARE) * total)
        return [k * r if m else 1.0 for r, m in zip(raw, mixed)]

    def reference_defect(self, a, ins, opset):
        if opset < 14:
            # BatchNormalization-9 is inference-only, but onnx.reference's version takes a
            # training path whenever momentum is set, and the schema default always sets it.
            return "onnx.reference's BatchNormalization-9 normalizes with batch statistics (training path)"
        # (any narrower parameter: callers may pass a model's distinct inputs, not the five)
        if ins[0].dtype == dt.FLOAT64 and any(t.dtype != dt.FLOAT64 for t in ins[1:]):
            # numpy adds the float32 epsilon to a narrower variance in float32: sqrt(var + eps)
            # is rounded to float32 before the float64 division, off by float32's roundoff
            # where the float64 result (ours, and a compiler casting the parameters to X's
            # type) is exact to float64's
            return "onnx.reference computes sqrt(var + eps) of a narrower variance in float32 for a float64 X"
        return None

    def input_domain(self, a, i):
        # every variance must keep var + eps > 0 (else a NaN or a division by zero)
        return (-a["epsilon"], INF) if i == 4 else None

    def value_range(self, a, ranges, ins):
        # interval arithmetic over scale * (x - mean) / sqrt(var + eps) + B
        (xl, xh), s, b, (ml, mh), (vl, vh) = ranges
        if vl + a["epsilon"] <= 0:
            return [UNBOUNDED]  # the divisor can come arbitrarily close to 0
        inv = (1 / math.sqrt(vh + a["epsilon"]), 1 / math.sqrt(vl + a["epsilon"]))
        return [plus_bounds(mul_bounds(mul_bounds(s, (xl - mh, xh - ml)), inv), b)]

    def losses(self, a, x, s, bias, mean, var):
        return [L.gt0(var.double() + a["epsilon"])]


OPS = [BatchNormalization]
