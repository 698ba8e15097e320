from __future__ import annotations

import math

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import IEEE, abs_bounds
from dlgate.ops.reduce._shared import Reduce


class ReduceProd(Reduce):
    """Floats only: integer products of a few dozen elements overflow (undefined in C)."""
    onnx_op = "ReduceProd"
    noop_identity = True

    keeps_integers = True

    can_overflow = True
    nonfinite = IEEE  # the sequential IEEE product; ``undefined`` names the orders that differ

    def value_range(self, a, ranges, ins):
        # a product of n factors within [lo, hi]
        lo, hi = ranges[0]
        n = self._count(a, ins[0])
        with np.errstate(over="ignore"):
            if lo >= 0:
                return [(float(np.float64(lo) ** n), float(np.float64(hi) ** n))]
            m = float(np.float64(max(-lo, abs(hi))) ** n)
        return [(-m, m)]

    def fn(self, x, dims, keep):
        # The input search differentiates: torch.prod there, the exact order everywhere else.
        return _axis_prod(x, dims, keep) if x.requires_grad else _sequential_prod(x, dims, keep)

    def undefined(self, a, ins, out_types):
        """ONNX leaves the order of multiplication open. Where some order's partial products
        overflow (and a zero or the small factors would have brought the product back) or
        underflow (and the large factors would have), orders differ: 0 or NaN, inf or a
        finite value, 0 or a finite value."""
        why = super().undefined(a, ins, out_types)
        if why or not ins[0].is_floating_point() or not ins[0].numel():
            return why
        info = torch.finfo(dt.torch_dtype(out_types[0].dtype))
        x = ins[0].double()
        dims = self._red(a, x.dim())
        mag = x.abs()
        finite = torch.isfinite(x).all(dim=dims) if dims else torch.isfinite(x)
        logs = torch.log(mag.clamp_min(float(info.tiny) * 2.0**-60))
        big = torch.where(mag > 1, logs, torch.zeros_like(logs)).sum(dim=dims)
        small = torch.where((mag < 1) & (mag > 0), logs, torch.zeros_like(logs)).sum(dim=dims)
        zero = (mag == 0).any(dim=dims) if dims else mag == 0
        top, bottom = math.log(float(info.max)), math.log(float(info.smallest_normal) * float(info.eps))
        over = (big > top) & (zero | (big + small <= top))
        under = (small < bottom) & ~zero & (big + small >= bottom)
        bad = finite & (over | under)
        # an infinity times factors whose partial product may underflow to 0: inf or NaN
        nan = torch.isnan(x).any(dim=dims) if dims else torch.isnan(x)
        if bool((~finite & ~nan & ~zero & (small < bottom)).any()):
            return (f"ReduceProd in {out_types[0].dtype}: an infinity among factors whose partial products may "
                    "underflow to 0 (inf, or inf * 0 = NaN): the order of multiplication, which ONNX leaves open, decides")
        if bool(bad.any()):
            return (f"ReduceProd in {out_types[0].dtype}: the order of multiplication, which ONNX leaves open, "
                    f"decides whether partial products {'overflow' if bool((finite & over).any()) else 'underflow'}")
        return None

    def input_span(self, a, i, span, ins):
        # n factors within the n-th roots of a positive span (or of [0, hi])
        lo, hi = span
        if hi <= 0:
            return None
        n = self._count(a, ins[0])
        return (max(lo, 0.0) ** (1.0 / n), hi ** (1.0 / n))

    def input_possible(self, a, i, r, t):
        # the smallest product magnitude the bounds allow must be finite in the dtype
        lo, hi = abs_bounds(r)
        with np.errstate(over="ignore"):
            return lo == 0 or bool(np.isfinite(np.asarray(lo, dtype=dt.NUMPY[t.dtype]) ** self._count(a, t)))


def _axis_prod(x, dims, keep):
    """``torch.prod`` axis by axis: fast and differentiable, but in its own order."""
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, d, keepdim=True)
    return x if keep else x.reshape([s for i, s in enumerate(x.shape) if i not in dims])


def _sequential_prod(x, dims, keep):
    """The product over ``dims`` taken one element at a time in row-major order, each step
    rounded to the tensor's dtype (IEEE arithmetic), as onnx.reference and TVM compute
    float32 and float64 products (onnxruntime groups some rows otherwise). ``torch.prod``
    groups the factors its own way (axis by axis, vector lanes), so where a partial product
    overflows to inf and then meets a zero (NaN), or underflows to 0 and then meets a large
    factor, it can answer 0 or a finite value instead."""
    rest = [d for d in range(x.dim()) if d not in dims]
    n = math.prod(x.shape[d] for d in dims)
    rows = x.permute(rest + sorted(dims)).reshape([x.shape[d] for d in rest] + [n])
    p = torch.ones(rows.shape[:-1], dtype=x.dtype, device=x.device)
    for k in range(n):
        p = p * rows[..., k]
    return p.reshape([1 if d in dims else s for d, s in enumerate(x.shape)] if keep else p.shape)


OPS = [ReduceProd]
