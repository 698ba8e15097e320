"""Reductions (ReduceSum, ReduceMax, ...) and ArgMax/ArgMin.

Attributes of the Reduce* operators: ``keepdims`` (0/1) and ``axes``, a list of distinct
axes (some spelled negatively); ``axes`` absent means "reduce over every axis" (ONNX's
behaviour when the axes are omitted and ``noop_with_empty_axes`` is 0). The axes are an
attribute before the opset where they became an input (ReduceSum: 13, the others: 18) and
a constant int64 input from then on; the lowering picks the spelling from ``b.opset``.

Every shape choice depends only on the (concrete) rank, so ``sample``/``infer`` are the
same on concrete and symbolic contexts; ``backward`` inverts them directly (inserting
reduced dims of random size), so z3 is only a fallback.
"""
from __future__ import annotations

import math
import sys

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec import sym
from dlgate.spec.base import IEEE, INF_ONLY, UNBOUNDED, OpSpec, TensorType, abs_bounds
from dlgate.spec.binary import mul0

MAX_RANK = 5
INF = float("inf")


def _norm(axes, rank: int) -> list:
    return sorted(ax % rank if rank else ax for ax in axes)


def _spell(ctx, axes: list, rank: int) -> list:
    """Non-negative axes, some spelled negatively."""
    return [ax - rank if ctx.coin(0.3) else ax for ax in axes]


def _reduced_shape(shape: tuple, red: list, keep: int) -> tuple:
    if keep:
        return tuple(1 if i in red else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in red)


def _inverse(ctx, out: TensorType, k_max: int, one_axis: bool):
    """Input shape, reduced (non-negative) axes and keepdims producing ``out``, or None.

    keepdims=1 widens some size-1 dims of ``out``; keepdims=0 inserts new dims.
    """
    r = out.rank
    ones = [i for i, d in enumerate(out.shape) if d == 1]
    can_keep = bool(ones) or (r == 0 and not one_axis)
    can_drop = r + 1 <= min(ctx.limits.max_rank, MAX_RANK)
    if not (can_keep or can_drop):
        return None
    keep = int(ctx.coin()) if (can_keep and can_drop) else int(can_keep)
    budget = ctx.limits.max_elems // max(1, sym.prod(out.shape))
    if keep:
        k = 1 if one_axis else ctx.rng.randint(min(1, len(ones)), len(ones))
        red = sorted(ctx.rng.sample(ones, k))
        rank = r
    else:
        hi = 1 if one_axis else min(k_max, min(ctx.limits.max_rank, MAX_RANK) - r)
        k = ctx.rng.randint(1, hi)
        rank = r + k
        red = sorted(ctx.rng.sample(range(rank), k))
    dims, it = [], iter(out.shape)
    for i in range(rank):
        if i in red:
            d = ctx.dim(max(1, budget))
            budget //= d
            dims.append(d)
            if keep:
                next(it)
        else:
            dims.append(next(it))
    return tuple(dims), red, keep


