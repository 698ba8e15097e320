"""What the norm operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import math

import torch

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType, f32
from dlgate.ops.binary._shared import mul_bounds
from dlgate.ops.linalg.gemm import plus_bounds


EPS_DEFAULT = f32(1e-5)
INF = float("inf")


def _affine(z: float, s: tuple, b: tuple) -> tuple:
    """Bounds on ``scale * z + bias`` for ``|z| <= z``, scale and bias within ``s``, ``b``."""
    return plus_bounds(mul_bounds(s, (-z, z)), b)


def _zmax(n: int, eps: float, r: tuple, u: float, two_pass: bool = False) -> float:
    """A bound on |z|, z = (x - mean) / sqrt(var + eps) over n values within ``r``, as
    computed with unit roundoff ``u``. In real numbers |z| <= sqrt(n - 1) (all values but
    one equal); in floats the mean is off by up to delta and the variance by up to err
    (first-order bounds of recursive summation, |x| <= big), which large values make
    dominate (LayerNormalization of a row of 1e6 +- 1 ulp gives |z| ~ 1e6), so
    |z| <= (sqrt(n - 1) + delta / sqrt(eps)) / sqrt(1 - err / eps) while err < eps. A
    two-pass variance (mean of (x - computed mean)^2) caps |z| at sqrt(n) by Cauchy-Schwarz
    whatever the values. Over one value z is exactly 0."""
    if n == 1:
        return 0.0
    big = max(abs(r[0]), abs(r[1]))
    err, delta = 4 * (n + 1) * u * big * big, (n + 3) * u * big
    z = (math.sqrt(n - 1) + delta / math.sqrt(eps)) / math.sqrt(1 - err / eps) if err < eps else INF
    return min(z, math.sqrt(n)) if two_pass else z


def _unit(dtype: str) -> float:
    """The unit roundoff of the statistics' type (float16 is computed in float32)."""
    return 2.0 ** -53 if dtype == dt.FLOAT64 else 2.0 ** -24


def _eps(ctx) -> float:
    """An epsilon: the default a third of the time; under the degenerate regime, half the
    time more (then spelled out, see ``Ctx.or_default``)."""
    return ctx.or_default(ctx.choice((EPS_DEFAULT, EPS_DEFAULT, f32(1e-3), f32(1e-2), ctx.uniform(1e-6, 1e-1))),
                          EPS_DEFAULT)


def _chan(v, rank):
    """A per-channel vector reshaped to broadcast over axis 1 of a rank-``rank`` tensor (a
    1-D tensor has one channel, ONNX's "C is assumed to be 1": the [1] vector broadcasts)."""
    if rank == 1:
        return v.reshape(-1)
    return v.reshape((1, -1) + (1,) * (rank - 2))


def affine_span(i: int, span: tuple, n: int, has_bias: bool = True) -> tuple | None:
    """Starting ranges for ``scale * z + bias`` to land in ``span`` (finite), z standardized
    over ``n`` elements (|z| <= sqrt(n - 1)): the bias within the middle half of the span
    and the scale small enough that |scale * z| stays within a quarter of its width; without
    a bias the span must hold 0. None for the normalized input itself (any value will do)."""
    if i == 0:
        return None
    lo, hi = span
    zb = math.sqrt(max(n - 1, 1))
    if not has_bias:
        return (-min(-lo, hi) / zb, min(-lo, hi) / zb) if lo <= 0 <= hi else None
    c, q = (lo + hi) / 2, (hi - lo) / 4
    return (-q / zb, q / zb) if i == 1 else (c - q, c + q)


class Norm(OpSpec):
    """Y has X's type; the further inputs are per-channel vectors of size C = X.shape[1]."""

    ranks = (2, 3, 4, 5)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "dtypes" not in cls.__dict__:
            cls.dtypes = tuple((t,) * cls.arity for t in dt.FLOATS)

    def sample(self, ctx, ins):
        return {"epsilon": _eps(ctx)}

    def param_shape(self, x, a):
        return (x[1],)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self.param_shape(ins[0].shape, a))

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        a = self.sample(ctx, [out])
        shape = self.param_shape(out.shape, a)
        return [out] + [TensorType(out.dtype, shape) for _ in range(self.arity - 1)], a

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


def _wide(x):
    """float16 is computed in float32 and rounded once; other types in their own."""
    return x.float() if x.dtype == torch.float16 else x
