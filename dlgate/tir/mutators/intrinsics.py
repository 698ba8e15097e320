"""Tensor-compiler-specific intrinsics across dtypes: a value is moved into float16,
bfloat16 or int8 (or float32), put through an intrinsic of that family (``exp``, ``tanh``,
``sqrt`` of a magnitude, ``popcount``...), and cast back to the dtype its hole needs, as Tzer
wraps opaque intrinsics in casts. A float value bound for int8 is clamped to int8's range
first (a float-to-int conversion out of range is undefined)."""
from __future__ import annotations

from dlgate.tir import ast as A
from dlgate.tir.mutators import base as B

NAME = "intrinsics"
FAMILY = "specific"


def apply(func, rng, ctx: B.Context):
    t = B.tirx()
    values = B.value_sites(A.sites(func))
    if not values:
        return None
    s = rng.choice(values)
    d = A.dtype_of(s.node)
    via = rng.choice(B.LOW_PRECISION + ("float32",))
    x = s.node
    if B.is_float(d) and B.is_int(via):
        x = t.Max(t.Min(x, t.FloatImm(d, 127.0)), t.FloatImm(d, -128.0))
    elif B.is_int(d) and B.is_int(via) and d not in ("int8", "uint8"):
        x = t.FloorMod(x, t.IntImm(d, 128))  # into int8's range without wrapping
    inner = B.unary_intrinsic(rng, B.cast(x, via), via)
    return A.replace(func, s.path, B.cast(inner, d))


def changed(before: dict, after: dict) -> bool:
    """More intrinsic calls than before."""
    return sum(after["intrinsics"].values()) > sum(before["intrinsics"].values())