class Reduce(OpSpec):
    """``y = reduce(x, axes)``; ``axes_input_from`` is the opset where axes became an input."""

    types: tuple = dt.FLOATS
    axes_input_from: int = 18

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.dtypes = tuple((t,) for t in cls.types)

    # -- generation ------------------------------------------------------------------
    def sample(self, ctx, ins):
        r = ins[0].rank
        a = {"keepdims": int(ctx.coin())}
        if r > 0 and not ctx.coin(0.2):
            a["axes"] = _spell(ctx, ctx.axes(r, 1), r)
        if r > 0 and ctx.opset >= self.axes_input_from and ctx.degenerate_draw():
            # an empty axes input: every axis (noop_with_empty_axes 0), or none at all (1:
            # the identity, drawn only where ONNX's text and its reference agree on it)
            a = {"keepdims": a["keepdims"], "axes": [], "noop": int(self.noop_identity and ctx.coin())}
        return a

    #: Whether noop_with_empty_axes=1 with empty axes is the plain identity here (ReduceSum,
    #: Mean, Max, Min, Prod); for the others onnx.reference applies the element-wise part
    #: (a square, an abs, a log) where ONNX's text says the input is returned.
    noop_identity = False

    def _red(self, a, rank: int) -> list:
        if a.get("axes") == []:
            return [] if a.get("noop") else list(range(rank))
        return _norm(a["axes"], rank) if "axes" in a else list(range(rank))

    def infer(self, ins, a):
        x = ins[0]
        return [TensorType(x.dtype, _reduced_shape(x.shape, self._red(a, x.rank), a["keepdims"]))]

    def backward(self, ctx, out):
        types = [t for t in self.types if t in ctx.dtypes]
        if out.dtype not in types:
            return None
        res = _inverse(ctx, out, MAX_RANK, one_axis=False)
        if res is None or len(res[0]) not in self.ranks:
            return None
        shape, red, keep = res
        a = {"keepdims": keep}
        if len(red) < len(shape) or (shape and ctx.coin(0.5)):
            a["axes"] = _spell(ctx, red, len(shape))
        return [TensorType(out.dtype, shape)], a

    def backward_ranks(self, out):
        return tuple(r for r in range(out.rank, MAX_RANK + 1) if r in self.ranks)

    # -- materialization ----------------------------------------------------------------
    def onnx(self, b, a, xs, ys):
        keep = b.opt(a["keepdims"], 1)
        axes = a.get("axes")
        if b.opset < self.axes_input_from:
            b.node(self.onnx_op, xs, ys, axes=axes, keepdims=keep)
            return
        ins = list(xs)
        if axes is not None:
            ins.append(b.ints(axes, hint="axes"))
        elif b.rng.random() < 0.3:  # an empty axes input also means "all axes"
            ins.append(b.ints([], hint="axes"))
        b.node(self.onnx_op, ins, ys, keepdims=keep, noop_with_empty_axes=b.opt(a.get("noop", 0), 0))

    def _dims(self, a, x) -> tuple:
        return tuple(self._red(a, x.dim()))

    def _count(self, a, x: TensorType) -> int:
        """How many elements one output value combines."""
        n = 1
        for d in self._red(a, x.rank):
            n *= x.shape[d]
        return n

    def _sum_bounds(self, a, r: tuple, x: TensorType) -> tuple:
        """Bounds on a sum of ``_count`` terms each within ``r``."""
        n = self._count(a, x)
        return (mul0(n, r[0]), mul0(n, r[1]))

    def exact(self, a, exacts, ins):
        # over one element per output the reduction maps each element on its own
        # (reduced axes all of size 1): an exact input value maps to an exact output value
        x = ins[0]
        if not exacts or exacts[0] is None or x.dtype == dt.BOOL or self._count(a, x) != 1:
            return None
        try:
            e = torch.tensor(exacts[0], dtype=dt.torch_dtype(x.dtype))
        except (RuntimeError, OverflowError):
            return None
        if float(e) != exacts[0]:
            return None  # not a value this dtype holds
        with torch.no_grad():
            v = float(self.fn0(a, e))
        return v if math.isfinite(v) else None

    def torch(self, a, x):
        dims = self._dims(a, x)
        if a.get("noop") and a.get("axes") == []:
            return x.clone()  # noop_with_empty_axes: the input, unreduced
        if x.dim() == 0 or not dims:
            return self.fn0(a, x)
        return self.fn(x, dims, bool(a["keepdims"]))

    def fn0(self, a, x):
        """The reduction of a rank-0 tensor (over no axis: the element itself)."""
        return self.fn(x.reshape(1), (0,), False).reshape(())

    def fn(self, x, dims, keep):
        raise NotImplementedError


def _sum(x, dims, keep):
    return torch.sum(x, dims, keepdim=keep, dtype=x.dtype)


def _fmax(x) -> float:
    return float(torch.finfo(x.dtype).max) if x.dtype.is_floating_point else float(torch.iinfo(x.dtype).max)


class ReduceSum(Reduce):
    keeps_integers = True
    can_overflow = True
    onnx_op = "ReduceSum"
    noop_identity = True
    types = dt.FLOATS + dt.COMMON_INTS
    axes_input_from = 13

    def value_range(self, a, ranges, ins):
        # n terms each within [lo, hi] sum to within [n lo, n hi]
        return [self._sum_bounds(a, ranges[0], ins[0])]

    def fn(self, x, dims, keep):
        return _sum(x, dims, keep)

    def input_span(self, a, i, span, ins):
        n = self._count(a, ins[0])
        return (span[0] / n, span[1] / n)  # n terms, each within 1/n of the span


class ReduceMean(Reduce):
    """Floats only: ONNX leaves the rounding of integer means to the backend."""

    keeps_range = True
    onnx_op = "ReduceMean"
    noop_identity = True

    def fn(self, x, dims, keep):
        return torch.mean(x, dims, keepdim=keep)


class ReduceMax(Reduce):
    keeps_range = True
    nonfinite = INF_ONLY
    onnx_op = "ReduceMax"
    noop_identity = True
    exact_values = True
    siblings = "reduce-extremum"
    types = dt.NUMERIC + (dt.BOOL,)  # bool from opset 20 (the schema filter applies it)

    def fn(self, x, dims, keep):
        return torch.amax(x, dims, keepdim=keep)


class ReduceMin(Reduce):
    keeps_range = True
    nonfinite = INF_ONLY
    onnx_op = "ReduceMin"
    noop_identity = True
    exact_values = True
    siblings = "reduce-extremum"
    types = dt.NUMERIC + (dt.BOOL,)

    def fn(self, x, dims, keep):
        return torch.amin(x, dims, keepdim=keep)


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


