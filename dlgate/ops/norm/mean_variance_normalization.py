from __future__ import annotations

import math

import torch

from dlgate import dtypes as dt
from dlgate.ops import losses as L
from dlgate.ops import sym
from dlgate.ops.base import OpSpec, Restricted, TensorType, all_true, f32


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


class MeanVarianceNormalization(Restricted, OpSpec):
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

    def sample(self, ctx, ins):
        r = ins[0].rank
        if r >= 4 and ctx.coin(0.3):
            return {"axes": list(MVN_DEFAULT_AXES)}
        axes = ctx.axes(r, 1, r)
        if ctx.coin(0.3):
            ctx.rng.shuffle(axes)
        return {"axes": [ax - r if ctx.coin(0.3) else ax for ax in axes]}

    def backward(self, ctx, out):
        if out.dtype != dt.FLOAT32 or out.rank not in self.ranks:
            return None
        for _ in range(4):
            a = self.sample(ctx, [out])
            if all_true(self.requires([out], a)):
                return [out], a
        return None

    @staticmethod
    def _axes(a: dict, rank: int) -> list:
        axes = MVN_DEFAULT_AXES if a["axes"] is None else a["axes"]
        return sorted(ax % rank for ax in axes)

    def _n(self, a: dict, x: TensorType):
        return sym.prod(tuple(x.shape[ax] for ax in self._axes(a, x.rank)))

    def requires(self, ins, a):
        x = ins[0]
        r = x.rank
        axes = MVN_DEFAULT_AXES if a["axes"] is None else a["axes"]
        if r < 1 or not axes or not all(-r <= ax < r for ax in axes) or len({ax % r for ax in axes}) != len(axes):
            return [False]
        return [self._n(a, x) >= MVN_MIN_SLICE]

    def infer(self, ins, a):
        return [ins[0]]

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

    safe = (-4.0, 4.0)  # spread around 0: every slice's variance is most of its mean square
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


OPS = [MeanVarianceNormalization]
