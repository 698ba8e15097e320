"""The core of the operator-spec contract, which every operator writes, and the sampling
context it draws its choices from.

An operator spec is one small class. Its core, in the order an operator's file reads:

* signature: ``onnx_op`` (and ``name`` for a variant), ``dtypes`` (one tuple per allowed
  signature, one entry per tensor input), ``ranks`` of the first input, ``min_opset`` /
  ``max_opset``, ``arity`` and ``n_outputs``;
* sampling: ``sample(ctx, ins)`` chooses the attributes, given the first input (Isra's
  order: first input, then attributes, then the further inputs); ``input_type(ctx, i, ins,
  a, dtype)`` is the type of a fresh placeholder for input ``i``;
* constraints and inference: ``requires(ins, a)`` and ``infer(ins, a)``, written with
  :mod:`dlgate.ops.sym` so they hold on concrete ints and on z3 terms; ``backward(ctx,
  out)`` an optional fast inverse (without it the generator inverts ``infer`` with z3);
* lowering: ``onnx(b, a, xs, ys)`` / ``onnx_attrs(a, b)`` at ``b.opset``;
* semantics: ``torch(a, *xs)``, a PyTorch implementation with ONNX's semantics.

What an operator knows beyond that (its values, its input domain, facts for the oracle)
lives in optional parts with stock defaults: :mod:`dlgate.ops.values`,
:mod:`dlgate.ops.domains`, :mod:`dlgate.ops.facts`; :class:`dlgate.ops.base.OpSpec` is
this core with every part. docs/adding-an-operator.md walks through it.

``ctx`` is either concrete (a seeded ``random.Random`` with attribute binning) or
symbolic (each integer choice becomes a z3 variable); specs never see the difference.
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import z3

from dlgate import dtypes as dt
from dlgate.ops import sym

#: Members the framework computes from an operator's hooks and that no operator overrides
#: (a subclass defining one is refused when its class is made): what to override instead is
#: named in each one's docstring.
FINAL = ("out_bounds", "map_value", "map_bounds", "valley_bounds", "inverse_span", "is_pointwise", "sigs")


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

    def __init__(self, rng: random.Random, limits: Limits = Limits(), dtypes: tuple = dt.ALL, opset: int = 21,
                 body_graph=None):
        self.rng = rng
        self.limits = limits
        self.dtypes = dtypes  # the dtypes this case may use (e.g. for Cast's target)
        self.opset = opset  # the case's ONNX opset
        #: How a control operator draws its body: ``dlgate.graph.generator.body_graph``, given
        #: by the generator (the catalogue sits below the generator and does not import it);
        #: None where no generator drives the draw.
        self.body_graph = body_graph

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


class Core:
    """The core every operator spec writes (see the module docstring); ``OpSpec`` adds the
    optional parts."""

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
    #: False when ``sample``/``input_type`` cannot run on a symbolic context.
    symbolic_ok: ClassVar[bool] = True
    #: A rewrite this spec aims at fires only on a model with symbolic dimensions
    #: (``graph.dynamic``): the generator gives a model holding it symbolic dimensions whenever
    #: its campaign gives any model them (``GenConfig.dynamic_share`` > 0), and its first
    #: input is a graph input (see ``dlgate.ops.motif``, EmbedLayerNormAttention).
    needs_dynamic: ClassVar[bool] = False
    #: The spec is itself a degenerate value of its operator (Concat of one input, Split into
    #: one output): kernels and converters special-case it, so a change-aware batch in the
    #: degenerate regime (``Ctx.degenerate``) draws it, but the ordinary stream never does
    #: (its draws stay as they were). Named explicitly (``--ops``, the support probe), it is drawn.
    degenerate_only: ClassVar[bool] = False

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.onnx_op and not cls.__dict__.get("name"):
            cls.name = cls.onnx_op
        # every draw a spec defines records the degenerate regime in its attributes
        for meth, backward in (("sample", False), ("backward", True)):
            fn = cls.__dict__.get(meth)
            if fn is not None and callable(fn) and not getattr(fn, "_marks_regime", False):
                setattr(cls, meth, _marking(fn, backward))
        # the members computed from the hooks stay computed
        for member in FINAL:
            if member in cls.__dict__:
                raise TypeError(f"{cls.__qualname__} overrides {member}, which the framework computes: "
                                f"override the hook it reads instead (see dlgate/ops/core.py, FINAL)")

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
    def constant_input(self, a: dict, i: int) -> bool | None:
        """Whether input ``i`` (i >= 1) must be a constant initializer (True: a fresh
        placeholder made a constant, as a fusion's weights must be), must be a graph input
        (False), or either (None: the generator draws it)."""
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
