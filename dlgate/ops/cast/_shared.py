"""What the cast operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import math

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import losses as L
from dlgate.ops.base import IEEE, OpSpec, TensorType


#: Open interval of float values whose truncation toward zero fits each integer type.
INT_RANGE = {dt.INT8: (-129.0, 128.0), dt.UINT8: (-1.0, 256.0),
             dt.INT32: (-2.0 ** 31 - 1, 2.0 ** 31), dt.INT64: (-2.0 ** 63 - 1, 2.0 ** 63)}


def cast_losses(x, to: str) -> list:
    """Float -> integer conversion is defined only when the truncated value fits the target
    (C++ ``static_cast``, which onnxruntime uses, is UB otherwise; PyTorch gives
    platform-dependent results): one loss per bound."""
    src = str(x.dtype).replace("torch.", "")
    if not dt.is_float(src) or to not in INT_RANGE:
        return []
    lo, hi = INT_RANGE[to]
    x = torch.nan_to_num(x.double(), nan=hi + 1.0, posinf=float("inf"), neginf=float("-inf"))  # NaN violates
    return [L.lt0(x - hi), L.lt0(lo - x)]


def cast_undefined(x, to: str) -> str | None:
    """Conversion of ``x`` (a PyTorch tensor) to ``to`` is undefined only from a floating-point
    type to an integer one, for NaN, Inf or a truncated value out of range. The ONNX Cast
    specification defines every other case: an integer narrowed to a smaller integer type
    discards its high bits (int16 200 -> int8 -56), a floating-point value out of a float
    type's range becomes +/-inf, anything becomes a bool by comparison with zero. Excusing
    those would hide wrong answers."""
    if to not in dt.INTS or not x.is_floating_point():
        return None
    info = torch.iinfo(dt.torch_dtype(to))
    v = x.double()
    if not torch.isfinite(v).all():
        return f"converts NaN or Inf to {to}"
    v = torch.trunc(v)
    if v.numel() and (v.max().item() > info.max or v.min().item() < info.min):
        return f"converts values outside [{info.min}, {info.max}] to {to}"
    return None


def cast_undefined_elements(x, to: str):
    """The elements of ``x`` whose conversion to ``to`` is undefined (see ``cast_undefined``),
    a boolean NumPy mask."""
    if to not in dt.INTS or not x.is_floating_point():
        return np.zeros(tuple(x.shape), bool)
    info = torch.iinfo(dt.torch_dtype(to))
    v = x.double()
    t = torch.trunc(torch.nan_to_num(v, nan=0.0, posinf=0.0, neginf=0.0))
    return (~torch.isfinite(v) | (t > info.max) | (t < info.min)).numpy()


def cast_nonfinite(src: str, to: str) -> frozenset:
    """The special values whose conversion from ``src`` to ``to`` the ONNX Cast
    specification defines: between float types NaN stays NaN and +/-Inf (or a value out
    of the target's range) is +/-Inf; to bool, everything but +/-0.0 is True. To an
    integer type none is defined."""
    return IEEE if dt.is_float(src) and (dt.is_float(to) or to == dt.BOOL) else frozenset()


def to_dtype(x, to):
    """ONNX Cast of ``x`` to ``to`` (a dtype name or a torch dtype). PyTorch's ``.to()``
    matches it (integers wrap, floats overflow to inf, float -> int truncates) except from
    float64 to float16, which it rounds twice, through float32: a value a hair below
    65520 becomes inf instead of 65504, and midpoints between float16 neighbours round the
    wrong way. There the float32 step rounds to odd, which makes the second rounding exact."""
    to = dt.torch_dtype(to) if isinstance(to, str) else to
    if x.dtype == torch.float64 and to == torch.float16:
        return _to_float32_odd(x).to(to)
    return x.to(to)


def _to_float32_odd(x):
    """float64 -> float32 rounded to odd: an inexact result takes, of the two float32
    neighbours of ``x``, the one whose last bit is odd. The correction is added as a
    constant, so the input search keeps the gradient of ``.to()``."""
    xd = x.detach()
    near = xd.to(torch.float32)
    fix = (near.double() != xd) & ((near.view(torch.int32) & 1) == 0) & torch.isfinite(near)
    inf = near.new_tensor(math.inf)
    toward = torch.nextafter(near, torch.where(xd > near.double(), inf, -inf))
    y = x.to(torch.float32)
    return torch.where(fix, y + (toward - near), y)  # where, not + 0: -0.0 keeps its sign


class SameType(OpSpec):
    """One input, output of the same type; the sampled attributes do not depend on dims."""

    def backward(self, ctx, out):
        if (out.dtype,) not in self.dtypes:
            return None
        return [out], self.sample(ctx, [out])

    def infer(self, ins, a):
        return [TensorType(ins[0].dtype, ins[0].shape)]


#: Bytes per element of each dtype (ONNX stores bool in one byte).
WIDTH = {dt.INT8: 1, dt.UINT8: 1, dt.BOOL: 1, dt.FLOAT16: 2, dt.INT32: 4, dt.FLOAT32: 4, dt.INT64: 8,
         dt.FLOAT64: 8}
