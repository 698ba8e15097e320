from __future__ import annotations

import torch

from dlgate import dtypes as dt
from dlgate.ops import losses as L
from dlgate.ops.base import INF_ONLY, Increasing, same_dtype_sigs
from dlgate.ops.cast._shared import SameType


class Clip(Increasing, SameType):
    """``y = min(max(x, min), max)``; ``min``/``max`` each present or absent (attrs keys).

    From opset 11 they are optional scalar inputs of the input's dtype (emitted as
    constants, an absent one as the empty name ""), before that float attributes. We keep
    ``min <= max``: torch.clamp and ONNX both give ``max`` otherwise, but runtimes that
    implement Clip as ``std::clamp`` are undefined there.
    """
    onnx_op = "Clip"
    dtypes = same_dtype_sigs(dt.NUMERIC, 1)

    def sample(self, ctx, ins):
        t = ins[0].dtype
        if dt.is_float(t):
            lo, hi = sorted((ctx.uniform(-4.0, 4.0), ctx.uniform(-4.0, 4.0)))
        else:
            vals = list(range(0, 17) if t == dt.UINT8 else range(-8, 9))
            lo, hi = sorted((ctx.choice(vals), ctx.choice(vals)))
        which = ctx.choice(("none", "min", "max", "both", "both"))
        a = {"dtype": t}  # the bounds' constants take the input's dtype
        if which in ("min", "both"):
            a["min"] = lo
        if which in ("max", "both"):
            a["max"] = hi
        return a

    def onnx(self, b, a, xs, ys):
        if b.opset < 11:
            b.node("Clip", xs, ys, min=a.get("min"), max=a.get("max"))
            return
        t = a["dtype"]
        ins = [xs[0],
               b.const(a["min"], t) if "min" in a else "",
               b.const(a["max"], t) if "max" in a else ""]
        # Trailing absent inputs: sometimes omitted, sometimes spelled "".
        if ins[2] == "" and b.rng.random() < 0.5:
            ins.pop()
            if ins[1] == "" and b.rng.random() < 0.5:
                ins.pop()
        b.node("Clip", ins, ys)

    def torch(self, a, x):
        if x.requires_grad:
            return L.proxy_clip(x, a.get("min"), a.get("max"))
        y = x
        if "min" in a:
            y = torch.maximum(y, torch.tensor(a["min"], dtype=x.dtype))
        if "max" in a:
            y = torch.minimum(y, torch.tensor(a["max"], dtype=x.dtype))
        return y if y is not x else x.clone()

    elementwise = True

    nonfinite = INF_ONLY
    exact_values = True

    def defines_nonfinite(self, a, ins):
        # +/-inf with an absent bound: ONNX's text says the bounds default to
        # numeric_limits::lowest() and max() (onnxruntime gives +/-FLT_MAX), while onnx.reference
        # and TVM leave the infinity; with both bounds given, every reading agrees
        return self.nonfinite if "min" in a and "max" in a else frozenset()


OPS = [Clip]
