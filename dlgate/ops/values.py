"""The value model, an optional part of an operator spec: what it knows of the values it
computes, for the generator (compositions no input can make valid, starting values for the
input search) and the oracle (``is_pointwise``).

Every member has a stock default that knows nothing (or derives what it can from the
declarative facts below), so an operator states only what holds for it:

* ``out_range``: static bounds on the outputs (Sigmoid's (0, 1)): the bounded-output part;
* ``monotone`` (or the :class:`Increasing` / :class:`Decreasing` parts): an element-wise
  monotone function, whose bounds, anchors, spans and preimages are then computed from its
  own ``torch`` on a float64 grid; ``valley`` the same for a function that falls then rises;
  :class:`Stepwise` one onto the integers, and :class:`Proxied` one with a stand-in
  derivative for the input search;
* ``keeps_range`` / ``preserves_values``: outputs between, or among, the inputs' values
  (the value-preserving part: bounds pass through both ways);
* ``elementwise`` / ``pointwise``, ``integral_out``, ``keeps_integers``, ``value_inputs``;
* hooks for the rest: ``value_range``, ``anchor``, ``exact``, ``self_range``,
  ``input_span``, ``preimage``.

The members named in :data:`dlgate.ops.core.FINAL` are computed from these and are not
hooks.
"""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from dlgate import dtypes as dt
from dlgate.ops.core import TensorType

INF = float("inf")
UNBOUNDED = (-INF, INF)
#: Where starting values are drawn when nothing says otherwise (``graph.ir.random_values``);
#: carried ranges are narrowed towards it (``sampling_window``).
SPAN_WINDOW = (-4.0, 4.0)
_SPAN_MAGS = np.logspace(-6, 3, 181)
#: How many times ``OpSpec.inverse_span`` zooms into a gap, and with how many points.
SPAN_ZOOMS = 4
SPAN_POINTS = 129
_SPAN_GRID = None  # torch tensor, built on first use (torch is imported lazily)


def sampling_window(lo: float, hi: float) -> tuple:
    """A range inside [lo, hi] no wider than ``SPAN_WINDOW``, as near to it as possible."""
    if lo < SPAN_WINDOW[1] and hi > SPAN_WINDOW[0]:
        return (max(lo, SPAN_WINDOW[0]), min(hi, SPAN_WINDOW[1]))
    width = SPAN_WINDOW[1] - SPAN_WINDOW[0]
    return (lo, min(hi, lo + width)) if lo >= SPAN_WINDOW[1] else (max(lo, hi - width), hi)


def _span_grid():
    global _SPAN_GRID
    if _SPAN_GRID is None:
        import torch

        _SPAN_GRID = torch.tensor(np.concatenate([-_SPAN_MAGS[::-1], [0.0], _SPAN_MAGS]), dtype=torch.float64)
    return _SPAN_GRID


def overlaps(r: tuple, d: tuple) -> bool:
    """Whether value bounds ``r`` leave room inside domain ``d`` (an open overlap)."""
    return r[0] < d[1] and d[0] < r[1]


def inside(r: tuple, d: tuple) -> bool:
    """Whether every value within bounds ``r`` lies in domain ``d``. A finite domain end
    is treated as open (Atanh's (-1, 1), Log's (0, inf)): conservative for closed ones."""
    return (d[0] == -INF or d[0] < r[0]) and (d[1] == INF or r[1] < d[1])


def excludes_zero(r: tuple) -> bool:
    return r[0] > 0 or r[1] < 0


def abs_bounds(r: tuple) -> tuple:
    """Bounds on ``|x|`` for x within ``r``: 0 at the bottom when ``r`` holds 0."""
    lo, hi = r
    if lo >= 0:
        return (lo, hi)
    if hi <= 0:
        return (-hi, -lo)
    return (0.0, max(-lo, hi))


