"""Normalization: BatchNormalization (inference), LayerNormalization, InstanceNormalization,
GroupNormalization, LRN, LpNormalization. Floating-point types
only; all inputs share X's dtype, except BatchNormalization's from opset 15 (scale and B of
one float type T1, mean and var of one float type T2, either possibly other than X's T)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from dlgate import dtypes as dt
from dlgate.spec import losses as L
from dlgate.spec import sym
from dlgate.spec.base import UNBOUNDED, OpSpec, TensorType, f32
from dlgate.spec.binary import mul_bounds
from dlgate.spec.linalg import plus_bounds

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

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        a = self.sample(ctx, [out])
        shape = self.param_shape(out.shape, a)
        return [out] + [TensorType(out.dtype, shape) for _ in range(self.arity - 1)], a


class BatchNormalization(Norm):
    """Inference mode: ``scale * (x - mean) / sqrt(var + eps) + B``, float16 computed in
    float32 and rounded once (as onnxruntime does, and onnx.reference from the float32
    epsilon on): rounding each of the four steps to float16 can land an ulp away from the
    correctly rounded value, which a cancelling Add downstream magnifies.

    X may be 1-D (N values, one channel: the parameters are [1] vectors), as the schema
    allows since version 9. The schema types mean/var apart from X from opset 14 (U), and
    scale/B too from opset 15 (T1, T2): a quarter of the draws there mix float types
    (float16 X with float32 statistics, as mixed-precision exporters write). The result is
    X's type, computed in the promotion of all five types (float32 at least), as
    onnx.reference computes it."""

    onnx_op = "BatchNormalization"
    arity = 5
    restricted = True
    ranks = (1, 2, 3, 4, 5)
    #: (T, T1, T1, T2, T2): X, scale and B, mean and var; the schema rejects mixed ones
    #: before opset 14 (and T1 other than T before 15), so they are drawn only there.
    dtypes = tuple((t, t1, t1, t2, t2) for t in dt.FLOATS for t1 in dt.FLOATS for t2 in dt.FLOATS)
    #: The share of mixed signatures among a draw's signatures, where any is allowed.
    MIXED_SHARE = 0.25
    #: How much likelier, among the mixed signatures, the one real exporters write: float16
    #: X with float16/float32 parameters (mixed-precision models keep float32 statistics).
    REAL_MIX = 4.0

    @staticmethod
    def _real_mix(sig) -> bool:
        return sig[0] == dt.FLOAT16 and all(t in (dt.FLOAT16, dt.FLOAT32) for t in sig[1:])

    def sig_weights(self, sigs) -> list | None:
        """Homogeneous signatures as often as before mixed ones were allowed; the mixed ones
        share ``MIXED_SHARE`` of the draws (uniform over all 27 would make them 8 in 9),
        float16 X with float32 statistics the likeliest of them (``REAL_MIX``)."""
        mixed = [len(set(s)) > 1 for s in sigs]
        n_same = len(sigs) - sum(mixed)
        raw = [self.REAL_MIX if self._real_mix(s) else 1.0 for s in sigs]
        total = sum(r for r, m in zip(raw, mixed) if m)
        if not total or not n_same:
            return None
        k = self.MIXED_SHARE * n_same / ((1 - self.MIXED_SHARE) * total)
        return [k * r if m else 1.0 for r, m in zip(raw, mixed)]

    def param_shape(self, x, a):
        return (x[1],) if len(x) > 1 else (1,)

    def input_type(self, ctx, i, ins, a, dtype):
        return TensorType(dtype, self.param_shape(ins[0].shape, a))

    def backward(self, ctx, out):
        got = super().backward(ctx, out)
        if got is None or ctx.opset < 14 or not ctx.coin(self.MIXED_SHARE):
            return got
        ins, a = got
        floats = [t for t in dt.FLOATS if t in ctx.dtypes]
        if out.dtype == dt.FLOAT16 and dt.FLOAT32 in floats and ctx.coin(0.5):
            floats = [dt.FLOAT16, dt.FLOAT32]  # the mix real exporters write, as in sig_weights
        t1 = ctx.choice(floats) if ctx.opset >= 15 else out.dtype  # BatchNormalization-14: scale/B are T
        t2 = ctx.choice(floats)
        shape = ins[1].shape
        return [ins[0], TensorType(t1, shape), TensorType(t1, shape), TensorType(t2, shape), TensorType(t2, shape)], a

    def sample(self, ctx, ins):
        return {"epsilon": _eps(ctx), "momentum": ctx.choice((f32(0.9), ctx.uniform(0.0, 1.0)))}

    def reference_defect(self, a, ins, opset):
        if opset < 14:
            # BatchNormalization-9 is inference-only, but onnx.reference's version takes a
            # training path whenever momentum is set, and the schema default always sets it.
            return "onnx.reference's BatchNormalization-9 normalizes with batch statistics (training path)"
        # (any narrower parameter: callers may pass a model's distinct inputs, not the five)
        if ins[0].dtype == dt.FLOAT64 and any(t.dtype != dt.FLOAT64 for t in ins[1:]):
            # numpy adds the float32 epsilon to a narrower variance in float32: sqrt(var + eps)
            # is rounded to float32 before the float64 division, off by float32's roundoff
            # where the float64 result (ours, and a compiler casting the parameters to X's
            # type) is exact to float64's
            return "onnx.reference computes sqrt(var + eps) of a narrower variance in float32 for a float64 X"
        return None

    def onnx_attrs(self, a, b):
        attrs = {"epsilon": b.opt(a["epsilon"], EPS_DEFAULT), "momentum": b.opt(a["momentum"], f32(0.9))}
        if b.opset >= 14:  # training_mode appears in BatchNormalization-14
            attrs["training_mode"] = b.opt(0, 0)
        return attrs

    def torch(self, a, x, s, bias, mean, var):
        r = x.dim()
        w = x.dtype
        for v in (s, bias, mean, var):
            w = torch.promote_types(w, v.dtype)
        w = torch.float32 if w == torch.float16 else w
        s, bias, mean, var = (_chan(v.to(w), r) for v in (s, bias, mean, var))
        return (s * (x.to(w) - mean) / torch.sqrt(var + a["epsilon"]) + bias).to(x.dtype)

    def input_range(self, a, i):
        return (0.1, 2.0) if i == 4 else None  # the variance

    def input_domain(self, a, i):
        # every variance must keep var + eps > 0 (else a NaN or a division by zero)
        return (-a["epsilon"], INF) if i == 4 else None

    def value_range(self, a, ranges, ins):
        # interval arithmetic over scale * (x - mean) / sqrt(var + eps) + B
        (xl, xh), s, b, (ml, mh), (vl, vh) = ranges
        if vl + a["epsilon"] <= 0:
            return [UNBOUNDED]  # the divisor can come arbitrarily close to 0
        inv = (1 / math.sqrt(vh + a["epsilon"]), 1 / math.sqrt(vl + a["epsilon"]))
        return [plus_bounds(mul_bounds(mul_bounds(s, (xl - mh, xh - ml)), inv), b)]

    def losses(self, a, x, s, bias, mean, var):
        return [L.gt0(var.double() + a["epsilon"])]


class InstanceNormalization(Norm):
    """Per-sample, per-channel normalization over the spatial axes."""

    onnx_op = "InstanceNormalization"
    centred = True
    arity = 3
    ranks = (3, 4, 5)

    def onnx_attrs(self, a, b):
        return {"epsilon": b.opt(a["epsilon"], EPS_DEFAULT)}

    def _n(self, x: TensorType) -> int:
        return math.prod(x.shape[2:])

    def value_range(self, a, ranges, ins):
        # scale * z + bias, z standardized over n elements (two-pass variance)
        x = ins[0]
        z = _zmax(self._n(x), a["epsilon"], ranges[0], _unit(x.dtype), two_pass=True)
        return [_affine(z, ranges[1], ranges[2])]

    def exact(self, a, exacts, ins):
        # over a single element z is exactly 0: each channel's output is its bias
        return exacts[2] if self._n(ins[0]) == 1 else None

    def torch(self, a, x, s, bias):
        # float16 is computed in float32 and rounded once, as onnxruntime does; onnx.reference
        # computes the variance in float16 and can differ by more than float16 tolerance
        # when a channel's variance is tiny.
        r, axes = x.dim(), tuple(range(2, x.dim()))
        w = torch.float32 if x.dtype == torch.float16 else x.dtype
        xw = x.to(w)
        mean = xw.mean(dim=axes, keepdim=True)
        var = ((xw - mean) ** 2).mean(dim=axes, keepdim=True)
        y = _chan(s.to(w), r) * (xw - mean) / torch.sqrt(var + a["epsilon"]) + _chan(bias.to(w), r)
        return y.to(x.dtype)

    def input_span(self, a, i, span, ins):
        return affine_span(i, span, self._n(ins[0]))


class GroupNormalization(Norm):
    """Opset 21 semantics: per-channel scale and bias; statistics in float32 (stash_type)."""

    onnx_op = "GroupNormalization"
    centred = True
    arity = 3
    min_opset = 21

    def sample(self, ctx, ins):
        # float64 statistics for float64 inputs: a float32 stash cannot meet float64 tolerances.
        return {"epsilon": _eps(ctx), "num_groups": ctx.divisor(ins[0].shape[1]),
                "stash_type": 11 if ins[0].dtype == dt.FLOAT64 else 1}

    def requires(self, ins, a):
        # stash_type is a dtype code: 1 (float32) or 11 (float64) are the precisions dlgate has
        return super().requires(ins, a) + [a["num_groups"] >= 1, sym.mod(ins[0].shape[1], a["num_groups"]) == 0,
                                           a["stash_type"] in (1, 11)]

    def onnx_attrs(self, a, b):
        return {"epsilon": b.opt(a["epsilon"], EPS_DEFAULT), "num_groups": a["num_groups"],
                "stash_type": b.opt(a["stash_type"], 1)}

    def _n(self, a, x: TensorType) -> int:
        return x.shape[1] // a["num_groups"] * math.prod(x.shape[2:])

    def value_range(self, a, ranges, ins):
        # scale * z + bias, z standardized over a group's n elements in the stash type
        u = 2.0 ** (-53 if a["stash_type"] == 11 else -24)
        z = _zmax(self._n(a, ins[0]), a["epsilon"], ranges[0], u)
        return [_affine(z, ranges[1], ranges[2])]

    def exact(self, a, exacts, ins):
        # over a single element z is exactly 0 (x - mean, x * x - mean * mean): the bias
        return exacts[2] if self._n(a, ins[0]) == 1 else None

    def torch(self, a, x, s, bias):
        # The ONNX function body: statistics in the stash type with var = E[x^2] - E[x]^2.
        r, g = x.dim(), a["num_groups"]
        x3 = x.to(torch.float64 if a["stash_type"] == 11 else torch.float32).reshape(x.shape[0], g, -1)
        mean = x3.mean(dim=2, keepdim=True)
        var = (x3 * x3).mean(dim=2, keepdim=True) - mean * mean
        y = ((x3 - mean) / torch.sqrt(var + a["epsilon"])).reshape(x.shape).to(x.dtype)
        return y * _chan(s, r) + _chan(bias, r)

    def input_span(self, a, i, span, ins):
        return affine_span(i, span, self._n(a, ins[0]))


class LayerNormalization(Norm):
    """Normalization over the trailing axes from ``axis`` (every axis, negative spellings
    too); Scale and B shaped like them. ``stash_type`` is 1 (float32 statistics), written
    out or left to its default: the only value of the Mean/InvStdDev type U that dlgate
    has. float16 statistics are computed in float32, as the function body does; float64
    ones in float64, as onnxruntime and onnx.reference compute them (the function body
    would cast them to float32: a difference of float32 rounding, well within the float64
    comparison tolerance but not the spec tests' tighter one)."""

    onnx_op = "LayerNormalization"
    centred = True
    arity = 3
    min_opset = 17
    ranks = (1, 2, 3, 4, 5)
    gaps = (("stash_type 16 (bfloat16 statistics)",
             "no bfloat16 dtype in dlgate; onnxruntime ignores stash_type and onnx.reference raises "
             "NotImplementedError for it"),
            ("float64 inputs with float32 statistics (stash_type 1 literally)",
             "onnxruntime and onnx.reference keep float64; the reference follows them (see the docstring)"))

    def sample(self, ctx, ins):
        return {"epsilon": _eps(ctx), "axis": ctx.axis(ins[0].rank), "stash_type": 1}

    def param_shape(self, x, a):
        ax = a["axis"] % len(x)
        return tuple(x[ax:])

    def _n(self, a, x: TensorType) -> int:
        return math.prod(x.shape[a["axis"] % x.rank:])

    def value_range(self, a, ranges, ins):
        # scale * z + bias, z standardized over n elements
        x = ins[0]
        z = _zmax(self._n(a, x), a["epsilon"], ranges[0], _unit(x.dtype))
        return [_affine(z, ranges[1], ranges[2] if len(ranges) > 2 else (0.0, 0.0))]

    def exact(self, a, exacts, ins):
        # over a single element z is exactly 0: the output is the bias (0 without one)
        if self._n(a, ins[0]) != 1:
            return None
        return exacts[2] if len(exacts) > 2 else 0.0

    def onnx_attrs(self, a, b):
        return {"epsilon": b.opt(a["epsilon"], EPS_DEFAULT), "axis": b.opt(a["axis"], -1),
                "stash_type": b.opt(a.get("stash_type", 1), 1)}

    def torch(self, a, x, s, bias=None):
        shape = tuple(x.shape[a["axis"] % x.dim():])
        xw = x.float() if x.dtype == torch.float16 else x
        y = F.layer_norm(xw, shape, eps=a["epsilon"]).to(x.dtype) * s
        return y if bias is None else y + bias

    def input_span(self, a, i, span, ins):
        return affine_span(i, span, self._n(a, ins[0]), has_bias=len(ins) > 2)


class LayerNormalizationNoB(LayerNormalization):
    """LayerNormalization with the optional B input omitted."""

    name = "LayerNormalizationNoB"
    arity = 2


def _wide(x):
    """float16 is computed in float32 and rounded once; other types in their own."""
    return x.float() if x.dtype == torch.float16 else x


class LRN(OpSpec):
    """ONNX LRN over the channel axis of an N x C x H x W tensor:
    ``square_sum[n, c] = sum(x[n, i] ^ 2)`` for ``max(0, c - floor((size - 1) / 2)) <= i
    <= min(C - 1, c + ceil((size - 1) / 2))`` (an even size takes one more channel after c
    than before it), ``y = x / (bias + alpha / size * square_sum) ^ beta``. Rank 4 only
    (the onnx.reference and onnxruntime kernels reject other ranks). bias > 0 and alpha >= 0
    keep the base positive, so the power is always defined. ``torch`` follows the formula
    for any size, odd or even, but only odd sizes are drawn: onnxruntime's CPU kernel
    rejects an even size (``size_ % 2 == 1``) though ONNX allows it."""

    onnx_op = "LRN"
    ranks = (4,)
    dtypes = tuple((t,) for t in dt.FLOATS)

    def sample(self, ctx, ins):
        return {"size": ctx.choice((1, 3, 3, 5, 5, 7, 9)),
                "alpha": ctx.choice((f32(1e-4), f32(1e-4), ctx.uniform(1e-4, 1.0))),
                "beta": ctx.choice((f32(0.75), f32(0.75), ctx.uniform(0.1, 1.0))),
                "bias": ctx.choice((1.0, 1.0, ctx.uniform(0.5, 2.0)))}

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        return [out], self.sample(ctx, [out])

    def onnx_attrs(self, a, b):
        return {"size": a["size"], "alpha": b.opt(a["alpha"], f32(1e-4)), "beta": b.opt(a["beta"], f32(0.75)),
                "bias": b.opt(a["bias"], 1.0)}

    def reference_defect(self, a, ins, opset):
        x = ins[0].shape
        if x[0] != x[1]:
            # op_lrn.py loops ``for c in range(x.shape[0])``: over the batch, not the channels
            return "onnx.reference's LRN loops over the batch size instead of the channels (wrong unless N == C)"
        return None

    def value_range(self, a, ranges, ins):
        # the divisor is at least bias ** beta (square_sum >= 0, alpha >= 0, beta > 0), so y
        # has x's sign and |y| <= |x| / bias ** beta (with a margin for rounding)
        k = (1.0 / a["bias"] ** a["beta"]) * (1 + 2.0 ** -8)
        lo, hi = ranges[0]
        return [(lo * k if lo < 0 else 0.0, hi * k if hi > 0 else 0.0)]

    def torch(self, a, x):
        n = a["size"]
        before, after = (n - 1) // 2, math.ceil((n - 1) / 2)
        xw = _wide(x)
        sq = xw * xw
        # pad the channel axis (dim 1) with zeros: before channels ahead, after behind
        sq = F.pad(sq, (0, 0, 0, 0, before, after))
        ss = sq.unfold(1, n, 1).sum(dim=-1)
        y = xw / (a["bias"] + (a["alpha"] / n) * ss) ** a["beta"]
        return y.to(x.dtype)


class LpNormalization(OpSpec):
    """``y = x / ||x||_p`` along ``axis`` (p in {1, 2}); the ONNX specification defines the
    output as 0 where the norm is 0. Restricted nonetheless to slices whose sum of |x|^p is
    neither tiny (the result jumps from unit norm to 0 at the all-zero slice, and backends
    whose sums underflow differently disagree) nor beyond the dtype's range."""

    onnx_op = "LpNormalization"
    ranks = (1, 2, 3, 4, 5)
    dtypes = tuple((t,) for t in dt.FLOATS)
    restricted = True
    out_range = (-1.0, 1.0)

    def sample(self, ctx, ins):
        return {"axis": ctx.axis(ins[0].rank), "p": ctx.choice((1, 2))}

    def infer(self, ins, a):
        return [ins[0]]

    def requires(self, ins, a):
        r = ins[0].rank
        return [r >= 1, -r <= a["axis"], a["axis"] < r]

    def backward(self, ctx, out):
        if out.dtype not in dt.FLOATS or out.rank not in self.ranks:
            return None
        return [out], self.sample(ctx, [out])

    def onnx_attrs(self, a, b):
        return {"axis": b.opt(a["axis"], -1), "p": b.opt(a["p"], 2)}

    def reference_defect(self, a, ins, opset):
        if a["p"] == 1:
            return "onnx.reference's LpNormalization sums x ** p, not |x| ** p: wrong for p = 1 and negative values"
        if ins[0].dtype == dt.FLOAT16:
            return ("onnx.reference squares float16 values in float16: subnormal squares (|x| < 2^-7) lose "
                    "precision, and a slice of such values is off by more than float16 tolerance")
        return None

    def _sums(self, a, x):
        xd = x.double().abs()
        return (xd if a["p"] == 1 else xd * xd).sum(dim=a["axis"] % x.dim())

    def torch(self, a, x):
        xw = _wide(x)
        ax = a["axis"] % x.dim()
        norm = xw.abs().sum(dim=ax, keepdim=True) if a["p"] == 1 else torch.sqrt((xw * xw).sum(dim=ax, keepdim=True))
        y = torch.where(norm == 0, torch.zeros_like(xw), xw / torch.where(norm == 0, torch.ones_like(norm), norm))
        return y.to(x.dtype)

    def losses(self, a, x):
        info = torch.finfo(x.dtype)
        s = self._sums(a, x)
        return [L.gt0(s - float(info.tiny)), L.le0(s - 0.5 * float(info.max))]

    def input_possible(self, a, i, r, t):
        return r != (0.0, 0.0)  # a nonzero norm needs some nonzero element


#: MeanVarianceNormalization's function body: the Epsilon constant added to the standard
#: deviation, and the instance limits that keep its one-pass variance meaningful.
MVN_EPS = f32(1e-9)
MVN_DEFAULT_AXES = [0, 2, 3]
#: Fewest elements per normalized slice (see MeanVarianceNormalization's gaps).
MVN_MIN_SLICE = 4
#: Least variance per slice, relative to the slice's mean square, and absolute.
MVN_SPREAD, MVN_MIN_VAR = 1e-3, 1e-8
#: Largest magnitude whose square (summed over a slice) stays well inside float32.
MVN_MAX_ABS = 1e15


class MeanVarianceNormalization(OpSpec):
    """``(X - E[X]) / (Sqrt(E[X^2] - E[X]^2) + 1e-9)`` over ``axes``, exactly as the ONNX
    function body computes it, node by node in float32: ReduceMean, Pow(., 2) of the
    mean and of X, ReduceMean, Sub, Sqrt, then the Epsilon constant added to the standard
    deviation (not the variance). ``axes``: any non-empty set of distinct axes of a rank
    1-5 input, in any order and spelled positively or negatively, or the default [0, 2, 3]
    (ranks 4 and 5; always written out, see ``gaps``).

    onnxruntime's float kernel computes the variance in two passes, E[(X - E[X])^2], and
    adds no epsilon; TVM 0.27 uses the one-pass formula without the epsilon. The three
    agree within rounding when every slice has some spread; on near-constant slices the
    one-pass E[X^2] - E[X]^2 cancels (0.2% off onnxruntime on two-element slices of
    close values), and on a constant slice the function body gives 0 where both others
    give NaN (0 / 0). Hence: slices of at least 4 elements, a restricted domain (``losses``:
    a variance of at least 1e-3 of the mean square and at least 1e-8 per slice, magnitudes
    below 1e15), and ``undefined`` reporting a near-constant slice. float32 only (see
    ``gaps``)."""

    onnx_op = "MeanVarianceNormalization"
    ranks = (1, 2, 3, 4, 5)
    dtypes = ((dt.FLOAT32,),)
    restricted = True
    gaps = (
        ("float16 and float64 inputs",
         "the function body's Epsilon constant is float32, so its Add is ill-typed for any other T: onnx's full "
         "checker rejects the model ('(op_type:Add): B has inconsistent type tensor(float)'), onnx.reference "
         "raises 'Input type mismatch', onnxruntime fails (double: NOT_IMPLEMENTED at opset 21+)"),
        ("slices of 1 to 3 elements",
         "over one element the function body gives 0 (0 / (0 + 1e-9)) where onnxruntime and TVM give NaN; over 2 "
         "or 3 random elements near-constant slices are frequent, where the one-pass variance cancels beyond "
         "tolerance of onnxruntime's two-pass one (the spec tests draw inputs without the input search)"),
        ("near-constant slices (variance below 1e-3 of the mean square, or below 1e-8)",
         "the function body's E[X^2] - E[X]^2 cancels there and implementations differ legitimately: a "
         "restricted domain, and reported by ``undefined``"),
        ("axes left unwritten (the default [0, 2, 3] is written out instead)",
         "onnx's full checker rejects the model: the function body's Constant(value_ints=@axes) gets no value "
         "from the attribute's default ('One and only one of the attributes 'value', 'value_*' or "
         "'sparse_value' must be specified for a Constant node')"),
        ("an empty axes list",
         "the function body then reduces over every axis (ReduceMean with empty axes), which onnxruntime 1.32 "
         "refuses at run time ('No valid axes are specified. This is not handled now.'): a documented "
         "limitation every such model would report"),
    )

    @staticmethod
    def _axes(a: dict, rank: int) -> list:
        axes = MVN_DEFAULT_AXES if a["axes"] is None else a["axes"]
        return sorted(ax % rank for ax in axes)

    def _n(self, a: dict, x: TensorType):
        return sym.prod(tuple(x.shape[ax] for ax in self._axes(a, x.rank)))

    def sample(self, ctx, ins):
        r = ins[0].rank
        if r >= 4 and ctx.coin(0.3):
            return {"axes": list(MVN_DEFAULT_AXES)}
        axes = ctx.axes(r, 1, r)
        if ctx.coin(0.3):
            ctx.rng.shuffle(axes)
        return {"axes": [ax - r if ctx.coin(0.3) else ax for ax in axes]}

    def requires(self, ins, a):
        x = ins[0]
        r = x.rank
        axes = MVN_DEFAULT_AXES if a["axes"] is None else a["axes"]
        if r < 1 or not axes or not all(-r <= ax < r for ax in axes) or len({ax % r for ax in axes}) != len(axes):
            return [False]
        return [self._n(a, x) >= MVN_MIN_SLICE]

    def infer(self, ins, a):
        return [ins[0]]

    def backward(self, ctx, out):
        from dlgate.spec.base import all_true

        if out.dtype != dt.FLOAT32 or out.rank not in self.ranks:
            return None
        for _ in range(4):
            a = self.sample(ctx, [out])
            if all_true(self.requires([out], a)):
                return [out], a
        return None

    def onnx_attrs(self, a, b):
        return {"axes": list(MVN_DEFAULT_AXES if a["axes"] is None else a["axes"])}

    def torch(self, a, x):
        ax = tuple(self._axes(a, x.dim()))
        two = torch.tensor(2.0, dtype=x.dtype)
        mean = x.mean(dim=ax, keepdim=True)
        ex_squared = torch.pow(mean, two)
        e_xsquared = torch.pow(x, two).mean(dim=ax, keepdim=True)
        std = torch.sqrt(e_xsquared - ex_squared)
        return (x - mean) / (std + MVN_EPS)

    def _stats(self, a, x):
        """Per slice, in float64: (variance, mean square)."""
        ax = tuple(self._axes(a, x.dim()))
        xd = x.double()
        mean = xd.mean(dim=ax, keepdim=True)
        return ((xd - mean) ** 2).mean(dim=ax), (xd * xd).mean(dim=ax)

    def losses(self, a, x):
        var, ms = self._stats(a, x)
        return [L.le0(MVN_SPREAD * ms - var), L.le0(MVN_MIN_VAR - var), L.le0(x.double().abs() - MVN_MAX_ABS)]

    def undefined(self, a, ins, out_types):
        var, ms = self._stats(a, ins[0])
        if bool(((var < MVN_SPREAD * ms) | (var < MVN_MIN_VAR)).any()):
            return ("a near-constant slice: the function body's one-pass variance E[X^2] - E[X]^2 cancels "
                    "(and a constant slice gives 0 / (0 + 1e-9) = 0 where 0 / 0 is NaN without the epsilon)")
        return None

    def input_range(self, a, i):
        return (-4.0, 4.0)  # spread around 0: every slice's variance is most of its mean square

    def input_possible(self, a, i, r, t):
        lo, hi = r
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 <= hi:
            return hi - lo >= 2 * math.sqrt(MVN_MIN_VAR)
        # the widest spread in [lo, hi]: half the values at each end
        half = (hi - lo) / 2
        return half >= math.sqrt(MVN_MIN_VAR) and half * half >= MVN_SPREAD * (lo * lo + hi * hi) / 2

    def value_range(self, a, ranges, ins):
        # |x - mean| / std <= sqrt(n - 1) over n values, with a margin for the one-pass
        # variance's rounding (the restricted domain keeps it to 1e-4 of the deviation)
        n = self._n(a, ins[0])
        z = math.sqrt(max(int(n) - 1, 0)) * 1.01
        return [(-z, z)]


OPS = [BatchNormalization, InstanceNormalization, GroupNormalization, LayerNormalization, LayerNormalizationNoB,
       LRN, LpNormalization, MeanVarianceNormalization]
