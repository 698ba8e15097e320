"""The operator-spec contract and the sampling context specs draw their choices from.

An operator spec is one small class and the one place an operator is described:

* ``dtypes``: the allowed input dtype signatures (one tuple per signature, one entry per
  tensor input); ``ranks``: allowed ranks of the first input; ``min_opset``.
* ``sample(ctx, ins)``: choose the attributes, given the first input (Isra's order: first
  input, then attributes, then the further inputs).
* ``input_type(ctx, i, ins, a, dtype)``: the type of a fresh placeholder for input ``i``.
* ``requires(ins, a)``: validity constraints; ``infer(ins, a)``: output types. Both are
  written with :mod:`dlgate.ops.sym` so they hold on concrete ints and on z3 terms.
* ``backward(ctx, out)``: optional fast inverse for backward insertion; without it the
  generator inverts ``infer`` with z3.
* ``onnx(b, a, xs, ys)`` / ``onnx_attrs(a, b)``: the ONNX lowering at ``b.opset``.
* ``torch(a, *xs)``: the PyTorch implementation, with ONNX's semantics.
* ``losses(a, *xs)``: for restricted domains, one loss per domain predicate, positive
  exactly when the predicate is violated (used by the input search).

``ctx`` is either concrete (a seeded ``random.Random`` with attribute binning) or
symbolic (each integer choice becomes a z3 variable); specs never see the difference.
"""
from __future__ import annotations

import math
import random
import struct
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import numpy as np
import z3

from dlgate import dtypes as dt
from dlgate.ops import sym


INF = float("inf")
UNBOUNDED = (-INF, INF)
#: ``OpSpec.nonfinite`` values: IEEE 754 results for NaN and +/-Inf, or for +/-Inf only.
IEEE = frozenset({"nan", "inf"})
INF_ONLY = frozenset({"inf"})
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


@dataclass(frozen=True)
class TensorType:
    dtype: str
    shape: tuple

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self):
        return sym.prod(self.shape)

    def with_dtype(self, dtype: str) -> "TensorType":
        return TensorType(dtype, self.shape)

    def with_shape(self, shape) -> "TensorType":
        return TensorType(self.dtype, tuple(shape))

    def to_json(self) -> dict:
        return {"dtype": self.dtype, "shape": list(self.shape)}

    @staticmethod
    def from_json(d: dict) -> "TensorType":
        return TensorType(d["dtype"], tuple(d["shape"]))

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"


@dataclass(frozen=True)
class Limits:
    """Caps that keep generated tensors small enough to run thousands of cases quickly."""

    max_rank: int = 5
    max_dim: int = 64
    max_elems: int = 4096
    bins: int = 7  # NNSmith's k: exponential bins [2^(i-1), 2^i), the last one open


def f32(x: float) -> float:
    """Round to the nearest float32, so an attribute means the same in ONNX and PyTorch."""
    return struct.unpack("f", struct.pack("f", x))[0]


def binned_int(rng: random.Random, lo: int, hi: int, k: int) -> int:
    """NNSmith's attribute binning, applied while sampling: pick a bin, then a value in it.

    Bins are {0}, [2^(i-1), 2^i) for i < k, [2^(k-1), hi], and their negative mirrors, each
    clipped to [lo, hi]. Small values are as likely as the whole tail, so neither the
    boundaries nor large values dominate.
    """
    if lo > hi:
        raise ValueError(f"empty range [{lo}, {hi}]")
    bins = []
    if lo <= 0 <= hi:
        bins.append((0, 0))
    for i in range(1, k + 1):
        a = 1 << (i - 1)
        b = (1 << i) - 1 if i < k else max(a, hi, -lo)
        for p, q in ((a, b), (-b, -a)):
            p, q = max(p, lo), min(q, hi)
            if p <= q:
                bins.append((p, q))
    p, q = bins[rng.randrange(len(bins))]
    return rng.randint(p, q)