class ValueModel:
    """The value part of ``OpSpec`` (see the module docstring)."""

    #: Static bounds on the output values, e.g. (0, 1) for Sigmoid.
    out_range: ClassVar[tuple | None] = None
    #: True when every output value is one of the (float) inputs' values, or between them
    #: (Transpose, Slice, ReduceMax, ReduceMean...).
    keeps_range: ClassVar[bool] = False
    #: +1 (non-decreasing) or -1 (non-increasing) for single-input element-wise operators:
    #: ``value_range`` then maps the input's bounds through the function itself.
    monotone: ClassVar[int] = 0
    #: True when every value of every (value) input appears in an output (Identity,
    #: Reshape, Transpose, Concat, Tile...): bounds learnt on the output hold for the inputs.
    preserves_values: ClassVar[bool] = False
    #: True when the outputs only ever hold integer values (Floor, Round, Sign, Hardmax).
    integral_out: ClassVar[bool] = False
    #: True when integer inputs give integer outputs though the values are not kept as
    #: they are (Cast, CastLike: an integer stays an integer in any float type; sums,
    #: products, Relu, Abs of integers).
    keeps_integers: ClassVar[bool] = False
    #: The inputs whose values flow into the outputs (None: all); CastLike's second input
    #: only names a dtype.
    value_inputs: ClassVar[tuple | None] = None
    #: True for single-input element-wise operators (``y[i] = f(x[i])``): a value the input
    #: holds exactly maps to one the output holds exactly (see ``exact``).
    elementwise: ClassVar[bool] = False
    #: True when every output element depends only on the inputs' elements at its own
    #: position, inputs broadcast to the output (element-wise operators, broadcasting
    #: arithmetic, comparisons, Where): a value the specification leaves open then reaches
    #: only those elements (``dlgate.oracle.rules.scope``). ``elementwise`` implies it.
    pointwise: ClassVar[bool] = False
    #: For continuous element-wise operators that fall, then rise (Gelu, Mish, HardSwish):
    #: ``(a, b, fmin)``, the minimum lies in [a, b] and no value is below ``fmin``; the
    #: function is non-increasing before ``a`` and non-decreasing after ``b``.
    valley: ClassVar[tuple | None] = None

    def value_range(self, a: dict, ranges: list, ins: list) -> list | None:
        """Bounds (lo, hi) on each output's values given bounds on the inputs' (``ranges``,
        one per input, UNBOUNDED when unknown) and the input types ``ins``, or None when
        nothing is known. Used by the generator to avoid compositions no input can make
        valid (Acosh of a Sigmoid)."""
        if self.monotone and ranges:
            mapped = self.map_bounds(a, ranges[0])
            if mapped is not None:
                return [mapped]
        if self.valley is not None and ranges:
            return [self.valley_bounds(a, ranges[0])]
        if self.out_range is not None:
            return [self.out_range] * self.n_outputs
        if self.keeps_range:
            floats = [r for r in ranges if r is not None]
            lo = min((r[0] for r in floats), default=-INF)
            hi = max((r[1] for r in floats), default=INF)
            return [(lo, hi)] * self.n_outputs
        return None

    def out_bounds(self, a: dict, ranges: list, ins: list, outs: list) -> list:
        """``value_range`` for the generator, one (lo, hi) per output (UNBOUNDED where
        unknown): an integer output whose bounds leave its dtype's range can wrap around
        (uint8 ``1 - 23`` is 234), so it gets the dtype's whole range instead."""
        got = self.value_range(a, ranges, ins) or [UNBOUNDED] * len(outs)
        res = []
        for t, b in zip(outs, got):
            if dt.is_int(t.dtype):
                info = np.iinfo(dt.NUMPY[t.dtype])
                if b[0] < info.min or b[1] > info.max:
                    b = (float(info.min), float(info.max))
            res.append(b)
        return res + [UNBOUNDED] * (len(outs) - len(res))

    def anchor(self, a: dict, anchors: list, ins: list) -> float | None:
        """A value output 0's elements straddle in every run (its minimum is at most, and
        its maximum at least, this value), given the inputs' anchors (None where unknown).
        Monotone operators map their input's anchor; operators that pass every input value
        on keep any input's anchor."""
        if self.monotone and anchors and anchors[0] is not None:
            m = self.map_bounds(a, (anchors[0], anchors[0]))
            return m[0] if m is not None else None
        if self.preserves_values:
            vals = self.value_inputs
            return next((x for i, x in enumerate(anchors) if x is not None and (vals is None or i in vals)), None)
        return None

    def exact(self, a: dict, exacts: list, ins: list) -> float | None:
        """A value some element of output 0 equals exactly in every run (an exclusive
        CumSum's leading 0, the 0s Trilu writes, a Conv output fed only by padding), given
        the inputs' exact values (None where unknown), or None. Element-wise operators map
        their input's exact value (computed in its dtype); single-output operators that pass
        every input value on keep any input's. A consumer whose domain excludes the value,
        or that needs a nonzero input when it is 0, has no valid run."""
        if self.elementwise and exacts and exacts[0] is not None:
            return self.map_value(a, exacts[0], ins[0])
        if self.preserves_values and self.n_outputs == 1:
            vals = self.value_inputs
            return next((x for i, x in enumerate(exacts) if x is not None and (vals is None or i in vals)), None)
        return None

    def map_value(self, a: dict, x: float, t: TensorType) -> float | None:
        """This element-wise operator applied to the single value ``x`` of type ``t``, as
        the reference computes it; None when not finite."""
        import torch

        with torch.no_grad():
            y = self.torch(a, torch.tensor([x], dtype=dt.torch_dtype(t.dtype)))
        v = float(y.reshape(-1)[0])
        return v if math.isfinite(v) else None

    def valley_bounds(self, a: dict, r: tuple) -> tuple:
        """Bounds of a ``valley`` operator over input bounds ``r``: the ends' values, and
        the minimum bound when the interval may hold the minimum."""
        import torch

        # f(-inf) is NaN (-inf * 0) for these: a huge finite end gives the limit instead
        lo, hi = (min(max(x, -1e300), 1e300) for x in r)
        va, vb, fmin = self.valley
        with torch.no_grad():
            y = self.torch(a, torch.tensor([lo, hi], dtype=torch.float64)).tolist()
        if any(v != v for v in y):
            return UNBOUNDED
        y = [INF if (x == 1e300 and v > 0) else v for x, v in zip((lo, hi), y)]
        if lo >= vb:
            out = (y[0], y[1])
        elif hi <= va:
            out = (y[1], y[0])
        else:
            out = (fmin, max(y))
        if self.out_range is not None:
            out = (max(out[0], self.out_range[0]), min(out[1], self.out_range[1]))
        return out

    def self_range(self, a: dict, r: tuple) -> tuple | None:
        """Bounds on the output when every input is one and the same tensor with bounds
        ``r`` (``Sub(x, x)`` is exactly 0), or None when that tells nothing more."""
        return None

    def map_bounds(self, a: dict, r: tuple) -> tuple | None:
        """A monotone operator's output bounds for input bounds ``r`` (clamped to its
        domain), evaluated with its own PyTorch implementation in float64; None on NaN."""
        import torch

        lo, hi = r
        if self.domain is not None:
            lo, hi = max(lo, self.domain[0]), min(hi, self.domain[1])
            if lo > hi:
                return None
        with torch.no_grad():
            y = self.torch(a, torch.tensor([lo, hi], dtype=torch.float64)).tolist()
        if y[0] != y[0] or y[1] != y[1]:
            return None
        out = (y[0], y[1]) if self.monotone > 0 else (y[1], y[0])
        if self.out_range is not None:
            out = (max(out[0], self.out_range[0]), min(out[1], self.out_range[1]))
        return out
    def input_span(self, a: dict, i: int, span: tuple, ins: list) -> tuple | None:
        """Values for input ``i`` that keep output 0 within ``span`` when every value
        input is drawn from its own returned range, or None when there is no simple such
        range: where the input search draws starting values for a graph input that reaches
        a restricted operator through this one (the search handles the rest). Operators
        whose outputs lie between their inputs' values pass ``span`` on; monotone ones
        invert it."""
        vals = self.value_inputs
        if vals is not None and i not in vals:
            return None
        if self.keeps_range or self.preserves_values:
            return span
        if (self.monotone or self.valley) and i == 0 and dt.is_float(ins[0].dtype):
            return self.inverse_span(a, span)
        return None

    def _on_grid(self, a: dict, g, r: tuple):
        """This element-wise operator on the float64 points ``g``: (values, mask of the
        points whose value is finite and within ``r``)."""
        import torch

        with torch.no_grad():
            y = self.torch(a, g)
        return y, torch.isfinite(y) & (y >= r[0]) & (y <= r[1])

    def inverse_span(self, a: dict, span: tuple) -> tuple | None:
        """For a monotone element-wise operator (or a ``valley`` one, on its rising side):
        input values whose outputs lie in ``span`` (as wide as they are: the leaf's range
        is narrowed to a sampling-friendly width only at the end, see
        ``sampling_window``), or None. Found on a fixed float64 grid (|x| from 1e-6 to
        1e3), each end sharpened between its grid neighbours; when the values jump over the span between two
        neighbouring points (a narrow target such as acosh(x) in [0.002, 0.008]), the
        search zooms into that gap a few times first."""
        import torch

        def inside(g):
            return self._on_grid(a, g, span)

        def points(lo, hi):
            return torch.linspace(lo, hi, SPAN_POINTS, dtype=torch.float64)

        grid = _span_grid()
        if self.valley is not None:
            grid = grid[grid >= self.valley[1]]  # the rising side
        for _ in range(SPAN_ZOOMS):
            y, ok = inside(grid)
            hits = ok.nonzero().flatten()
            if len(hits):
                f, last = int(hits[0]), int(hits[-1])
                lo, hi = float(grid[f]), float(grid[last])
                if f > 0:  # the first point inside, between the last outside and it
                    g = points(float(grid[f - 1]), lo)
                    lo = float(g[inside(g)[1].nonzero().flatten()[0]])
                if last < len(grid) - 1:
                    g = points(hi, float(grid[last + 1]))
                    hi = float(g[inside(g)[1].nonzero().flatten()[-1]])
                return (lo, hi)
            # neighbours on either side of the span: zoom into the gap between them
            fin = torch.isfinite(y)
            side = torch.where(y < span[0], -1, 1)
            gap = (fin[:-1] & fin[1:] & (side[:-1] != side[1:])).nonzero().flatten()
            if not len(gap):
                return None
            k = int(gap[0])
            grid = points(float(grid[k]), float(grid[k + 1]))
        return None

    def preimage(self, a: dict, r: tuple) -> tuple | None:
        """For an element-wise operator: sound bounds on the inputs whose outputs lie within
        ``r`` (every such input is inside them; an empty interval when there is none), or
        None when unknown. For monotone operators, found on the same grid as
        ``inverse_span``, each end widened to the last grid point outside, so rounding never loses a valid input; unbounded beyond |x| = 1e3.
        Other element-wise operators may override it (Abs, ThresholdedRelu)."""
        if not self.monotone:
            return None

        grid = _span_grid()
        ok = self._on_grid(a, grid, r)[1].nonzero().flatten()
        if not len(ok):
            return None  # the span may fall between two grid points: nothing known
        f, last = int(ok[0]), int(ok[-1])
        lo = -INF if f == 0 else self._outer_end(a, r, float(grid[f - 1]), float(grid[f]), first=True)
        hi = INF if last == len(grid) - 1 else self._outer_end(a, r, float(grid[last]), float(grid[last + 1]),
                                                                  first=False)
        return (lo, hi)

    def _outer_end(self, a: dict, r: tuple, x0: float, x1: float, first: bool) -> float:
        """Between a point outside and one inside (``first``) or inside and outside, the
        last point outside next to the inside ones, on a finer grid."""
        import torch

        g = torch.linspace(x0, x1, SPAN_POINTS, dtype=torch.float64)
        ok = self._on_grid(a, g, r)[1].nonzero().flatten()
        if first:
            k = int(ok[0]) if len(ok) else len(g) - 1
            return float(g[max(k - 1, 0)])
        k = int(ok[-1]) if len(ok) else 0
        return float(g[min(k + 1, len(g) - 1)])
    def is_pointwise(self) -> bool:
        return self.pointwise or self.elementwise


class Increasing:
    """Stock part: a non-decreasing element-wise function (Exp, Sqrt, Asinh...): its bounds,
    anchors, spans and preimages are computed from its own ``torch``."""

    monotone = 1


class Decreasing:
    """Stock part: a non-increasing element-wise function (Neg)."""

    monotone = -1


class Proxied:
    """Stock part: an element-wise function whose derivative is zero where the input search
    needs a slope (Relu below 0, Floor everywhere). ``fn`` computes it; ``proxy`` is the
    same function with a usable derivative (``dlgate.ops.losses``: ``proxy_relu``,
    ``proxy_floor``), used when the input search differentiates through it."""

    proxy = None

    def torch(self, a, x):
        return type(self).proxy(x) if x.requires_grad else type(self).fn(x)


class Stepwise(Proxied):
    """Stock part: a non-decreasing element-wise function onto the integers (Floor, Ceil,
    Round): integer outputs that jump at some inputs, computed by ``fn`` and differentiated
    through ``proxy`` (:class:`Proxied`)."""

    integral_out = True
    monotone = 1
    jumps = True
