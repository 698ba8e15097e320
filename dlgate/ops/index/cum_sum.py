from __future__ import annotations

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.ops import sym
from dlgate.ops.binary._shared import mul0
from dlgate.ops.index._shared import Same, _spell


class Cumulative(Same):
    """CumSum and CumProd (shapecalc): a running sum (product) along ``axis`` (an int32 or
    int64 scalar constant), ``exclusive`` (each output leaves its own term out: the first
    is the empty accumulation, ``empty``) and ``reverse``, accumulated sequentially in the
    input's dtype, as the ONNX definition reads (and as onnxruntime and onnx.reference do),
    not with PyTorch's wider accumulator: ``combine`` (``torch.add`` or ``torch.mul``) from
    ``identity`` (``torch.zeros_like`` or ``torch.ones_like``). Signed integer overflow is
    reported ``undefined``."""

    dtypes = tuple((t,) for t in dt.FLOATS + dt.COMMON_INTS)
    ranks = (1, 2, 3, 4, 5)
    identity = None
    combine = None
    empty: float = 0.0

    def sample(self, ctx, ins):
        return {"axis": _spell(ctx, ctx.rng.randrange(ins[0].rank), ins[0].rank),
                "exclusive": int(ctx.coin(0.3)), "reverse": int(ctx.coin(0.3))}

    def onnx(self, b, a, xs, ys):
        cumulative_onnx(b, self.onnx_op, a, xs, ys)

    def torch(self, a, x):
        return cumulative(a, x, type(self).identity, type(self).combine)

    keeps_integers = True
    can_overflow = True

    def _terms(self, a, ins):
        """(fewest, most) input elements one output element accumulates, or None if unknown."""
        n = ins[0].shape[a["axis"] % ins[0].rank]
        if sym.is_sym(n):
            return None
        # inclusive: 1 (the first element) to n; exclusive: 0 (the first) to n - 1
        return (0, n - 1) if a["exclusive"] else (1, n)

    def value_range(self, a, ranges, ins):
        terms = self._terms(a, ins)
        return None if terms is None else [self._accumulated(*terms, *ranges[0])]

    def _accumulated(self, m0: int, m1: int, lo: float, hi: float) -> tuple:
        """Bounds on an accumulation of between ``m0`` and ``m1`` terms within [lo, hi]."""
        raise NotImplementedError

    def exact(self, a, exacts, ins):
        return self.empty if a["exclusive"] else None  # the first (reverse: last) output


class CumSum(Cumulative):
    onnx_op = "CumSum"
    identity = torch.zeros_like
    combine = torch.add

    def _accumulated(self, m0, m1, lo, hi):
        # a sum of m terms in [lo, hi] lies in [m lo, m hi], for some m in [m0, m1]
        return (mul0(m0, lo) if lo >= 0 else mul0(m1, lo), mul0(m1, hi) if hi >= 0 else mul0(m0, hi))

    def input_span(self, a, i, span, ins):
        # every prefix sums at most n terms within span / n; that stays inside a span
        # holding 0 (an empty or short prefix sums towards 0)
        terms = self._terms(a, ins)
        lo, hi = span
        if terms is None or lo > 0 or hi < 0:
            return None
        return (lo / max(terms[1], 1), hi / max(terms[1], 1))


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


OPS = [CumSum]
