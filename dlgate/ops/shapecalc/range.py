from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType


class Range(OpSpec):
    """``start``, ``limit`` and ``delta``: scalar constants of the anchor's dtype (Range's T;
    float16 from opset 27, where ``stash_type`` is defined), positive and negative deltas,
    integral and non-integral float ratios (see ``_range_attrs``). The output has at least
    one element (empty ranges would be zero-sized), and float ranges whose count depends
    on rounding are not generated (runtimes compute the count in different precisions).
    The anchor ``x`` (see the module docstring) is not read."""

    onnx_op = "Range"
    dtypes = tuple((t,) for t in (dt.FLOAT32, dt.FLOAT64, dt.INT32, dt.INT64, dt.FLOAT16))
    ranks = (0, 1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        return _range_attrs(ctx, ctx.int(1, 32), ins[0].dtype)  # never None for n <= 32

    def backward(self, ctx, out):
        if out.rank != 1 or not self.sigs(out.dtype):
            return None
        a = _range_attrs(ctx, out.shape[0], out.dtype)
        if a is None:
            return None
        return [TensorType(out.dtype, ctx.shape(ctx.rng.randint(0, 3)))], a

    def requires(self, ins, a):
        n = _range_count(a["start"], a["limit"], a["delta"])
        return [a["dtype"] == ins[0].dtype, n >= 1, a["delta"] != 0]

    def infer(self, ins, a):
        return [TensorType(a["dtype"], (_range_count(a["start"], a["limit"], a["delta"]),))]

    def onnx(self, b, a, xs, ys):
        t = dt.NUMPY[a["dtype"]]
        ins = [b.const(np.array(a[k], dtype=t)) for k in ("start", "limit", "delta")]
        stash = None
        if a["dtype"] == dt.FLOAT16 and b.opset >= 27:
            stash = b.opt(1, 1)
        b.node("Range", ins, ys, stash_type=stash)

    def torch(self, a, x):
        n = _range_count(a["start"], a["limit"], a["delta"])
        i = torch.arange(n, dtype=torch.float64)
        return (a["start"] + i * a["delta"]).to(dt.torch_dtype(a["dtype"]))

    value_inputs = ()
    gaps: ClassVar[tuple] = (
        ("empty ranges", "zero-sized tensors are not generated"),
        ("float ranges whose count depends on rounding", "runtimes may compute the count in different precisions"),
    )

    def value_range(self, a, ranges, ins):
        n = _range_count(a["start"], a["limit"], a["delta"])
        ends = (a["start"], a["start"] + (n - 1) * a["delta"])
        return [(float(min(ends)), float(max(ends)))]

    def exact(self, a, exacts, ins):
        return float(a["start"])


def _range_attrs(ctx, n: int, dtype: str) -> dict | None:
    """start, limit, delta (of ``dtype``) whose element count is exactly ``n``. Integers:
    limit = start + (n - 1) delta + a remainder in [1, |delta|]. Floats: multiples of 1/16,
    exact in every float type (float16: all below 64 in magnitude), with (limit - start) /
    delta = n - 1/2 (non-integral) or exactly n (the limit excluded), so no rounding can
    change the count."""
    neg = ctx.coin(0.35)
    if dt.is_int(dtype):
        delta = ctx.choice((1, 1, 2, 3, 5))
        start = ctx.rng.randint(-20, 20)
        rem = ctx.rng.randint(1, delta)
        if neg:
            delta, rem = -delta, -rem
        return {"dtype": dtype, "start": start, "limit": start + (n - 1) * delta + rem, "delta": delta}
    q = ctx.choice((1, 2, 3, 4, 5, 8, 12))
    start = ctx.rng.randint(-64, 64) / 8
    if dtype == dt.FLOAT16:
        q = max(1, min(q, int(8 * 48 // (n + 1))))
        start = 0.0 if abs(start) + q * (n + 1) / 8 >= 56 else start
        if abs(start) + q * (n + 1) / 8 >= 64:
            return None
    delta = -q / 8 if neg else q / 8
    limit = start + delta * (n - 1 + ctx.choice((0.5, 1.0)))
    return {"dtype": dtype, "start": start, "limit": limit, "delta": delta}


def _range_count(start, limit, delta) -> int:
    return max(int(np.ceil((limit - start) / delta)), 0)


OPS = [Range]
