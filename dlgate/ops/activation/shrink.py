from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.activation._shared import DEFAULT_PROB, Activation
from dlgate.ops.base import INF_ONLY, f32


class Shrink(Activation):
    """``x < -lambd: x + bias; x > lambd: x - bias; else 0``, for floats and integers.
    ``lambd`` >= 0 (a negative one makes both conditions hold at once, which the text
    leaves open: onnx.reference takes the first, TVM adds both). Integer inputs get an
    integer-valued bias (the text does not say how ``x - 0.5`` becomes an integer), and
    uint8 a bias at most floor(lambd) + 1, so ``x - bias`` stays >= 0; signed overflow is
    reported as undefined. float16 inputs get float16-representable attributes; float64
    ones bias 0 (onnxruntime rounds float64 Shrink to float32, see ``gaps``)."""

    onnx_op = "Shrink"
    types = dt.FLOATS + dt.INTS

    def sample(self, ctx, ins):
        t = ins[0].dtype
        lambd = 0.5 if ctx.coin(DEFAULT_PROB) else ctx.choice((0.0, 1.0, ctx.uniform(0.0, 3.0)))
        if dt.is_int(t):
            hi = int(np.floor(lambd)) + 1 if t == dt.UINT8 else 3
            bias = 0.0 if ctx.coin(DEFAULT_PROB) else float(ctx.rng.randint(0 if t == dt.UINT8 else -3, hi))
        elif t == dt.FLOAT64:
            bias = 0.0  # see gaps: onnxruntime's float64 Shrink
        else:
            bias = 0.0 if ctx.coin(DEFAULT_PROB) else ctx.choice((lambd, ctx.uniform(-2.0, 2.0)))
        if t == dt.FLOAT16:
            lambd, bias = float(np.float16(lambd)), float(np.float16(bias))
        return {"lambd": f32(lambd), "bias": f32(bias)}

    def onnx_attrs(self, a, b):
        return {"lambd": b.opt(a["lambd"], 0.5), "bias": b.opt(a["bias"], 0.0)}

    def torch(self, a, x):
        lam, bias = a.get("lambd", 0.5), a.get("bias", 0.0)
        bias = bias if x.is_floating_point() else int(bias)
        zero = torch.zeros_like(x)
        return torch.where(x < -lam, x + bias, torch.where(x > lam, x - bias, zero))

    nonfinite = INF_ONLY
    jumps = True
    can_overflow = True
    keeps_integers = True
    gaps = (("lambd < 0", "x < -lambd and x > lambd overlap; the text does not say which wins"),
            ("a non-integer bias for integer inputs", "the text does not say how x - bias is rounded"),
            ("a nonzero bias for float64 inputs", "onnxruntime 1.32 computes float64 Shrink in float32 "
                                                  "(3.141592653589793 -> 3.14159274): x - bias then cancels "
                                                  "beyond float64 tolerance"),
            ("integer inputs beyond 2**24 in magnitude", "bias is a float attribute and the text does not say in "
                                                         "which precision x - bias is computed: onnxruntime 1.32 "
                                                         "computes it in float32 (2**62 + 1 -> 2**62, bias 0); "
                                                         "reported as undefined"))

    def value_range(self, a, ranges, ins):
        (lo, hi), lam, bias = ranges[0], a.get("lambd", 0.5), a.get("bias", 0.0)
        parts = []
        if lo < -lam:
            parts.append((lo + bias, min(hi, -lam) + bias))
        if hi > lam:
            parts.append((max(lo, lam) - bias, hi - bias))
        if lo <= lam and hi >= -lam:
            parts.append((0.0, 0.0))
        return [(min(p[0] for p in parts), max(p[1] for p in parts))]

    def undefined(self, a, ins, out_types):
        x = ins[0]
        if not x.is_floating_point() and x.numel():
            lam = a.get("lambd", 0.5)
            # not x.abs(): the most negative integer is its own absolute value (it wraps)
            big = ((x > 2**24) | (x < -2**24)) & ((x < -lam) | (x > lam))  # the values x -/+ bias is taken of
            if bool(big.any()):
                return "integer Shrink of a value beyond 2**24: the precision of x - bias (a float) is not defined"
        return super().undefined(a, ins, out_types)


OPS = [Shrink]
