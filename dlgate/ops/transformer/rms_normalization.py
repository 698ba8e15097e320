from __future__ import annotations

import math
from typing import ClassVar

import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.base import OpSpec, TensorType, f32
from dlgate.ops.binary._shared import mul_bounds
from dlgate.ops.transformer._shared import PRECISION, _as, _rms_bound, _w


#: ``stash_type`` values: the same codes.
STASH = PRECISION

#: Scale shapes relative to X: the normalized dims, their last one, a single value, or
#: dims reaching into the non-normalized ones (unidirectional broadcasting).
SCALE_FORMS = ("norm", "norm", "last", "one", "wide", "ones")


class RMSNormalization(OpSpec):
    """ONNX RMSNormalization: over the trailing axes from ``axis`` (negative spellings
    too), ``epsilon`` (cast to the stash type), ``stash_type`` 1 (float32, the default) or
    the input's own type (10 for float16, 11 for float64 and float32 inputs), Scale
    unidirectionally broadcast to X (the normalized dims, their last dim, a single value,
    or a shape reaching into the leading dims). Scale has X's type.

    onnx.reference implements only stash_type 1, and ignores it (statistics in X's own
    type): its result is not consulted for other stash types."""

    onnx_op = "RMSNormalization"
    arity = 2
    min_opset = 23
    ranks = (1, 2, 3, 4, 5)
    dtypes = tuple((t, t) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        x = ins[0]
        stash = {dt.FLOAT16: (1, 1, 10), dt.FLOAT32: (1, 1, 11), dt.FLOAT64: (1, 11, 11)}[x.dtype]
        return {"axis": ctx.axis(x.rank), "epsilon": ctx.choice((f32(1e-5), f32(1e-6), ctx.uniform(1e-6, 1e-1))),
                "stash_type": ctx.choice(stash), "scale_form": ctx.choice(SCALE_FORMS)}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, _scale_shape(a["scale_form"], ins[0].shape, a["axis"]))

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        a = self.sample(ctx, [out])
        return [out, TensorType(out.dtype, _scale_shape(a["scale_form"], out.shape, a["axis"]))], a

    def requires(self, ins, a):
        x, s = ins[0].shape, ins[1].shape
        r = len(x)
        if r < 1 or not -r <= a["axis"] < r or len(s) > r:
            return [False]
        return [sym.Or(d == 1, d == e) for d, e in zip(s, x[r - len(s):])]

    def infer(self, ins, a):
        return [ins[0]]

    def onnx_attrs(self, a, b):
        return {"axis": b.opt(a["axis"], -1), "epsilon": b.opt(a["epsilon"], f32(1e-5)),
                "stash_type": b.opt(a["stash_type"], 1)}

    def torch(self, a, x, scale):
        return rms_norm(x, scale, a["axis"], a["epsilon"], a["stash_type"])

    gaps: ClassVar[tuple] = (
        ("Scale of another float type than X (V != T)", "dlgate draws one float type per node"),
        ("bfloat16 inputs or stash_type 16", "dlgate has no bfloat16 dtype"),
    )

    def reference_defect(self, a, ins, opset):
        if a["stash_type"] != 1:
            return "onnx.reference's RMSNormalization raises NotImplementedError for stash_type != 1"
        if ins[0].dtype == dt.FLOAT64:
            return "onnx.reference computes float64 statistics in float64, not in the float32 stash_type 1 names"
        return None

    def _n(self, a, x: TensorType) -> int:
        return math.prod(x.shape[a["axis"] % x.rank:])

    def value_range(self, a, ranges, ins):
        z = _rms_bound(self._n(a, ins[0]))
        return [mul_bounds(ranges[1], (-z, z))]


# =========================================================================================
# RMSNormalization (opset 23)
# =========================================================================================
def rms_norm(x, scale, axis: int, eps: float, stash: int):
    """The function body: in the stash type, ``X / Sqrt(ReduceMean(X * X) + Cast(eps))``,
    cast back to X's type, times Scale (broadcast) in X's type."""
    t = x.dtype
    st = STASH[stash] if t in (torch.float16, torch.float32, torch.float64) else t
    axes = tuple(range(axis % x.dim(), x.dim()))
    xu = x.to(st)
    sq = (_w(xu) * _w(xu)).to(st)
    mean = _w(sq).mean(dim=axes, keepdim=True).to(st)
    ms = (_w(mean) + _as(eps, st)).to(st)
    rms = _w(ms).sqrt().to(st)
    norm = (_w(xu) / _w(rms)).to(st).to(t)
    return (_w(norm) * _w(scale)).to(t)


def _scale_shape(form: str, x: tuple, axis: int) -> tuple:
    r = len(x)
    ax = axis % r
    if form == "norm":
        return tuple(x[ax:])
    if form == "last":
        return (x[-1],)
    if form == "one":
        return (1,)
    if form == "ones":  # the normalized dims with size-1 dims before them
        return (1,) * ax + tuple(x[ax:])
    # "wide": every dim, the leading ones (before axis) set to 1 except the first
    return tuple(d if (k == 0 or k >= ax) else 1 for k, d in enumerate(x))


OPS = [RMSNormalization]