class ReduceProd(Reduce):
    """Floats only: integer products of a few dozen elements overflow (undefined in C)."""
    keeps_integers = True

    can_overflow = True
    nonfinite = IEEE  # the sequential IEEE product; ``undefined`` names the orders that differ
    onnx_op = "ReduceProd"
    noop_identity = True

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


class ReduceL1(Reduce):
    keeps_integers = True
    can_overflow = True
    out_range = (0.0, float("inf"))
    onnx_op = "ReduceL1"
    types = dt.FLOATS + dt.COMMON_INTS

    def value_range(self, a, ranges, ins):
        # n terms |x| each within [min|x|, max|x|]
        return [self._sum_bounds(a, abs_bounds(ranges[0]), ins[0])]

    def fn(self, x, dims, keep):
        return _sum(x.abs(), dims, keep)

    def input_span(self, a, i, span, ins):
        lo, hi = span
        n = self._count(a, ins[0])
        return (max(lo, 0.0) / n, hi / n) if hi > 0 else None


class SquareSum(Reduce):
    """Sums of squares: restricted so the sum (and every square) stays finite in the
    input dtype; otherwise backends that accumulate wider (PyTorch) and narrower disagree."""

    can_overflow = True
    out_range = (0.0, float("inf"))
    restricted = True

    def losses(self, a, x):
        xd = x.double()
        ss = (xd * xd).sum(self._dims(a, x)) if x.dim() else xd * xd
        return [L.le0(ss - 0.5 * _fmax(x))]


class ReduceSumSquare(SquareSum):
    """No int32: onnx.reference's ReduceSumSquare promotes int32 to int64 (np.sum)."""
    keeps_integers = True

    onnx_op = "ReduceSumSquare"
    types = dt.FLOATS + (dt.INT64,)

    def value_range(self, a, ranges, ins):
        # n terms x^2 each within [min|x|^2, max|x|^2]
        lo, hi = abs_bounds(ranges[0])
        return [self._sum_bounds(a, (lo * lo, hi * hi), ins[0])]

    def fn(self, x, dims, keep):
        return _sum(x * x, dims, keep)

    def input_span(self, a, i, span, ins):
        lo, hi = span
        n = self._count(a, ins[0])
        return (math.sqrt(max(lo, 0.0) / n), math.sqrt(hi / n)) if hi > 0 else None


class ReduceL2(SquareSum):
    """Floats only: the square root of an integer sum truncates differently per backend."""

    onnx_op = "ReduceL2"

    def value_range(self, a, ranges, ins):
        # sqrt of n terms x^2 each within [min|x|^2, max|x|^2]: sqrt(n) * [min|x|, max|x|]
        lo, hi = abs_bounds(ranges[0])
        n = math.sqrt(self._count(a, ins[0]))
        return [(mul0(n, lo), mul0(n, hi))]

    def fn(self, x, dims, keep):
        return torch.sqrt(_sum(x * x, dims, keep))

    def input_span(self, a, i, span, ins):
        lo, hi = span
        n = math.sqrt(self._count(a, ins[0]))
        return (max(lo, 0.0) / n, hi / n) if hi > 0 else None


class ReduceLogSum(Reduce):
    """Floats only; restricted to a positive sum (log of a non-positive sum is -inf/NaN)."""

    onnx_op = "ReduceLogSum"
    restricted = True

    def input_range(self, a, i):
        return (0.1, 4.0)

    def input_possible(self, a, i, r, t):
        return r[1] > 0  # a positive sum needs some positive element

    def value_range(self, a, ranges, ins):
        # log of ReduceSum's bounds; a sum never positive has no finite logarithm at all
        lo, hi = self._sum_bounds(a, ranges[0], ins[0])
        if hi <= 0:
            return [UNBOUNDED]
        return [(math.log(lo) if lo > 0 else -INF, math.log(hi))]

    def fn(self, x, dims, keep):
        return torch.log(_sum(x, dims, keep))

    def losses(self, a, x):
        s = x.double().sum(self._dims(a, x)) if x.dim() else x.double()
        return [L.gt0(s)]

    def input_span(self, a, i, span, ins):
        # n positive terms summing to within exp(span)
        n = self._count(a, ins[0])
        return (math.exp(min(span[0], 700.0)) / n, math.exp(min(span[1], 700.0)) / n)