def bin_ranges(k: int, lo: int | None, hi: int | None):
    """The bins as (lo, hi) pairs (hi None = open), for the solver path."""
    out = []
    if lo is None or lo <= 0:
        out.append((0, 0))
    for i in range(1, k + 1):
        a = 1 << (i - 1)
        b = (1 << i) - 1 if i < k else None
        out.append((a, b))
        if lo is None or lo < 0:
            out.append((None if b is None else -b, -a))
    return out


class Ctx:
    """Concrete choices from a seeded RNG."""

    symbolic = False
    #: The degenerate attribute regime (a change-aware batch's target asks for it): draws
    #: take the values kernels and rewrites special-case (identity permutations, unit
    #: scales, attributes spelled out at their default, empty or full axes lists, zero
    #: pads) where a spec offers them. Off in ordinary draws, so their streams are unchanged.
    degenerate = False

    def __init__(self, rng: random.Random, limits: Limits = Limits(), dtypes: tuple = dt.ALL, opset: int = 21):
        self.rng = rng
        self.limits = limits
        self.dtypes = dtypes  # the dtypes this case may use (e.g. for Cast's target)
        self.opset = opset  # the case's ONNX opset

    # -- integers -----------------------------------------------------------------------
    def int(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi], binned."""
        return binned_int(self.rng, lo, hi, self.limits.bins)

    def dim(self, hi: int | None = None) -> int:
        return self.int(1, self.limits.max_dim if hi is None else max(1, min(hi, self.limits.max_dim)))

    def divisor(self, n: int, hi: int | None = None) -> int:
        """A divisor of n (at most hi)."""
        ds = [d for d in range(1, n + 1) if n % d == 0 and (hi is None or d <= hi)]
        return ds[self.rng.randrange(len(ds))]

    def shape(self, rank: int, numel_cap: int | None = None) -> tuple:
        """A fresh shape with binned dims, shrunk to fit the element cap."""
        cap = self.limits.max_elems if numel_cap is None else numel_cap
        dims = [self.dim() for _ in range(rank)]
        while sym.prod(dims) > cap:
            i = max(range(rank), key=lambda j: dims[j])
            dims[i] = max(1, dims[i] // 2)
        return tuple(dims)

    # -- categorical choices (always concrete) ---------------------------------------------
    def choice(self, seq: Sequence):
        return seq[self.rng.randrange(len(seq))]

    def coin(self, p: float = 0.5) -> bool:
        return self.rng.random() < p

    def uniform(self, lo: float, hi: float) -> float:
        return f32(self.rng.uniform(lo, hi))

    def axis(self, rank: int, negative_ok: bool = True) -> int:
        """An axis of a rank-``rank`` tensor, sometimes spelled negatively."""
        ax = self.rng.randrange(rank)
        return ax - rank if negative_ok and self.coin(0.3) else ax

    def axes(self, rank: int, lo: int = 1, hi: int | None = None) -> list:
        """A sorted set of distinct non-negative axes, between lo and hi of them; under the
        degenerate regime, half the time an end of that range: every axis, or none."""
        hi = rank if hi is None else min(hi, rank)
        if self.degenerate_draw():
            ends = [k for k in ((0,) if lo <= 0 else ()) + ((rank,) if hi >= rank else ())]
            if ends:
                return list(range(self.choice(ends)))
        k = self.rng.randint(min(lo, hi), hi)
        return sorted(self.rng.sample(range(rank), k))

    def perm(self, n: int) -> list:
        """A random permutation of range(n); under the degenerate regime, half the time the
        identity (a Transpose rewrites drop)."""
        if self.degenerate_draw():
            return list(range(n))
        p = list(range(n))
        self.rng.shuffle(p)
        return p

    # -- the degenerate regime -------------------------------------------------------------
    def degenerate_draw(self, p: float = 0.5) -> bool:
        """Whether this draw takes its degenerate value: with probability ``p`` under the
        degenerate regime (so a regime's cases test both sides), never otherwise, and then
        without touching the RNG, so an ordinary stream is byte-identical to one drawn
        before the regime existed. Specs draw their ordinary value first and override it
        when this says so."""
        return bool(self.degenerate) and self.coin(p)

    def or_default(self, value, default):
        """``value``, or under a degenerate draw the attribute's ``default`` (which the
        writer then spells out, see ``SPELL_DEFAULTS``)."""
        return default if self.degenerate_draw() else value


class SymCtx(Ctx):
    """Integer choices become fresh z3 variables with range constraints; the rest stays concrete."""

    symbolic = True

    def __init__(self, rng: random.Random, limits: Limits = Limits(), dtypes: tuple = dt.ALL,
                 opset: int = 21, prefix: str = "v", z3ctx: "z3.Context | None" = None):
        super().__init__(rng, limits, dtypes, opset)
        self.z3ctx = z3ctx
        self.cons: list = []
        self.vars: list = []  # (var, lo, hi) with concrete bounds or None
        self._n = 0
        self._prefix = prefix

    def fresh(self, lo=None, hi=None):
        v = z3.Int(f"{self._prefix}{self._n}", ctx=self.z3ctx)
        self._n += 1
        if lo is not None:
            self.cons.append(v >= lo)
        if hi is not None:
            self.cons.append(v <= hi)
        self.vars.append((v, lo if isinstance(lo, int) else None, hi if isinstance(hi, int) else None))
        return v

    def int(self, lo, hi):
        return self.fresh(lo, hi)

    def dim(self, hi=None):
        return self.fresh(1, self.limits.max_dim if hi is None else sym.min_(hi, self.limits.max_dim))

    def divisor(self, n, hi=None):
        d = self.fresh(1, n if hi is None else sym.min_(n, hi))
        self.cons.append(sym.mod(n, d) == 0)
        return d

    def shape(self, rank, numel_cap=None):
        return tuple(self.dim() for _ in range(rank))


#: The attribute key a draw under the degenerate regime adds to an instance's attributes:
#: the ONNX writer then spells every attribute at its default value out (``Builder.opt``)
#: instead of leaving it out half the time, since importers treat an explicit default and
#: an omitted attribute by different code.
SPELL_DEFAULTS = "spell_defaults"


def _marking(fn, backward: bool):
    """``sample`` (or ``backward``) that adds ``SPELL_DEFAULTS`` to the attributes it
    returns when the context is in the degenerate regime; unchanged otherwise."""
    def wrapped(self, ctx, arg):
        out = fn(self, ctx, arg)
        if not getattr(ctx, "degenerate", False) or out is None:
            return out
        if backward:
            ins, a = out
            return (ins, {**a, SPELL_DEFAULTS: True}) if isinstance(a, dict) else out
        return {**out, SPELL_DEFAULTS: True} if isinstance(out, dict) else out

    wrapped.__name__, wrapped.__qualname__, wrapped.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    wrapped.__wrapped__ = fn
    wrapped._marks_regime = True
    return wrapped


class OpSpec:
    """Base class of every operator spec; see the module docstring for the contract."""

    name: ClassVar[str] = ""  # registry key, defaults to onnx_op
    onnx_op: ClassVar[str] = ""
    #: Further ONNX operator types this spec's lowering emits besides ``onnx_op``, for an
    #: idiom written as several nodes (Shape -> Gather -> Concat -> Reshape; a sequence
    #: built, edited and read back): counted by ``dlgate ops`` as covered.
    onnx_ops: ClassVar[tuple] = ()
    #: For operators with constant inputs (made by the lowering) between tensor inputs:
    #: the positions of the schema's formal inputs that the dtypes of a signature stand
    #: for (ScatterND's data and updates are (0, 2)); None when they are the first ones, ()
    #: when none is (If reads its tensors in its branches, from the outer scope).
    schema_inputs: ClassVar[tuple | None] = None
    #: Parts of the operator the spec deliberately does not generate: ``(what, why)``
    #: pairs, listed by ``dlgate ops --gaps`` (a dtype the reference cannot judge, an
    #: attribute regime a backend refuses for a documented reason...).
    gaps: ClassVar[tuple] = ()
    family: ClassVar[str] = ""  # set by the registry from the module
    #: Operators one converter or kernel of the compilers handles alike, mirror images of
    #: one another (ReduceMax and ReduceMin, Less and Greater): a name they share, empty
    #: for an operator with no such siblings. A wrong answer met in several of them, with
    #: one wrong-value pattern, is reported as one cause (:mod:`dlgate.reduce.identity`).
    siblings: ClassVar[str] = ""
    arity: ClassVar[int] = 1
    n_outputs: ClassVar[int] = 1
    dtypes: ClassVar[tuple] = ()
    ranks: ClassVar[tuple] = (0, 1, 2, 3, 4, 5)
    min_opset: ClassVar[int] = 13
    max_opset: ClassVar[int | None] = None
    #: True for operators with a restricted input domain (they define ``losses``).
    restricted: ClassVar[bool] = False
    #: False when ``sample``/``input_type`` cannot run on a symbolic context.
    symbolic_ok: ClassVar[bool] = True
    #: A rewrite this spec aims at fires only on a model with symbolic dimensions
    #: (``graph.dynamic``): the generator gives a model holding it symbolic dimensions whenever
    #: its campaign gives any model them (``GenConfig.dynamic_share`` > 0), and its first
    #: input is a graph input (see ``dlgate.ops.motif``, EmbedLayerNormAttention).
    needs_dynamic: ClassVar[bool] = False
    #: True for arithmetic whose integer results can overflow (see ``undefined``).
    can_overflow: ClassVar[bool] = False
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
    #: Whether the domain's finite ends are excluded (Log's 0, Atanh's +-1) or included
    #: (Sqrt's 0, Asin's +-1, Acosh's 1).
    open_domain: ClassVar[bool] = True
    #: True when the outputs only ever hold integer values (Floor, Round, Sign, Hardmax).
    integral_out: ClassVar[bool] = False
    #: True when integer inputs give integer outputs though the values are not kept as
    #: they are (Cast, CastLike: an integer stays an integer in any float type; sums,
    #: products, Relu, Abs of integers).
    keeps_integers: ClassVar[bool] = False
    #: Values input 0 must be able to take (e.g. (1, inf) for Acosh); see ``input_domain``.
    domain: ClassVar[tuple | None] = None
    #: True for operators whose output jumps at some input values (Floor, Sign, comparisons,
    #: casts to integer, ArgMax...): a rounding-level difference upstream may flip them.
    jumps: ClassVar[bool] = False
    #: False for piecewise-constant operators with float outputs and no proxy derivative
    #: (Hardmax, Sign): gradient steps on their inputs do not move their outputs, so the
    #: input search can only re-sample values downstream of them (see the generator).
    steerable: ClassVar[bool] = True
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
    #: Facts the oracle's instability rule reads (``dlgate.oracle.ub``); an idiom or motif
    #: takes them from the operator it is named after (``onnx_op``) unless it sets its own.
    #: ``exact_values``: float results are exact in every compiler (the operator selects,
    #: moves or negates values, or converts, correctly rounded).
    exact_values: ClassVar[bool] = False
    #: ``cancels``: the result can cancel (Add, Sub, Sum): a compiler that fuses it with what
    #: made its operands leaves an error relative to the operands, not to the result.
    cancels: ClassVar[bool] = False
    #: ``centred``: a normalization that subtracts a mean from values of their own magnitude.
    centred: ClassVar[bool] = False
    #: ``interpolates``: weights can be negative (bicubic): the result keeps an error of a
    #: few units of the image's magnitude per tap.
    interpolates: ClassVar[bool] = False
    #: ``poles``: (the first pole, the period) of a function unbounded there (Tan).
    poles: ClassVar[tuple | None] = None
    #: For continuous element-wise operators that fall, then rise (Gelu, Mish, HardSwish):
    #: ``(a, b, fmin)``, the minimum lies in [a, b] and no value is below ``fmin``; the
    #: function is non-increasing before ``a`` and non-decreasing after ``b``.
    valley: ClassVar[tuple | None] = None
    #: The special values for which the ONNX specification defines this operator's result,
    #: element by element: ``"nan"`` and ``"inf"`` (+/-Inf) in its floating-point inputs,
    #: and the same values its own IEEE 754 arithmetic makes (overflow to inf, a pole,
    #: an argument outside the domain: Sqrt(-1) = NaN, Log(0) = -inf, 1 / 0 = inf). Empty
    #: (the default) where the specification does not say: Max or Relu of NaN, a
    #: reduction whose order decides between inf and NaN, ArgMax, TopK, comparisons.
    #: See ``defines_nonfinite`` and ``dlgate.ops.nonfinite``.
    nonfinite: ClassVar[frozenset] = frozenset()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.onnx_op and not cls.__dict__.get("name"):
            cls.name = cls.onnx_op
        # every draw a spec defines records the degenerate regime in its attributes
        for meth, backward in (("sample", False), ("backward", True)):
            fn = cls.__dict__.get(meth)
            if fn is not None and callable(fn) and not getattr(fn, "_marks_regime", False):
                setattr(cls, meth, _marking(fn, backward))

    # -- generation ------------------------------------------------------------------
    def sample(self, ctx: Ctx, ins: list) -> dict:
        return {}

    def input_type(self, ctx: Ctx, i: int, ins: list, a: dict, dtype: str) -> TensorType:
        return TensorType(dtype, ins[0].shape)

    def requires(self, ins: list, a: dict) -> list:
        return []

    def infer(self, ins: list, a: dict) -> list:
        raise NotImplementedError

    def backward(self, ctx: Ctx, out: TensorType):
        """Fast inverse of ``infer`` for output 0: ``(input types, attrs)``, or None to let
        the generator solve for them with z3."""
        return None

    def backward_ranks(self, out: TensorType) -> tuple:
        """Candidate ranks of the first input for an output of type ``out``."""
        return (out.rank,)

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

    def input_domain(self, a: dict, i: int) -> tuple | None:
        """The values (lo, hi) input ``i`` must be able to take for a valid result, or None."""
        return self.domain if i == 0 else None

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

    def input_possible(self, a: dict, i: int, r: tuple, t: TensorType) -> bool:
        """Whether input ``i`` (of type ``t``) with value bounds ``r`` leaves room for a
        valid run, for conditions on the elements together rather than on each (a
        positive sum for ReduceLogSum needs some element above 0; a product of many
        elements all above 1.3 overflows); per-element domains are ``input_domain``'s."""
        return True

    def input_nonzero(self, a: dict, i: int) -> bool:
        """Whether input ``i`` must hold no zero for a valid result (a divisor)."""
        return False

    def input_range(self, a: dict, i: int) -> tuple | None:
        """A value range inside the operator's domain for its input ``i``, used to draw
        starting values of graph inputs and constants that feed it directly (the input
        search then handles deeper chains); None when any value will do."""
        return None

    def undefined(self, a: dict, ins: list, out_types: list) -> str | None:
        """Why this instance's result is undefined on these inputs (PyTorch tensors), or
        None. By default, for ``can_overflow`` operators: a signed integer result beyond its
        type's range, found by recomputing in float64."""
        if not self.can_overflow:
            return None
        import torch

        wide = None
        for k, t in enumerate(out_types):
            if t.dtype not in dt.SIGNED:
                continue
            if wide is None:
                with torch.no_grad():
                    wide = self.torch(a, *[x if x.is_floating_point() else x.double() for x in ins])
                wide = list(wide) if isinstance(wide, (tuple, list)) else [wide]
            info = torch.iinfo(dt.torch_dtype(t.dtype))
            w = wide[k]
            if w.numel() and (w.max().item() > info.max or w.min().item() < info.min):
                return f"signed integer overflow: {t.dtype} results beyond [{info.min}, {info.max}]"
        return None

    def undefined_elements(self, a: dict, ins: list, out_types: list) -> list | None:
        """Where ``undefined`` finds a reason: for each output, a boolean mask (NumPy) of the
        elements whose result is undefined, or None when it cannot say (then the whole
        outputs are). By default, for ``can_overflow`` operators, the signed integer
        results beyond their type's range; None otherwise."""
        if not self.can_overflow:
            return None
        import torch

        with torch.no_grad():
            wide = self.torch(a, *[x if x.is_floating_point() else x.double() for x in ins])
        wide = list(wide) if isinstance(wide, (tuple, list)) else [wide]
        masks = []
        for t, w in zip(out_types, wide):
            if t.dtype not in dt.SIGNED or not isinstance(w, torch.Tensor):
                masks.append(np.zeros(tuple(getattr(w, "shape", ())), bool))
                continue
            info = torch.iinfo(dt.torch_dtype(t.dtype))
            masks.append(((w > info.max) | (w < info.min)).numpy())
        return masks

    def is_pointwise(self) -> bool:
        return self.pointwise or self.elementwise

    def constant_input(self, a: dict, i: int) -> bool | None:
        """Whether input ``i`` (i >= 1) must be a constant initializer (True: a fresh
        placeholder made a constant, as a fusion's weights must be), must be a graph input
        (False), or either (None: the generator draws it)."""
        return None

    def defines_nonfinite(self, a: dict, ins: list) -> frozenset:
        """The special values (``"nan"``, ``"inf"``) this instance, on inputs of the
        TensorTypes ``ins``, has a defined result for (see ``nonfinite``)."""
        return self.nonfinite

    def discontinuous(self, a: dict) -> bool:
        """Whether this instance's output can jump under a rounding-level input change."""
        return self.jumps

    def reference_defect(self, a: dict, ins: list, opset: int) -> str | None:
        """Why ONNX's reference evaluator (``onnx.reference``) computes this instance wrongly,
        or None. Generation does not avoid such instances (compilers must handle them); the
        reference is just not consulted for them."""
        return None

    def available(self, opset: int) -> bool:
        return self.min_opset <= opset and (self.max_opset is None or opset <= self.max_opset)

    def sig_weights(self, sigs: Sequence) -> list | None:
        """Relative weights of drawing each of ``sigs`` (those allowed at a case's opset, for
        its first input's dtype), or None for a uniform draw: a spec whose signatures are
        mostly rare forms (BatchNormalization's mixed float types) keeps them from
        crowding out the common ones."""
        return None

    def sigs(self, first_dtype: str | None = None) -> list:
        return [s for s in self.dtypes if first_dtype is None or s[0] == first_dtype]

    # -- materialization ----------------------------------------------------------------
    def onnx_attrs(self, a: dict, b) -> dict:
        return {}

    def onnx(self, b, a: dict, xs: list, ys: list) -> None:
        b.node(self.onnx_op, xs, ys, **self.onnx_attrs(a, b))

    def torch(self, a: dict, *xs):
        raise NotImplementedError

    def losses(self, a: dict, *xs) -> list:
        return []

    def __repr__(self) -> str:
        return f"<spec {self.name}>"


def same_dtype_sigs(types: Sequence[str], arity: int) -> tuple:
    """Signatures where every input has the same dtype."""
    return tuple((t,) * arity for t in types)


def all_true(conds) -> bool:
    """Evaluate concrete constraints (any symbolic one is an error here)."""
    for c in conds:
        if sym.is_sym(c):
            raise TypeError("symbolic constraint where a concrete one was expected")
        if not c:
            return False
    return True


Attrs = dict[str, Any]
