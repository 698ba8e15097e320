"""What the reduce operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import math

import torch

from dlgate import dtypes as dt
from dlgate.ops import losses as L
from dlgate.ops import sym
from dlgate.ops.base import INF_ONLY, OpSpec, Restricted, TensorType
from dlgate.ops.binary._shared import mul0


MAX_RANK = 5


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
    #: Whether noop_with_empty_axes=1 with empty axes is the plain identity here (ReduceSum,
    #: Mean, Max, Min, Prod); for the others onnx.reference applies the element-wise part
    #: (a square, an abs, a log) where ONNX's text says the input is returned.
    noop_identity = False

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

    def _red(self, a, rank: int) -> list:
        if a.get("axes") == []:
            return [] if a.get("noop") else list(range(rank))
        return _norm(a["axes"], rank) if "axes" in a else list(range(rank))

    def infer(self, ins, a):
        x = ins[0]
        return [TensorType(x.dtype, _reduced_shape(x.shape, self._red(a, x.rank), a["keepdims"]))]

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


def _sum(x, dims, keep):
    return torch.sum(x, dims, keepdim=keep, dtype=x.dtype)


def _fmax(x) -> float:
    return float(torch.finfo(x.dtype).max) if x.dtype.is_floating_point else float(torch.iinfo(x.dtype).max)


class ReduceExtremum(Reduce):
    """ReduceMax and ReduceMin: the largest (smallest) element over the axes, computed by
    ``pick`` (``torch.amax`` or ``torch.amin``). Every output value is one of the input's,
    exactly (the reduce counterpart of the binary family's ``Extremum``)."""

    types = dt.NUMERIC + (dt.BOOL,)  # bool from opset 20 (the schema filter applies it)
    noop_identity = True
    pick = None

    def fn(self, x, dims, keep):
        return type(self).pick(x, dims, keepdim=keep)

    keeps_range = True
    nonfinite = INF_ONLY
    exact_values = True
    siblings = "reduce-extremum"


class SquareSum(Restricted, Reduce):
    """Sums of squares: restricted so the sum (and every square) stays finite in the
    input dtype; otherwise backends that accumulate wider (PyTorch) and narrower disagree."""

    can_overflow = True
    out_range = (0.0, float("inf"))

    def losses(self, a, x):
        xd = x.double()
        ss = (xd * xd).sum(self._dims(a, x)) if x.dim() else xd * xd
        return [L.le0(ss - 0.5 * _fmax(x))]


class Arg(OpSpec):
    """ArgMax/ArgMin: int64 indices along ``axis``; ``select_last_index`` picks the last of
    tied extrema (implemented by flipping). Float inputs only: ONNX and PyTorch both define
    tie-breaking, but small random integers tie constantly, and many backends (and GPU
    kernels) do not honour the first/last-index rule, so integer cases would mostly test
    tie-breaking rather than the operator; float ties are rare."""
    types = dt.FLOATS
    dtypes = tuple((t,) for t in dt.FLOATS)
    ranks = (1, 2, 3, 4, 5)
    fn = None

    def sample(self, ctx, ins):
        return {"axis": ctx.axis(ins[0].rank), "keepdims": int(ctx.coin()),
                "select_last_index": int(ctx.coin())}

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

    def infer(self, ins, a):
        x = ins[0]
        ax = a["axis"] % x.rank
        return [TensorType(dt.INT64, _reduced_shape(x.shape, [ax], a["keepdims"]))]

    def onnx_attrs(self, a, b):
        return {"axis": b.opt(a["axis"], 0), "keepdims": b.opt(a["keepdims"], 1),
                "select_last_index": b.opt(a["select_last_index"], 0)}

    def torch(self, a, x):
        ax, keep = a["axis"] % x.dim(), bool(a["keepdims"])
        if not a["select_last_index"]:
            return type(self).fn(x, ax, keepdim=keep)  # first index of ties, as ONNX
        idx = type(self).fn(torch.flip(x, (ax,)), ax, keepdim=keep)
        return (x.shape[ax] - 1) - idx

    jumps = True

    def value_range(self, a, ranges, ins):
        # an index along the axis
        x = ins[0]
        return [(0.0, float(x.shape[a["axis"] % x.rank] - 1))]

    def exact(self, a, exacts, ins):
        # along an axis of size 1 every index is 0
        x = ins[0]
        return 0.0 if x.shape[a["axis"] % x.rank] == 1 else None