class ReduceLogSumExp(Reduce):
    """Floats only; restricted so that sum(exp(x)) itself is finite, since ONNX defines the
    operator as log(sum(exp(x))) and a backend may compute it without the max shift."""

    onnx_op = "ReduceLogSumExp"
    restricted = True
    ranks = (1, 2, 3, 4, 5)  # onnx.reference's ReduceLogSumExp crashes on rank-0 inputs

    def fn(self, x, dims, keep):
        return torch.logsumexp(x, dims, keepdim=keep)

    def value_range(self, a, ranges, ins):
        # n exp(lo) <= sum(exp(x)) <= n exp(hi): logsumexp(x) lies in [lo, hi] + log(n)
        lo, hi = ranges[0]
        n = self._count(a, ins[0])
        return [(lo + math.log(n), hi + math.log(n))]

    def losses(self, a, x):
        xd = x.double()
        lse = torch.logsumexp(xd, self._dims(a, x)) if x.dim() else xd
        return [L.le0(lse - L.log_max(x))]

    def input_span(self, a, i, span, ins):
        # n terms within [lo - log n, hi - log n] give a log-sum-exp within [lo, hi]
        d = math.log(self._count(a, ins[0]))
        return (span[0] - d, span[1] - d)

    #: exp in float64 (the opset-18 function body casts to double first) overflows to inf for
    #: a log-sum-exp above this, and every term underflows to 0 below the other
    DOUBLE_LSE_MAX, DOUBLE_EXP_MIN = math.log(sys.float_info.max), -745.13

    def undefined(self, a, ins, out_types):
        x = ins[0].detach().double()
        if not x.numel() or not x.dim():
            return None
        dims = self._dims(a, x)
        lse, top = (torch.logsumexp(x, dims), x.amax(dim=dims)) if dims else (x, x)
        finite = torch.isfinite(lse)
        if bool((finite & ((lse > self.DOUBLE_LSE_MAX) | (top < self.DOUBLE_EXP_MIN))).any()):
            return ("log(sum(exp(x))) overflows (or underflows) even in float64: ONNX's definition (its function "
                    "body exponentiates in double without shifting by the max) gives +/-inf there, an implementation "
                    "that shifts gives the value")
        return None


class Arg(OpSpec):
    """ArgMax/ArgMin: int64 indices along ``axis``; ``select_last_index`` picks the last of
    tied extrema (implemented by flipping). Float inputs only: ONNX and PyTorch both define
    tie-breaking, but small random integers tie constantly, and many backends (and GPU
    kernels) do not honour the first/last-index rule, so integer cases would mostly test
    tie-breaking rather than the operator; float ties are rare."""
    jumps = True

    types = dt.FLOATS
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (1, 2, 3, 4, 5)
    fn = None

    def sample(self, ctx, ins):
        return {"axis": ctx.axis(ins[0].rank), "keepdims": int(ctx.coin()),
                "select_last_index": int(ctx.coin())}

    def infer(self, ins, a):
        x = ins[0]
        ax = a["axis"] % x.rank
        return [TensorType(dt.INT64, _reduced_shape(x.shape, [ax], a["keepdims"]))]

    def backward(self, ctx, out):
        types = [t for t in self.types if t in ctx.dtypes]
        if out.dtype != dt.INT64 or not types:
            return None
        res = _inverse(ctx, out, 1, one_axis=True)
        if res is None:
            return None
        shape, red, keep = res
        ax = red[0] - len(shape) if ctx.coin(0.3) else red[0]
        return ([TensorType(ctx.choice(types), shape)],
                {"axis": ax, "keepdims": keep, "select_last_index": int(ctx.coin())})

    def backward_ranks(self, out):
        return (out.rank, out.rank + 1)

    def value_range(self, a, ranges, ins):
        # an index along the axis
        x = ins[0]
        return [(0.0, float(x.shape[a["axis"] % x.rank] - 1))]

    def exact(self, a, exacts, ins):
        # along an axis of size 1 every index is 0
        x = ins[0]
        return 0.0 if x.shape[a["axis"] % x.rank] == 1 else None

    def onnx_attrs(self, a, b):
        return {"axis": b.opt(a["axis"], 0), "keepdims": b.opt(a["keepdims"], 1),
                "select_last_index": b.opt(a["select_last_index"], 0)}

    def torch(self, a, x):
        ax, keep = a["axis"] % x.dim(), bool(a["keepdims"])
        if not a["select_last_index"]:
            return type(self).fn(x, ax, keepdim=keep)  # first index of ties, as ONNX
        idx = type(self).fn(torch.flip(x, (ax,)), ax, keepdim=keep)
        return (x.shape[ax] - 1) - idx


class ArgMax(Arg):
    onnx_op = "ArgMax"
    siblings = "arg-extremum"
    fn = torch.argmax


class ArgMin(Arg):
    onnx_op = "ArgMin"
    siblings = "arg-extremum"
    fn = torch.argmin


OPS = [ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
       ReduceLogSumExp, ReduceSumSquare, ReduceLogSum, ArgMax, ArgMin]
