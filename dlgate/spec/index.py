"""Indexing and index-like operators: Gather, GatherElements, TopK, CumSum, Trilu, OneHot
and Resize.

Index tensors that must hold in-range values (Gather, GatherElements) are sampled into the
attributes as nested int lists and emitted as int64 constants, so no out-of-range index is
ever generated; those two operators are concrete-only (the index list's shape cannot be a
z3 term) and invert directly in ``backward``. K, axis, k, depth, scales and sizes are
attributes emitted as constants.
"""
from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.spec import sym
from dlgate.spec.base import IEEE, INF, UNBOUNDED, OpSpec, TensorType
from dlgate.spec.binary import mul0

#: Indices lists are kept this small, so attributes stay readable.
MAX_INDICES = 256


def _nested(ctx, shape: tuple, lo: int, hi: int):
    if not shape:
        return ctx.rng.randint(lo, hi)
    return [_nested(ctx, shape[1:], lo, hi) for _ in range(shape[0])]


def _spell(ctx, ax: int, rank: int) -> int:
    return ax - rank if ctx.coin(0.3) else ax


def _budget(ctx, numel) -> int:
    return max(1, ctx.limits.max_elems // max(1, numel))


def _join(r: tuple, v: float) -> tuple:
    """Bounds ``r`` widened to hold the value ``v``."""
    return (min(r[0], v), max(r[1], v))


def _in_dtype(v, dtype: str) -> float:
    """``v`` as the tensor of ``dtype`` stores it (float16 rounds, bool is 0/1)."""
    return float(np.asarray(v, dtype=dt.NUMPY[dtype]))


class Gather(OpSpec):
    """``indices`` of rank 0..2 with values in [-n, n-1] (n = data.shape[axis])."""

    keeps_range = True
    nonfinite = IEEE
    onnx_op = "Gather"
    exact_values = True
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)
    symbolic_ok = False

    def _ishape(self, ctx, q):
        shape = [ctx.rng.randint(1, 6) for _ in range(q)]
        return tuple(shape)

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        n = x.shape[ax]
        ishape = self._ishape(ctx, ctx.choice((0, 1, 1, 2)))
        return {"axis": _spell(ctx, ax, x.rank), "indices": _nested(ctx, ishape, -n, n - 1)}

    def requires(self, ins, a):
        idx = np.asarray(a["indices"])
        n = ins[0].shape[a["axis"] % ins[0].rank]
        return [idx.size <= MAX_INDICES, int(idx.min()) >= -n, int(idx.max()) <= n - 1]

    def infer(self, ins, a):
        s, ax = ins[0].shape, a["axis"] % ins[0].rank
        return [ins[0].with_shape(s[:ax] + np.shape(a["indices"]) + s[ax + 1:])]

    def backward(self, ctx, out):
        R = out.rank
        qs = [q for q in (0, 1, 2) if q <= R and R - q + 1 <= ctx.limits.max_rank]
        if not qs:
            return None
        q = ctx.choice(qs)
        r = R - q + 1
        ax = ctx.rng.randrange(r)
        ishape = tuple(out.shape[ax:ax + q])
        if sym.prod(ishape) > MAX_INDICES:
            return None
        rest = out.shape[:ax] + out.shape[ax + q:]
        n = ctx.rng.randint(1, max(1, min(ctx.limits.max_dim, _budget(ctx, sym.prod(rest)))))
        x = out.with_shape(out.shape[:ax] + (n,) + out.shape[ax + q:])
        return [x], {"axis": _spell(ctx, ax, r), "indices": _nested(ctx, ishape, -n, n - 1)}

    def backward_ranks(self, out):
        return tuple(out.rank - q + 1 for q in (0, 1, 2) if out.rank - q + 1 >= 1)

    def onnx(self, b, a, xs, ys):
        b.node(self.onnx_op, [xs[0], b.const(np.asarray(a["indices"], dtype=np.int64))], ys,
               axis=b.opt(a["axis"], 0))

    def torch(self, a, x):
        ax = a["axis"] % x.dim()
        idx = torch.tensor(a["indices"], dtype=torch.int64)
        idx = torch.where(idx < 0, idx + x.shape[ax], idx)
        y = x.index_select(ax, idx.reshape(-1))
        return y.reshape(x.shape[:ax] + idx.shape + x.shape[ax + 1:])


class GatherArange(OpSpec):
    """``Gather(x, Range(start, Size(t), delta) + shift, axis)``: Gather whose indices a
    Range computes at run time, its limit the element count of a second input ``t``
    (``Size``, which onnxruntime does not fold; only ``t``'s shape matters, not its
    values), as exporters write position ids. ``delta`` >= 1; ``shift`` (usually 0) adds a
    constant to the indices. Every index lies in [-n, n - 1] (n = x.shape[axis]); a
    quarter of the draws start below 0, so the Range crosses 0 (or stays below it) and
    Gather wraps the negative indices from the end of the axis, as ONNX defines."""

    name = "GatherArange"
    keeps_range = True
    nonfinite = IEEE
    onnx_op = "Gather"
    onnx_ops = ("Size", "Range", "Add")
    dtypes = tuple((t, t) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)
    arity = 2
    symbolic_ok = False
    value_inputs = (0,)
    #: Share of draws whose Range starts below 0.
    negative_share = 0.25

    @staticmethod
    def _idx(a) -> list:
        return [v + a["shift"] for v in range(a["start"], a["limit"], a["delta"])]

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        d = x.shape[ax]
        delta = ctx.choice((1, 1, 2, 3))
        if ctx.coin(self.negative_share):  # from -d up to a limit of at least 1
            start = ctx.rng.randint(-d, -1)
            limit = ctx.rng.randint(1, d)
            lo = -d
        else:
            start = ctx.choice((0, 0, ctx.rng.randint(0, d - 1)))
            limit = ctx.rng.randint(start + 1, d)
            lo = 0
        last = start + delta * ((limit - start - 1) // delta)
        shift = 0
        if ctx.coin(0.2):
            shift = ctx.rng.randint(lo - start, d - 1 - last)
        return {"axis": _spell(ctx, ax, x.rank), "start": start, "limit": limit, "delta": delta, "shift": shift,
                "t1": ctx.coin()}

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, (a["limit"],) if a["t1"] else (1, a["limit"]))

    def requires(self, ins, a):
        x, t = ins
        if x.rank < 1 or a["delta"] < 1 or a["limit"] < 1:
            return [False]
        idx = self._idx(a)
        n = x.shape[a["axis"] % x.rank]
        return [t.numel == a["limit"], len(idx) >= 1, len(idx) <= MAX_INDICES, min(idx) >= -n, max(idx) <= n - 1]

    def infer(self, ins, a):
        s, ax = ins[0].shape, a["axis"] % ins[0].rank
        return [ins[0].with_shape(s[:ax] + (len(self._idx(a)),) + s[ax + 1:])]

    def onnx(self, b, a, xs, ys):
        i64 = lambda v: b.const(np.asarray(v, dtype=np.int64))  # noqa: E731
        limit = b.node("Size", [xs[1]], 1)[0]
        r = b.node("Range", [i64(a["start"]), limit, i64(a["delta"])], 1)[0]
        if a["shift"]:
            r = b.node("Add", [r, i64(a["shift"])], 1)[0]
        b.node("Gather", [xs[0], r], ys, axis=b.opt(a["axis"], 0))

    def torch(self, a, x, t):
        ax = a["axis"] % x.dim()
        idx = torch.arange(a["start"], t.numel(), a["delta"], dtype=torch.int64) + a["shift"]
        idx = torch.where(idx < 0, idx + x.shape[ax], idx)  # Gather wraps negative indices
        return x.index_select(ax, idx)


