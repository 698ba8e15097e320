"""What the transformer operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import math

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops.base import INF
from dlgate.ops.binary._shared import mul_bounds
from dlgate.ops.linalg.gemm import plus_bounds


#: Largest head, sequence and head-size dimension drawn (float16 sums over them stay exact
#: enough for float16 tolerances).
MAX_SEQ = 16
MAX_HEAD = 16
MAX_HEADS = 8
MAX_BATCH = 3
#: ``softmax_precision`` values and the types they name.
PRECISION = {1: torch.float32, 10: torch.float16, 11: torch.float64}

NEG_INF = float("-inf")


def _w(x):
    """The type a node computes in: float16 in float32 (rounded once at the node's end)."""
    return x.float() if x.dtype == torch.float16 else x


def _mm(a, b):
    """ONNX MatMul in the operands' type: float16 accumulated in float32, rounded once."""
    return (_w(a) @ _w(b)).to(a.dtype)


def _as(value: float, t) -> float:
    """A float32 attribute or constant cast to type ``t`` (CastLike / Cast <to=T>)."""
    v = np.float32(value)
    if t == torch.float16:
        return float(np.float16(v))
    return float(v)


def _hull(*rs) -> tuple:
    return (min(r[0] for r in rs), max(r[1] for r in rs))


def _widen(r: tuple, rel: float) -> tuple:
    """Bounds widened by ``rel`` of their magnitude (rounding of a weighted average)."""
    m = max(abs(r[0]), abs(r[1])) * rel
    return (r[0] - m, r[1] + m)


def _ulp_rel(dtype: str) -> float:
    return {dt.FLOAT16: 2.0 ** -8, dt.FLOAT32: 2.0 ** -20, dt.FLOAT64: 2.0 ** -48}.get(dtype, 0.0)


def _dims_ok(shape, want) -> list:
    if len(shape) != len(want):
        return [False]
    return [d == e for d, e in zip(shape, want)]


def _rms_bound(n: int) -> float:
    """|x / rms(x)| <= sqrt(n) over n values (x_i^2 <= the sum of squares), with a margin."""
    return math.sqrt(n) * (1 + 2.0 ** -8)


def rotary_bounds(rx: tuple, rc: tuple, rs: tuple) -> tuple:
    """Bounds of ``c * x1 -+ s * x2`` (and of x itself, for the part not rotated)."""
    cx = mul_bounds(rc, rx)
    sx = mul_bounds(rs, rx)
    neg = (-sx[1], -sx[0])
    return _hull(plus_bounds(cx, neg), plus_bounds(sx, cx), rx)


# =========================================================================================
# Swish (24), SwiGLU (28)
# =========================================================================================
#: x * sigmoid(x) is smallest at x = -1.27846 (-0.278465)
SILU_MIN_X, SILU_MIN = -1.2784645, -0.27846454


def swish(x, alpha: float):
    """The function body: ``X * Sigmoid(CastLike(alpha, X) * X)``, node by node."""
    t = x.dtype
    al = _as(alpha, t)
    ax = (_w(x) * al).to(t)
    return (_w(x) * torch.sigmoid(_w(ax)).to(t)).to(t)


def swish_bounds(alpha: float, r: tuple) -> tuple:
    """Bounds of x * sigmoid(alpha x) (alpha > 0) over ``r``: falls to its minimum at
    x = SILU_MIN_X / alpha, then rises; f(-inf) = 0, f(inf) = inf."""
    lo, hi = r
    xm, fmin = SILU_MIN_X / alpha, SILU_MIN / alpha * (1 + 1e-3)

    def f(v):
        if v == -INF:
            return 0.0
        if v == INF:
            return INF
        return v / (1 + math.exp(min(-alpha * v, 700.0)))

    ends = (f(lo), f(hi))
    low = fmin if lo <= xm <= hi else min(ends)
    return (low - abs(low) * 1e-3, max(ends) + abs(max(ends)) * 1e-3)


# =========================================================================================
# Exporter idioms (opset 13+): several ONNX nodes per spec
# =========================================================================================
def _const(v, dtype: str) -> float:
    """A scalar constant as the lowering writes it (``np.asarray(v, dtype)``), as a float."""
    return float(np.asarray(v, dtype=dt.NUMPY[dtype]))