class GatherElements(Gather):
    """``indices`` of the data's shape except along ``axis`` (onnx.reference insists on
    equal sizes elsewhere), values in [-n, n-1]."""

    nonfinite = IEEE
    onnx_op = "GatherElements"
    exact_values = True
    #: np.choose (onnx.reference's implementation) takes at most 63 choices.
    ref_max_n = 63

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        n = x.shape[ax]
        other = sym.prod(x.shape) // n
        m = ctx.rng.randint(1, max(1, min(8, MAX_INDICES // other)))
        ishape = x.shape[:ax] + (m,) + x.shape[ax + 1:]
        return {"axis": _spell(ctx, ax, x.rank), "indices": _nested(ctx, ishape, -n, n - 1)}

    def requires(self, ins, a):
        s, r = ins[0].shape, ins[0].rank
        ishape, ax = np.shape(a["indices"]), a["axis"] % r
        same = len(ishape) == r and all(ishape[i] == s[i] for i in range(r) if i != ax)
        return [same] + super().requires(ins, a)

    def reference_defect(self, a, ins, opset):
        s, ishape = tuple(ins[0].shape), np.shape(a["indices"])
        if a["axis"] == -1 and ishape != s:
            # shape[:dim] + shape[dim + 1:] is the whole shape after shape[:-1] for dim = -1
            return "onnx.reference's GatherElements compares the wrong dims for axis -1 (ValueError)"
        # np.choose fails beyond 63 choices; the fallback is right only for 2-D data,
        # axis 1 and a single index per row.
        if s[a["axis"] % len(s)] > self.ref_max_n and not (len(s) == 2 and a["axis"] == 1 and ishape[1] == 1):
            return "onnx.reference's GatherElements uses np.choose, which takes at most 63 choices"
        return None

    def infer(self, ins, a):
        return [ins[0].with_shape(np.shape(a["indices"]))]

    def backward(self, ctx, out):
        if out.rank < 1 or out.numel > MAX_INDICES:
            return None
        ax = ctx.rng.randrange(out.rank)
        n = ctx.rng.randint(1, max(1, min(ctx.limits.max_dim, _budget(ctx, out.numel // out.shape[ax]))))
        x = out.with_shape(out.shape[:ax] + (n,) + out.shape[ax + 1:])
        return [x], {"axis": _spell(ctx, ax, out.rank), "indices": _nested(ctx, out.shape, -n, n - 1)}

    def backward_ranks(self, out):
        return (out.rank,)

    def torch(self, a, x):
        ax = a["axis"] % x.dim()
        idx = torch.tensor(a["indices"], dtype=torch.int64).reshape(np.shape(a["indices"]))
        idx = torch.where(idx < 0, idx + x.shape[ax], idx)
        return torch.gather(x, ax, idx)


class TopK(OpSpec):
    """``sorted=1`` only (the order of an unsorted result is implementation-defined). Ties
    are defined by ONNX (lower index first), which a stable sort reproduces."""
    keeps_range = True  # the values output; ``value_range`` bounds the indices apart
    jumps = True  # the indices output

    onnx_op = "TopK"
    n_outputs = 2
    dtypes = tuple((t,) for t in dt.NUMERIC)
    ranks = (1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        x = ins[0]
        ax = ctx.rng.randrange(x.rank)
        return {"axis": _spell(ctx, ax, x.rank), "k": ctx.int(1, x.shape[ax]), "largest": int(ctx.coin(0.7))}

    def requires(self, ins, a):
        d = ins[0].shape[a["axis"] % ins[0].rank]
        return [a["k"] >= 1, a["k"] <= d]

    def infer(self, ins, a):
        s = list(ins[0].shape)
        s[a["axis"] % len(s)] = a["k"]
        return [ins[0].with_shape(s), TensorType(dt.INT64, tuple(s))]

    def value_range(self, a, ranges, ins):
        # values are some of the input's; indices point along an axis of size d
        d = ins[0].shape[a["axis"] % ins[0].rank]
        hi = float(d - 1) if not sym.is_sym(d) else INF
        return [tuple(ranges[0]), (0.0, hi)]

    def backward(self, ctx, out):
        if out.rank < 1 or out.dtype not in dt.NUMERIC:
            return None
        ax = ctx.rng.randrange(out.rank)
        k = out.shape[ax]
        d = k + ctx.rng.randint(0, max(0, min(ctx.limits.max_dim, _budget(ctx, out.numel // k) * k) - k))
        x = out.with_shape(out.shape[:ax] + (d,) + out.shape[ax + 1:])
        return [x], {"axis": _spell(ctx, ax, out.rank), "k": k, "largest": int(ctx.coin(0.7))}

    def onnx(self, b, a, xs, ys):
        b.node("TopK", [xs[0], b.ints([a["k"]])], ys, axis=b.opt(a["axis"], -1),
               largest=b.opt(a["largest"], 1), sorted=b.opt(1, 1))

    def torch(self, a, x):
        ax = a["axis"] % x.dim()
        v, i = torch.sort(x, dim=ax, descending=bool(a["largest"]), stable=True)
        return v.narrow(ax, 0, a["k"]), i.narrow(ax, 0, a["k"])


class Same(OpSpec):
    """Output of the input's type and shape."""

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.rank not in self.ranks or not self.sigs(out.dtype):
            return None
        return [out], self.sample(ctx, [out])


def cumulative_onnx(b, op: str, a: dict, xs: list, ys: list) -> None:
    """CumSum or CumProd: the axis as a constant input of either index type."""
    axis = b.const(np.array(a["axis"], dtype=b.rng.choice((np.int64, np.int32))))
    b.node(op, [xs[0], axis], ys, exclusive=b.opt(a["exclusive"], 0), reverse=b.opt(a["reverse"], 0))


def cumulative(a: dict, x, identity, combine):
    """A running ``combine`` along ``a["axis"]`` from ``identity`` (exclusive: each output
    left out of its own term; reverse: from the end), term by term in order, as ONNX's
    CumSum and CumProd define it."""
    ax = a["axis"] % x.dim()
    parts = list(torch.unbind(x, ax))
    order = list(range(len(parts)))[::-1] if a["reverse"] else list(range(len(parts)))
    out = [None] * len(parts)
    acc = identity(parts[0])
    for j in order:
        if a["exclusive"]:
            out[j] = acc
            acc = combine(acc, parts[j])
        else:
            acc = combine(acc, parts[j])
            out[j] = acc
    return torch.stack(out, ax)


class CumSum(Same):
    """Accumulated sequentially in the input's dtype, as the ONNX definition reads (and as
    onnxruntime and onnx.reference do), not with PyTorch's wider accumulator."""
    keeps_integers = True

    can_overflow = True
    onnx_op = "CumSum"
    dtypes = tuple((t,) for t in dt.FLOATS + dt.COMMON_INTS)
    ranks = (1, 2, 3, 4, 5)

    def sample(self, ctx, ins):
        return {"axis": _spell(ctx, ctx.rng.randrange(ins[0].rank), ins[0].rank),
                "exclusive": int(ctx.coin(0.3)), "reverse": int(ctx.coin(0.3))}

    def _terms(self, a, ins):
        """(fewest, most) input elements one output element sums, or None if unknown."""
        n = ins[0].shape[a["axis"] % ins[0].rank]
        if sym.is_sym(n):
            return None
        # inclusive: 1 (the first element) to n; exclusive: 0 (the first) to n - 1
        return (0, n - 1) if a["exclusive"] else (1, n)

    def value_range(self, a, ranges, ins):
        terms = self._terms(a, ins)
        if terms is None:
            return None
        m0, m1 = terms
        lo, hi = ranges[0]

        # a sum of m terms in [lo, hi] lies in [m lo, m hi], for some m in [m0, m1]
        return [(mul0(m0, lo) if lo >= 0 else mul0(m1, lo), mul0(m1, hi) if hi >= 0 else mul0(m0, hi))]

    def exact(self, a, exacts, ins):
        return 0.0 if a["exclusive"] else None  # the first (reverse: last) sum is empty

    def onnx(self, b, a, xs, ys):
        cumulative_onnx(b, "CumSum", a, xs, ys)

    def torch(self, a, x):
        return cumulative(a, x, torch.zeros_like, torch.add)

    def input_span(self, a, i, span, ins):
        # every prefix sums at most n terms within span / n; that stays inside a span
        # holding 0 (an empty or short prefix sums towards 0)
        terms = self._terms(a, ins)
        lo, hi = span
        if terms is None or lo > 0 or hi < 0:
            return None
        return (lo / max(terms[1], 1), hi / max(terms[1], 1))


class Trilu(Same):
    """Keeps ``x[..., i, j]`` where ``j - i >= k`` (upper) or ``j - i <= k`` (lower), writes
    0 elsewhere: the same positions in every matrix."""
    keeps_integers = True

    nonfinite = IEEE
    onnx_op = "Trilu"
    exact_values = True
    min_opset = 14
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (2, 3, 4, 5)

    def sample(self, ctx, ins):
        return {"upper": int(ctx.coin()), "k": ctx.choice((0, 0, ctx.rng.randint(-6, 6)))}

    def zeroed(self, a, ins):
        """("none" | "some" | "all") elements of each matrix written 0, or None if unknown."""
        rows, cols = ins[0].shape[-2:]
        if sym.is_sym(rows) or sym.is_sym(cols):
            return None
        k, dmin, dmax = a["k"], 1 - rows, cols - 1  # j - i spans [1 - rows, cols - 1]
        if a["upper"]:
            return "all" if dmax < k else "some" if dmin < k else "none"
        return "all" if dmin > k else "some" if dmax > k else "none"

    def value_range(self, a, ranges, ins):
        z = self.zeroed(a, ins)
        if z is None:
            return [_join(ranges[0], 0.0)]
        return [{"none": tuple(ranges[0]), "some": _join(ranges[0], 0.0), "all": (0.0, 0.0)}[z]]

    def exact(self, a, exacts, ins):
        z = self.zeroed(a, ins)
        if z in ("some", "all"):
            return 0.0
        return exacts[0] if z == "none" else None  # "none": the output is the input

    def onnx(self, b, a, xs, ys):
        ins = [xs[0]]
        if a["k"] != 0 or b.rng.random() < 0.5:
            ins.append(b.const(np.array(a["k"], dtype=np.int64)))
        b.node("Trilu", ins, ys, upper=b.opt(a["upper"], 1))

    def torch(self, a, x):
        fn = torch.triu if a["upper"] else torch.tril
        if x.dtype == torch.bool:
            return fn(x.to(torch.uint8), a["k"]).to(torch.bool)
        return fn(x, a["k"])


class OneHot(OpSpec):
    """Integer indices from the graph (out-of-range ones give an all-off row, negative ones
    count from the end, both defined by ONNX); depth and [off, on] values are constants.
    Output/depth dtypes are drawn from combinations onnxruntime implements."""

    onnx_op = "OneHot"
    dtypes = ((dt.INT64,), (dt.INT32,))
    ranks = (1, 2, 3)  # ONNX shape inference rejects rank-0 indices
    COMBOS = {dt.INT64: ((dt.INT64, dt.INT64), (dt.FLOAT32, dt.INT64), (dt.INT32, dt.FLOAT32),
                         (dt.FLOAT32, dt.FLOAT32), (dt.FLOAT32, dt.INT32)),
              dt.INT32: ((dt.FLOAT32, dt.INT32), (dt.FLOAT32, dt.FLOAT32))}

    def _attrs(self, ctx, idx_dtype, r, axis, depth, out_dtype=None):
        combos = [c for c in self.COMBOS[idx_dtype] if out_dtype is None or c[0] == out_dtype]
        if not combos:
            return None
        out_dtype, depth_dtype = ctx.choice(combos)
        if dt.is_float(out_dtype):
            vals = [ctx.choice((0.0, ctx.uniform(-4, 4))), ctx.choice((1.0, ctx.uniform(-4, 4)))]
        else:
            vals = [ctx.choice((0, ctx.rng.randint(-8, 8))), ctx.choice((1, ctx.rng.randint(-8, 8)))]
        return {"axis": axis - (r + 1) if ctx.coin(0.3) else axis, "depth": depth, "values": vals,
                "dtype": out_dtype, "depth_dtype": depth_dtype}

    def sample(self, ctx, ins):
        r = ins[0].rank
        return self._attrs(ctx, ins[0].dtype, r, ctx.rng.randint(0, r), ctx.int(1, 16))

    def requires(self, ins, a):
        return [a["depth"] >= 1, 1 <= ins[0].rank <= 3]

    def infer(self, ins, a):
        s, r = list(ins[0].shape), ins[0].rank
        s.insert(a["axis"] % (r + 1), a["depth"])
        return [TensorType(a["dtype"], tuple(s))]

    def backward(self, ctx, out):
        if not 2 <= out.rank <= 4:
            return None
        idx_dtype = ctx.choice(self.dtypes)[0]
        ax = ctx.rng.randrange(out.rank)
        a = self._attrs(ctx, idx_dtype, out.rank - 1, ax, out.shape[ax], out.dtype)
        if a is None:
            return None
        return [TensorType(idx_dtype, out.shape[:ax] + out.shape[ax + 1:])], a

    def backward_ranks(self, out):
        return (out.rank - 1,)

    def value_range(self, a, ranges, ins):
        off, on = (_in_dtype(v, a["dtype"]) for v in a["values"])
        return [(min(off, on), max(off, on))]  # every element is the off or the on value

    def exact(self, a, exacts, ins):
        # at most one of a row's ``depth`` positions is on
        return _in_dtype(a["values"][0], a["dtype"]) if a["depth"] > 1 else None

    def onnx(self, b, a, xs, ys):
        depth = b.const(np.array(a["depth"], dtype=a["depth_dtype"]))
        vals = b.const(np.array(a["values"], dtype=a["dtype"]))
        b.node("OneHot", [xs[0], depth, vals], ys, axis=b.opt(a["axis"], -1))

    def torch(self, a, x):
        n, r = a["depth"], x.dim()
        idx = x.to(torch.int64)
        valid = (idx >= -n) & (idx < n)
        idx = torch.where(idx < 0, idx + n, idx)
        hot = torch.nn.functional.one_hot(torch.where(valid, idx, 0), n).bool() & valid.unsqueeze(-1)
        tdt = dt.torch_dtype(a["dtype"])
        off, on = (torch.tensor(v, dtype=tdt) for v in a["values"])
        return torch.where(hot, on, off).movedim(-1, a["axis"] % (r + 1))


# -- Resize -------------------------------------------------------------------------------

#: Spatial scales as exact fractions p/q, all exactly representable in float32, so that
#: floor(dim * scale), out / in and the coordinate maps agree bit for bit across runtimes.
RATIOS = ((1, 4), (1, 2), (3, 4), (1, 1), (5, 4), (3, 2), (2, 1), (5, 2), (3, 1), (4, 1))
#: (mode, coordinate_transformation_mode) pairs checked against onnxruntime and onnx.reference.
COMBOS = {
    "nearest": ("asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"),
    "linear": ("asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"),
    "cubic": ("asymmetric", "half_pixel", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"),
}
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _source(ctm: str, x: np.ndarray, d: int, o: int, scale: float) -> np.ndarray:
    """ONNX Resize's coordinate transformation (output coordinate -> input coordinate)."""
    if ctm == "asymmetric":
        return x / scale
    if ctm == "align_corners":
        return np.zeros_like(x) if o == 1 else x * (d - 1) / (o - 1)
    if ctm == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if o > 1 else np.zeros_like(x)
    if ctm == "half_pixel_symmetric":
        adj = o / (scale * d)
        return d / 2 * (1 - adj) + (x + 0.5) / scale - 0.5
    return (x + 0.5) / scale - 0.5  # half_pixel


def _cubic_coeffs(r: np.ndarray, A: float) -> np.ndarray:
    def near(t):  # |t| <= 1
        return ((A + 2) * t - (A + 3)) * t * t + 1

    def far(t):  # 1 < |t| < 2
        return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A

    return np.stack([far(r + 1), near(r), near(1 - r), far(2 - r)], axis=-1)


def _weights(a: dict, d: int, o: int, scale: float):
    """Index list (nearest) or (o, d) interpolation matrix (linear, cubic) for one axis."""
    x = _source(a["ctm"], np.arange(o, dtype=np.float64), d, o, scale)
    mode = a["mode"]
    if mode == "nearest":
        nm = a["nearest_mode"]
        idx = {"round_prefer_floor": np.ceil(x - 0.5), "round_prefer_ceil": np.floor(x + 0.5),
               "floor": np.floor(x), "ceil": np.ceil(x)}[nm]
        return np.clip(idx, 0, d - 1).astype(np.int64)
    W = np.zeros((o, d))
    rows = np.arange(o)
    if mode == "linear":
        x = np.clip(x, 0, d - 1)
        x0 = np.floor(x)
        r = x - x0
        x0 = x0.astype(np.int64)
        np.add.at(W, (rows, x0), 1 - r)
        np.add.at(W, (rows, np.minimum(x0 + 1, d - 1)), r)
        return W
    x0 = np.floor(x)
    r = x - x0
    c = _cubic_coeffs(r, a["cubic_a"])
    pts = x0.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    if a["exclude_outside"]:
        c = np.where((pts >= 0) & (pts <= d - 1), c, 0.0)
        c = c / c.sum(axis=1, keepdims=True)
    for j in range(4):
        np.add.at(W, (rows, np.clip(pts[:, j], 0, d - 1)), c[:, j])
    return W


class Resize(OpSpec):
    """Resizes the trailing one or two dims of a rank-3/4 input by exact ratios p/q
    (``scales``, output floor(dim * p / q)) or to exact sizes dim * p / q (``sizes``);
    roi is empty. d * p / q is always an integer: otherwise onnxruntime recomputes the
    scale as out/in while onnx.reference keeps the given one (and uses the unrounded length
    for align_corners). Cubic needs rank 4 (onnxruntime); cubic + pytorch_half_pixel with
    an output length of 1 is left out (onnx.reference does not apply the length-1 rule).
    Integer inputs use nearest only (linear/cubic rounding is unspecified), and so does
    float64 (onnx.reference's interpolation weights are float32-accurate);
    tf_crop_and_resize, antialias, keep_aspect_ratio_policy and the axes input are not
    generated."""

    onnx_op = "Resize"
    interpolates = True
    dtypes = tuple((t,) for t in dt.FLOATS + (dt.INT8, dt.UINT8, dt.INT32, dt.INT64))
    ranks = (3, 4)

    def _mode_attrs(self, ctx, dtype, rank):
        modes = ("nearest", "linear", "cubic") if rank == 4 else ("nearest", "linear")
        # float64: onnx.reference interpolates in float32 precision, so nearest only
        mode = ctx.choice(modes) if dtype in (dt.FLOAT32, dt.FLOAT16) else "nearest"
        ctms = [c for c in COMBOS[mode] if c != "half_pixel_symmetric" or ctx.opset >= 19]
        a = {"mode": mode, "ctm": ctx.choice(ctms), "nearest_mode": None, "cubic_a": None, "exclude_outside": None}
        if mode == "nearest":
            a["nearest_mode"] = ctx.choice(NEAREST_MODES)
        if mode == "cubic":
            a["cubic_a"] = ctx.choice((-0.75, -0.5))
            a["exclude_outside"] = int(ctx.coin(0.3))
        return a

    def sample(self, ctx, ins):
        x = ins[0]
        a = self._mode_attrs(ctx, x.dtype, x.rank)
        nsp = ctx.choice((1, 2))
        pq = [[1, 1]] * (x.rank - nsp) + [list(ctx.choice(RATIOS)) for _ in range(nsp)]
        if ctx.degenerate_draw():  # scales (or sizes) of 1: the identity resize
            pq = [[1, 1]] * x.rank
        a["pq"] = pq
        a["use_sizes"] = int(ctx.coin(0.4))
        a["sizes"] = [sym.div(d * p, q) for d, (p, q) in zip(x.shape, pq)] if a["use_sizes"] else None
        return a

    def requires(self, ins, a):
        out = []
        for d, (p, q) in zip(ins[0].shape, a["pq"]):
            out += [sym.div(d * p, q) >= 1, sym.mod(d * p, q) == 0]
            if a["mode"] == "cubic" and a["ctm"] == "pytorch_half_pixel" and p != q:
                out.append(sym.div(d * p, q) >= 2)  # onnx.reference ignores the length-1 rule here
        if a["mode"] == "cubic":
            out.append(ins[0].rank == 4)  # onnxruntime: bicubic over the trailing two dims only
        if a["use_sizes"]:
            out += [s == sym.div(d * p, q) for s, d, (p, q) in zip(a["sizes"], ins[0].shape, a["pq"])]
        return out

    def infer(self, ins, a):
        return [ins[0].with_shape([sym.div(d * p, q) for d, (p, q) in zip(ins[0].shape, a["pq"])])]

    def backward(self, ctx, out):
        if out.rank not in self.ranks or not self.sigs(out.dtype):
            return None
        a = self._mode_attrs(ctx, out.dtype, out.rank)
        nsp = ctx.choice((1, 2))
        a["use_sizes"] = int(ctx.coin(0.4))
        shape, pq = list(out.shape), [[1, 1]] * out.rank
        for i in range(out.rank - nsp, out.rank):
            o = out.shape[i]
            p, q = ctx.choice(RATIOS)
            d = o * q // p if (o * q) % p == 0 else None
            if d is None or d < 1 or d > ctx.limits.max_dim:
                p = q = 1
                d = o
            shape[i], pq[i] = d, [p, q]
        a["pq"] = pq
        a["sizes"] = list(out.shape) if a["use_sizes"] else None
        return [out.with_shape(shape)], a

    def onnx(self, b, a, xs, ys):
        if a["use_sizes"]:
            ins = [xs[0], "", "", b.ints(a["sizes"])]
        else:
            ins = [xs[0], "", b.const(np.array([p / q for p, q in a["pq"]], dtype=np.float32))]
        b.node("Resize", ins, ys, mode=b.opt(a["mode"], "nearest"),
               coordinate_transformation_mode=b.opt(a["ctm"], "half_pixel"),
               nearest_mode=None if a["nearest_mode"] is None else b.opt(a["nearest_mode"], "round_prefer_floor"),
               cubic_coeff_a=None if a["cubic_a"] is None else b.opt(a["cubic_a"], -0.75),
               exclude_outside=None if a["exclude_outside"] is None else b.opt(a["exclude_outside"], 0))

    def value_range(self, a, ranges, ins):
        lo, hi = ranges[0]
        if a["mode"] != "cubic":
            return [(lo, hi)]  # copies (nearest) or convex combinations (linear)
        for d, (p, q) in zip(ins[0].shape, a["pq"]):
            if p == q:
                continue
            if sym.is_sym(d):
                return [UNBOUNDED]
            w = _weights(a, d, d * p // q, p / q)
            # a row's weights sum to 1, those below 0 to -neg: y = lo + sum w (x - lo)
            # lies in [lo - neg (hi - lo), hi + neg (hi - lo)]
            neg = float(-np.minimum(w, 0.0).sum(axis=1).min())
            if neg > 0:
                if lo == -INF or hi == INF:
                    return [UNBOUNDED]
                lo, hi = lo - neg * (hi - lo), hi + neg * (hi - lo)
        return [(lo, hi)]

    def torch(self, a, x):
        for ax, (p, q) in enumerate(a["pq"]):
            if p == q:
                continue
            d = x.shape[ax]
            o = d * p // q
            w = _weights(a, d, o, p / q)
            if a["mode"] == "nearest":
                x = x.index_select(ax, torch.from_numpy(w))
                continue
            ct = torch.float64 if x.dtype == torch.float64 else torch.float32
            y = torch.matmul(x.movedim(ax, -1).to(ct), torch.from_numpy(w.T).to(ct))
            x = y.to(x.dtype).movedim(-1, ax)
        return x



# -- EyeLike ------------------------------------------------------------------------------

class EyeLike(OpSpec):
    """Ones on the ``k``-th diagonal of a matrix of the input's shape, zeros elsewhere (a
    ``k`` past either edge gives all zeros); the output dtype is the input's or the
    ``dtype`` attribute's. The input's values do not reach the output."""

    onnx_op = "EyeLike"
    #: Output dtypes the ``dtype`` attribute names: those onnxruntime implements (its
    #: probe sees only the input dtype, so other attribute values would go unnoticed).
    ATTR_DTYPES = (dt.FLOAT32, dt.FLOAT64, dt.INT32, dt.INT64)
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (2,)
    out_range = (0.0, 1.0)
    integral_out = True
    value_inputs = ()

    @staticmethod
    def _attrs(ctx, shape, dtype) -> dict:
        n, m = shape
        k = ctx.choice((0, 0, ctx.rng.randint(-n, m), ctx.rng.randint(-n - 3, m + 3)))
        return {"k": k, "dtype": dtype}

    def sample(self, ctx, ins):
        shape = ins[0].shape
        if any(sym.is_sym(d) for d in shape):
            k = ctx.choice((0, 0, ctx.rng.randint(-3, 3)))
            a = {"k": k, "dtype": None}
        else:
            a = self._attrs(ctx, shape, None)
        if ctx.coin(0.5):
            a["dtype"] = ctx.choice([t for t in ctx.dtypes if t in self.ATTR_DTYPES] or [ins[0].dtype])
        return a

    def requires(self, ins, a):
        return [ins[0].rank == 2]

    def infer(self, ins, a):
        return [TensorType(a["dtype"] or ins[0].dtype, ins[0].shape)]

    def backward(self, ctx, out):
        if out.rank != 2:
            return None
        types = [s[0] for s in self.dtypes if s[0] in ctx.dtypes]
        if not types:
            return None
        t = ctx.choice(types) if out.dtype in self.ATTR_DTYPES else out.dtype
        if t != out.dtype:
            dtype = out.dtype
        else:
            dtype = ctx.choice((None, out.dtype))
        return [TensorType(t, out.shape)], self._attrs(ctx, out.shape, dtype)

    def exact(self, a, exacts, ins):
        n, m = ins[0].shape
        if sym.is_sym(n) or sym.is_sym(m):
            return None
        k = a["k"]
        ones = max(0, min(n, m - k) - max(0, -k))  # elements on the k-th diagonal
        return 0.0 if ones < n * m else 1.0

    def onnx_attrs(self, a, b):
        out = {"k": b.opt(a["k"], 0)}
        if a["dtype"] is not None:
            out["dtype"] = dt.ONNX[a["dtype"]]
        return out

    def torch(self, a, x):
        n, m = x.shape
        i = torch.arange(n).unsqueeze(1)
        j = torch.arange(m).unsqueeze(0)
        tdt = dt.torch_dtype(a["dtype"]) if a["dtype"] is not None else x.dtype
        return (j - i == a["k"]).to(tdt)


# -- GatherND / ScatterND / ScatterElements / ReverseSequence -----------------------------

def _unique_rows(ctx, space: tuple, count: int) -> list:
    """``count`` distinct index tuples into a grid of shape ``space`` (count <= its size)."""
    total = int(np.prod(space)) if space else 1
    flat = ctx.rng.sample(range(total), count)
    return [list(np.unravel_index(f, space)) if space else [] for f in flat]


def _rows(ctx, space: tuple, count: int, dup: bool) -> list:
    """``count`` index tuples into ``space``: distinct unless ``dup``, then drawn from a few
    positions so that some repeat."""
    total = int(np.prod(space)) if space else 1
    if not dup:
        return [[int(v) for v in r] for r in _unique_rows(ctx, space, count)]
    pool = ctx.rng.sample(range(total), ctx.rng.randint(1, min(total, max(1, count))))
    return [[int(v) for v in np.unravel_index(ctx.choice(pool), space)] for _ in range(count)]


class GatherND(OpSpec):
    """``indices`` (a constant of shape B + Q + (m,), B the first ``batch_dims`` dims of the
    data) pick slices data[b][i_1, ..., i_m]; each index lies in [-s, s-1] of its dim."""

    keeps_range = True
    nonfinite = IEEE
    onnx_op = "GatherND"
    exact_values = True
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)
    symbolic_ok = False

    @staticmethod
    def _indices(ctx, dshape, b, ishape, m):
        """Nested index lists for the batch shape, query shape and m indexed dims."""
        dims = dshape[b:b + m]
        n = int(np.prod(ishape[:-1])) if len(ishape) > 1 else 1
        flat = [[ctx.rng.randint(-d, d - 1) if ctx.coin(0.3) else ctx.rng.randint(0, d - 1) for d in dims]
                for _ in range(n)]
        return np.asarray(flat, dtype=np.int64).reshape(ishape).tolist()

    def sample(self, ctx, ins):
        x = ins[0]
        r = x.rank
        b = ctx.rng.randint(0, min(r - 1, 2)) if ctx.coin(0.5) else 0
        m = ctx.rng.randint(1, r - b)
        nq = ctx.rng.randint(0, max(0, min(2, ctx.limits.max_rank - b - 1)))
        q = tuple(ctx.rng.randint(1, 4) for _ in range(nq))
        ishape = tuple(x.shape[:b]) + q + (m,)
        if int(np.prod(ishape)) > MAX_INDICES:
            ishape = tuple(x.shape[:b]) + (m,)
        return {"batch_dims": b, "indices": self._indices(ctx, x.shape, b, ishape, m)}

    def requires(self, ins, a):
        s, r = ins[0].shape, ins[0].rank
        idx = np.asarray(a["indices"], dtype=np.int64)
        b, ishape = a["batch_dims"], idx.shape
        if len(ishape) < b + 1 or not 1 <= ishape[-1] <= r - b:
            return [False]
        m = ishape[-1]
        rows = idx.reshape(-1, m)
        ok = [idx.size <= MAX_INDICES, tuple(ishape[:b]) == tuple(s[:b])]
        for j in range(m):
            ok += [int(rows[:, j].min()) >= -s[b + j], int(rows[:, j].max()) <= s[b + j] - 1]
        return ok

    def infer(self, ins, a):
        s, b = ins[0].shape, a["batch_dims"]
        ishape = np.shape(a["indices"])
        m = ishape[-1]
        return [ins[0].with_shape(tuple(s[:b]) + tuple(ishape[b:-1]) + tuple(s[b + m:]))]

    def backward(self, ctx, out):
        R = out.rank
        b = ctx.rng.randint(0, min(R, 2)) if ctx.coin(0.5) else 0
        nq = ctx.rng.randint(0, min(2, R - b))
        t_dims = out.shape[b + nq:]
        m = ctx.rng.randint(1, 3)
        if b + m + len(t_dims) > ctx.limits.max_rank or b + m + len(t_dims) < 1:
            return None
        rest = sym.prod(out.shape[:b]) * sym.prod(t_dims)
        budget = _budget(ctx, rest)
        mids = []
        for _ in range(m):
            d = ctx.rng.randint(1, max(1, min(8, budget)))
            budget = max(1, budget // d)
            mids.append(d)
        dshape = tuple(out.shape[:b]) + tuple(mids) + tuple(t_dims)
        if sym.prod(dshape) > ctx.limits.max_elems:
            return None
        ishape = tuple(out.shape[:b + nq]) + (m,)
        if sym.prod(ishape) > MAX_INDICES:
            return None
        return [out.with_shape(dshape)], {"batch_dims": b, "indices": self._indices(ctx, dshape, b, ishape, m)}

    def backward_ranks(self, out):
        return tuple(r for r in range(1, 6))

    def onnx(self, b, a, xs, ys):
        b.node("GatherND", [xs[0], b.const(np.asarray(a["indices"], dtype=np.int64))], ys,
               batch_dims=b.opt(a["batch_dims"], 0))

    def torch(self, a, x):
        bd = a["batch_dims"]
        idx = torch.tensor(a["indices"], dtype=torch.int64)
        m = idx.shape[-1]
        bshape, q = tuple(x.shape[:bd]), tuple(idx.shape[bd:-1])
        nb = int(np.prod(bshape)) if bshape else 1
        data = x.reshape((nb,) + tuple(x.shape[bd:]))
        idx = idx.reshape(nb, -1, m)
        dims = torch.tensor(x.shape[bd:bd + m], dtype=torch.int64)
        idx = torch.where(idx < 0, idx + dims, idx)
        bi = torch.arange(nb).unsqueeze(1).expand(nb, idx.shape[1])
        y = data[(bi,) + tuple(idx[..., j] for j in range(m))]
        return y.reshape(bshape + q + tuple(x.shape[bd + m:]))


#: ScatterND / ScatterElements reductions and the opset that first defines each.
REDUCTIONS = (("none", 11), ("add", 16), ("mul", 16), ("max", 18), ("min", 18))


def _reduction(ctx, dtype: str) -> str:
    if dtype == dt.BOOL:
        return "none"  # the arithmetic reductions are not defined on bool
    if dtype == dt.FLOAT16:
        # ONNX defines them, but onnxruntime's CPU provider rejects float16 reductions at
        # run time, which its (operator, dtype, opset) probe cannot tell apart from "none"
        return "none"
    return ctx.choice([r for r, v in REDUCTIONS if v <= ctx.opset] + ["none"])


class Scatter(OpSpec):
    """Data and updates from the graph, indices a constant in the attributes. With
    reduction "none" no two updates write one element (ONNX leaves that undefined); the
    other reductions apply repeated indices in turn."""

    arity = 2
    dtypes = tuple((t, t) for t in dt.ALL)
    ranks = (1, 2, 3, 4, 5)
    symbolic_ok = False
    can_overflow = True  # add and mul of integers
    keeps_integers = True  # selections, sums and products of integers

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self.updates_shape(ins[0].shape, a))

    def value_range(self, a, ranges, ins):
        if a["reduction"] in ("none", "max", "min"):
            known = [r for r in ranges if r is not None]
            lo = min((r[0] for r in known), default=-INF)
            hi = max((r[1] for r in known), default=INF)
            return [(lo, hi)]  # every element is a data or an updates value
        return None

    def backward(self, ctx, out):
        if out.rank not in self.ranks or not self.sigs(out.dtype):
            return None
        a = self.sample(ctx, [out])
        if a is None:
            return None
        return [out, TensorType(out.dtype, self.updates_shape(out.shape, a))], a

    def infer(self, ins, a):
        return [ins[0]]

    def undefined(self, a, ins, out_types):
        if a["reduction"] not in ("add", "mul"):
            return None
        return super().undefined(a, ins, out_types)

    def onnx(self, b, a, xs, ys):
        red = None if b.opset < 16 else b.opt(a["reduction"], "none")
        b.node(self.onnx_op, [xs[0], b.const(np.asarray(a["indices"], dtype=np.int64)), xs[1]], ys,
               reduction=red, **self.extra_attrs(a, b))

    def extra_attrs(self, a, b):
        return {}


def _reduce_into(out, lin, upd, reduction):
    """``out`` (flattened along dim 0) with ``upd`` rows applied at rows ``lin``."""
    if reduction == "none":
        out[lin] = upd
        return out
    combine = {"add": torch.add, "mul": torch.mul, "max": torch.maximum}.get(reduction, torch.minimum)
    for r in range(len(lin)):  # in turn, as ONNX reads: a repeated index adds twice
        row = combine(out[lin[r]], upd[r])
        # the input search differentiates: mul, max and min keep their operands, so the row
        # just read must not be overwritten in place, also where only the updates need gradients
        if out.requires_grad or row.requires_grad:
            out = out.clone()
        out[lin[r]] = row
    return out


class ScatterND(Scatter):
    """``indices`` of shape Q + (k,) with non-negative in-range values (negative ones are
    not accepted by every runtime); updates of shape Q + data.shape[k:]."""

    onnx_op = "ScatterND"

    @staticmethod
    def updates_shape(shape, a):
        ishape = np.shape(a["indices"])
        return tuple(ishape[:-1]) + tuple(shape[ishape[-1]:])

    def sample(self, ctx, ins):
        x = ins[0]
        red = _reduction(ctx, x.dtype)
        k = ctx.rng.randint(1, x.rank)
        space = tuple(x.shape[:k])
        total = sym.prod(space)
        dup = red != "none" and ctx.coin(0.7)
        cap = 8 if dup else min(total, 8)
        nq = ctx.rng.randint(1, 2)
        q = [ctx.rng.randint(1, 4) for _ in range(nq)]
        tail = sym.prod(tuple(x.shape[k:]))  # updates hold prod(q) * tail <= the cap's elements
        while int(np.prod(q)) > 1 and (int(np.prod(q)) > cap or int(np.prod(q)) * k > MAX_INDICES
                                       or int(np.prod(q)) * tail > ctx.limits.max_elems):
            q = [max(1, d - 1) for d in q]
        rows = _rows(ctx, space, int(np.prod(q)), dup=dup)
        return {"reduction": red, "indices": np.asarray(rows, dtype=np.int64).reshape(tuple(q) + (k,)).tolist()}

    def requires(self, ins, a):
        x, u = ins
        idx = np.asarray(a["indices"], dtype=np.int64)
        k = idx.shape[-1]
        if not 1 <= k <= x.rank:
            return [False]
        rows = idx.reshape(-1, k)
        ok = [tuple(u.shape) == self.updates_shape(x.shape, a), idx.size <= MAX_INDICES]
        ok += [int(rows[:, j].min()) >= 0 and int(rows[:, j].max()) <= x.shape[j] - 1 for j in range(k)]
        if a["reduction"] == "none":
            ok.append(len({tuple(r) for r in rows.tolist()}) == len(rows))
        return ok

    def torch(self, a, x, u):
        idx = torch.tensor(a["indices"], dtype=torch.int64)
        k = idx.shape[-1]
        space = tuple(x.shape[:k])
        rows = idx.reshape(-1, k)
        lin = torch.zeros(rows.shape[0], dtype=torch.int64)
        for j in range(k):
            lin = lin * space[j] + rows[:, j]
        out = x.clone().reshape((int(np.prod(space)),) + tuple(x.shape[k:]))
        upd = u.reshape((rows.shape[0],) + tuple(x.shape[k:]))
        return _reduce_into(out, lin.tolist(), upd, a["reduction"]).reshape(x.shape)


class ScatterElements(Scatter):
    """``indices`` of the data's rank, each dim at most the data's; along ``axis`` values in
    [-s, s-1], distinct within each line for reduction "none"; updates of the indices'
    shape."""

    onnx_op = "ScatterElements"

    @staticmethod
    def updates_shape(shape, a):
        return tuple(np.shape(a["indices"]))

    def sample(self, ctx, ins):
        x = ins[0]
        red = _reduction(ctx, x.dtype)
        ax = ctx.rng.randrange(x.rank)
        n = x.shape[ax]
        dup = red != "none" and ctx.coin(0.7)
        ishape = [ctx.rng.randint(1, d) if ctx.coin(0.5) else d for d in x.shape]
        ishape[ax] = ctx.rng.randint(1, min(n, 8))
        while int(np.prod(ishape)) > MAX_INDICES:
            i = max(range(len(ishape)), key=lambda j: ishape[j])
            ishape[i] = max(1, ishape[i] // 2)
        lines = int(np.prod(ishape)) // ishape[ax]
        vals = []
        for _ in range(lines):
            if dup:
                pool = ctx.rng.sample(range(n), ctx.rng.randint(1, min(n, 3)))
                line = [ctx.choice(pool) for _ in range(ishape[ax])]
            else:
                line = ctx.rng.sample(range(n), ishape[ax])
            vals.append([v - n if ctx.coin(0.3) else v for v in line])
        # lines run along the last axis of the moved array: put ``ax`` back in place
        arr = np.asarray(vals, dtype=np.int64).reshape([d for j, d in enumerate(ishape) if j != ax] + [ishape[ax]])
        arr = np.moveaxis(arr, -1, ax)
        return {"reduction": red, "axis": _spell(ctx, ax, x.rank), "indices": arr.tolist()}

    def requires(self, ins, a):
        x, u = ins
        idx = np.asarray(a["indices"], dtype=np.int64)
        r = x.rank
        if idx.ndim != r or not -r <= a["axis"] < r:
            return [False]
        ax = a["axis"] % r
        n = x.shape[ax]
        ok = [tuple(u.shape) == idx.shape, idx.size <= MAX_INDICES,
              all(idx.shape[j] <= x.shape[j] for j in range(r)),
              int(idx.min()) >= -n, int(idx.max()) <= n - 1]
        if a["reduction"] == "none":
            norm = np.moveaxis(np.where(idx < 0, idx + n, idx), ax, -1).reshape(-1, idx.shape[ax])
            ok.append(all(len(set(line)) == len(line) for line in norm.tolist()))
        return ok

    def extra_attrs(self, a, b):
        return {"axis": b.opt(a["axis"], 0)}

    def torch(self, a, x, u):
        ax = a["axis"] % x.dim()
        n = x.shape[ax]
        idx = torch.tensor(a["indices"], dtype=torch.int64).reshape(u.shape)
        idx = torch.where(idx < 0, idx + n, idx)
        if a["reduction"] == "none":
            return torch.scatter(x, ax, idx, u)
        # element by element, in ONNX's order (row-major over the indices)
        out = x.clone()
        pos = torch.stack(torch.meshgrid(*[torch.arange(d) for d in idx.shape], indexing="ij"), -1).reshape(-1, x.dim())
        tgt = pos.clone()
        tgt[:, ax] = idx.reshape(-1)
        strides = torch.tensor([int(np.prod(x.shape[j + 1:])) for j in range(x.dim())], dtype=torch.int64)
        lin = (tgt * strides).sum(-1).tolist()
        flat = out.reshape(-1)
        return _reduce_into(flat, lin, u.reshape(-1), a["reduction"]).reshape(x.shape)


class ReverseSequence(Same):
    """Reverses the first ``sequence_lens[b]`` steps along ``time_axis`` of each batch entry
    ``b`` along ``batch_axis`` ((0, 1) or (1, 0)); lengths are an int64 constant in
    [1, time steps]."""

    keeps_range = True
    preserves_values = True
    nonfinite = IEEE
    onnx_op = "ReverseSequence"
    exact_values = True
    dtypes = tuple((t,) for t in dt.ALL)
    ranks = (2, 3, 4, 5)
    symbolic_ok = False

    def sample(self, ctx, ins):
        x = ins[0]
        ba = ctx.choice((0, 1))
        ta = 1 - ba
        nb, nt = x.shape[ba], x.shape[ta]
        lens = [ctx.choice((1, nt, ctx.rng.randint(1, nt))) for _ in range(nb)]
        return {"batch_axis": ba, "time_axis": ta, "lens": lens}

    def requires(self, ins, a):
        x = ins[0]
        nb, nt = x.shape[a["batch_axis"]], x.shape[a["time_axis"]]
        return [len(a["lens"]) == nb, all(1 <= v <= nt for v in a["lens"])]

    def onnx(self, b, a, xs, ys):
        b.node("ReverseSequence", [xs[0], b.const(np.asarray(a["lens"], dtype=np.int64))], ys,
               batch_axis=b.opt(a["batch_axis"], 1), time_axis=b.opt(a["time_axis"], 0))

    def torch(self, a, x):
        ba, ta = a["batch_axis"], a["time_axis"]
        nt = x.shape[ta]
        src = torch.arange(nt).unsqueeze(0).repeat(len(a["lens"]), 1)  # (batch, time)
        for bi, L in enumerate(a["lens"]):
            src[bi, :L] = torch.arange(L - 1, -1, -1)
        xt = x.movedim((ba, ta), (0, 1))
        bi = torch.arange(len(a["lens"])).unsqueeze(1).expand_as(src)
        return xt[bi, src].movedim((0, 1), (ba, ta))


OPS = [Gather, GatherArange, GatherElements, TopK, CumSum, Trilu, OneHot, Resize, EyeLike, GatherND, ScatterND,
       ScatterElements, ReverseSequence]
