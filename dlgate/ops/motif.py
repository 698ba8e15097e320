"""Motifs: small subgraph templates aimed at one rewrite of one optimizer.

A random graph rarely meets a rewrite's preconditions (Conv followed by BatchNormalization
with constant statistics, MatMul whose only consumer is an Add of a matching bias...). A
motif is a spec like any other, inserted by the generator as one unit, but its lowering is
a short chain of other specs (``steps``), so its ONNX nodes and its PyTorch reference are
exactly those specs' own: a motif adds no arithmetic of its own to trust.

Each motif names the optimizer and rewrite it aims at (``optimizer``, ``rewrite``) and the
rewrite's preconditions it may break (``conditions``). ``sample`` draws ``violate``: None
half the time (every precondition holds, the rewrite should fire), else one condition,
chosen evenly, that the draw breaks while all others hold, so the rewrite's *decision*
is tested as well as its result. The draw is recorded in the attributes, so coverage can
tell which side of the decision a case was on (``intent``).

A step reads motif inputs (``In(k)``), earlier steps' outputs (``Out(j, o)``) or
constants made inside the motif (``Const``: values from the motif's own seed, rounded to
their dtype, never moved by the input search). Steps are a pure function of the
attributes (the lowering sees tensor names, not types), so everything a step needs about
shapes is recorded in the attributes at sampling time.

Whether a motif input must be a constant initializer (a fusion's weights) or must not be
(the same rewrite with live weights, which it must decline) is said by
``constant_input``; the generator then gives that input a fresh placeholder and makes it
a constant, or a graph input, accordingly.

A motif file reads like an operator's (docs/adding-an-operator.md, "A motif"): what it
aims at (``optimizer``, ``rewrite``, ``expects``), its signature (``types`` and ``arity``
give same-dtype signatures, as ``Elementwise`` does; ``dtypes`` for others), its
``conditions``, then ``draw``, ``steps`` and ``constant_input``. The parts an operator
states by hand a motif takes from its steps: each input's type and domain (those the first
step reading it asks for), the losses, undefined results, jumps and reference defects
(every step's), so a motif states none of them. The helpers below
(``const_values``, ``scalar``, ``half``, ``activation``, ``reread``, ``last``) are what
motifs of both optimizers share.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from dlgate import dtypes as dt
from dlgate.ops.base import OpSpec, TensorType, all_true, same_dtype_sigs
from dlgate.ops.registry import get
from dlgate.seeds import sub_seed


class In(NamedTuple):
    """Motif input ``k``."""
    k: int


class Out(NamedTuple):
    """Output ``o`` of step ``j``."""
    j: int
    o: int = 0


@dataclass(frozen=True)
class Const:
    """A constant made inside the motif (the lowering writes an initializer). ``bits`` 4
    writes int8/uint8 values (within -8..7 / 0..15) as an INT4/UINT4 initializer: dlgate's
    dtypes have no 4-bit types, so the motif's steps and the PyTorch reference see the
    values as int8/uint8, which compute the same (a DequantizeLinear subtracts and scales
    them exactly)."""
    value: np.ndarray
    hint: str = "m"
    bits: int = 0

    @property
    def type(self) -> TensorType:
        return TensorType(str(self.value.dtype), tuple(self.value.shape))


class Step(NamedTuple):
    op: str  # a spec name
    attrs: dict
    inputs: tuple  # In, Out or Const per input of the spec


def resolve(r, given: list, made: list, const):
    """What a step reads through reference ``r``: motif input ``given[k]``, output ``o``
    of an earlier step (``made[j][o]``), or ``const(r)`` for a ``Const``."""
    if isinstance(r, In):
        return given[r.k]
    if isinstance(r, Out):
        return made[r.j][r.o]
    return const(r)


def const_values(a: dict, key: str, dtype: str, shape: tuple, lo: float = -2.0, hi: float = 2.0,
                 bits: int = 0) -> Const:
    """Deterministic constant values for a motif's ``key``, from the motif's ``seed``: uniform
    in [lo, hi) for a float type, whole numbers from lo to hi for the others (``bits`` 4
    writes them as a 4-bit initializer, see ``Const``)."""
    rng = np.random.Generator(np.random.PCG64(sub_seed(a["seed"], key)))
    if dt.is_float(dtype):
        v = rng.uniform(lo, hi, size=shape)
    elif dtype == dt.BOOL:
        v = rng.integers(0, 2, size=shape)
    else:
        v = rng.integers(int(lo), int(hi) + 1, size=shape)
    return Const(np.asarray(v).astype(dt.NUMPY[dtype]), key, bits)


def scalar(value: float, dtype: str, hint: str = "m") -> Const:
    """A rank-0 constant of ``dtype``."""
    return Const(np.asarray(value, dtype=dt.NUMPY[dtype]), hint)


def half(v: float) -> float:
    """``v`` rounded to float16: a value every float type holds exactly, so a bound or a
    constant drawn once compares and computes alike in every precision a compiler uses."""
    return float(np.float16(v))


def activation(ctx, x: TensorType, names: tuple, half_bounds: bool) -> tuple:
    """(spec name, attrs) of an element-wise activation of ``x``, one of ``names``, drawn by
    its own spec; a Clip gets both bounds (its fused forms need both), rounded to float16
    when ``half_bounds``."""
    op = ctx.choice(names)
    a = get(op).sample(ctx, [x])
    if op == "Clip":
        lo, hi = sorted((ctx.uniform(-4.0, 4.0), ctx.uniform(-4.0, 4.0)))
        if half_bounds:
            lo, hi = half(lo), half(hi)
        a.update({"min": lo, "max": hi})
    return op, a


def last(steps: list) -> Out:
    """The output of the last step so far."""
    return Out(len(steps) - 1)


def reread(steps: list, src: int, dst: int, reduce: str | None = None, attrs: dict | None = None,
           op: str = "Add") -> list:
    """Steps that read step ``src``'s output once more (through the reduction ``reduce``
    with ``attrs`` when given) and combine it by ``op`` with step ``dst``'s output: ``src``
    then has a second consumer, which a single-consumer rewrite declines and which moves
    its post-dominator (TVM's FuseOps). The steps go after ``steps``."""
    if reduce is None:
        return [Step(op, {}, (Out(dst), Out(src)))]
    k = len(steps)
    return [Step(reduce, attrs or {}, (Out(src),)), Step(op, {}, (Out(dst), Out(k)))]


class Motif(OpSpec):
    """Base class of motif specs; see the module docstring."""

    #: The optimizer whose rewrite this motif aims at ("onnxruntime", "tvm").
    optimizer: ClassVar[str] = ""
    #: The rewrite's name in that optimizer's source (a transformer, a pass, a pattern).
    rewrite: ClassVar[str] = ""
    #: Rewrite kinds, as the optimizer's backend names them (``Backend.rewrites``), any of
    #: which shows the rewrite fired on an isolated instance drawn inside its preconditions.
    expects: ClassVar[tuple] = ()
    #: Preconditions of the rewrite a draw may break, by name.
    conditions: ClassVar[tuple] = ()
    #: Share of draws that break one condition.
    violate_share: ClassVar[float] = 0.5
    #: The input dtypes of same-dtype signatures: with ``arity``, ``dtypes`` is
    #: ``same_dtype_sigs(types, arity)`` unless the class writes ``dtypes`` itself.
    types: ClassVar[tuple] = ()
    symbolic_ok = False

    def __init_subclass__(cls, **kw):
        own_name = "name" in cls.__dict__
        super().__init_subclass__(**kw)
        if not own_name:
            cls.name = cls.__name__  # a motif is registered under its class's name
        if cls.types and "dtypes" not in cls.__dict__ and ("types" in cls.__dict__ or "arity" in cls.__dict__):
            cls.dtypes = same_dtype_sigs(cls.types, cls.arity)

    # -- what a motif defines ------------------------------------------------------------
    def draw(self, ctx, ins: list, violate: str | None) -> dict:
        """The motif's attributes (without ``violate`` and ``seed``), breaking ``violate``."""
        raise NotImplementedError

    def steps(self, a: dict) -> list:
        """The chain of specs, a pure function of the attributes."""
        raise NotImplementedError

    def outputs(self, a: dict) -> list:
        """The motif's outputs (``Out`` references); by default the last step's."""
        steps = self.steps(a)
        return [Out(len(steps) - 1, o) for o in range(self.n_outputs)]

    def constant_input(self, a: dict, i: int) -> bool | None:
        return None

    # -- the contract, derived from the steps ----------------------------------------------
    # sampling: ``draw``, with the side of the decision and the constants' seed recorded
    def sample(self, ctx, ins):
        violate = None
        if self.conditions and ctx.coin(self.violate_share):
            violate = ctx.choice(self.conditions)
        a = self.draw(ctx, ins, violate)
        a["violate"] = violate
        a["seed"] = ctx.int(0, 2**31 - 1)
        return a

    @staticmethod
    def intent(a: dict) -> str:
        """Which side of the rewrite's decision the draw is on."""
        return "fires" if a.get("violate") is None else f"declines:{a['violate']}"

    # constraints and inference: every step's own, chained
    def _types(self, a: dict, ins: list):
        """(per-step input types, per-step output types), or None when a step is invalid."""
        step_ins, step_outs = [], []
        for s in self.steps(a):
            sins = [resolve(r, ins, step_outs, lambda c: c.type) for r in s.inputs]
            spec = get(s.op)
            if len(sins) != spec.arity or tuple(t.dtype for t in sins) not in set(spec.dtypes):
                return None
            if not all_true(spec.requires(sins, s.attrs)):
                return None
            step_ins.append(sins)
            step_outs.append(list(spec.infer(sins, s.attrs)))
        return step_ins, step_outs

    def requires(self, ins, a):
        try:
            return [self._types(a, ins) is not None]
        except (KeyError, IndexError, ValueError, ZeroDivisionError, TypeError):
            return [False]

    def infer(self, ins, a):
        _, outs = self._types(a, ins)
        return [outs[r.j][r.o] for r in self.outputs(a)]

    # input types and the input-domain part: those of the first step reading each input
    def _reader(self, a: dict, i: int) -> tuple:
        """(step, position) of the first step reading motif input ``i``."""
        for s in self.steps(a):
            for p, r in enumerate(s.inputs):
                if isinstance(r, In) and r.k == i:
                    return s, p
        raise ValueError(f"{self.name}: no step reads input {i}")

    def _consumer(self, a: dict, i: int):
        """(spec, attrs, position) of the first step reading motif input ``i``."""
        s, p = self._reader(a, i)
        return get(s.op), s.attrs, p

    def input_type(self, ctx, i, ins, a, dtype):
        """The type the first step reading input ``i`` asks for (a Conv's weights, a Gemm's
        B and C), when that step reads input 0 first, as the motif's own input 0; else
        input 0's shape (a motif whose inputs meet further down writes its own)."""
        s, p = self._reader(a, i)
        if s.inputs[0] == In(0):
            return get(s.op).input_type(ctx, p, ins, s.attrs, dtype)
        return super().input_type(ctx, i, ins, a, dtype)

    def input_domain(self, a, i):
        spec, sa, p = self._consumer(a, i)
        return spec.input_domain(sa, p)

    def input_range(self, a, i):
        spec, sa, p = self._consumer(a, i)
        return spec.input_range(sa, p)

    def input_nonzero(self, a, i):
        spec, sa, p = self._consumer(a, i)
        return spec.input_nonzero(sa, p)

    def input_possible(self, a, i, r, t):
        spec, sa, p = self._consumer(a, i)
        return spec.input_possible(sa, p, r, t)

    # oracle facts: every step's (jumps, reference defects; undefined results below)
    def discontinuous(self, a):
        return any(get(s.op).discontinuous(s.attrs) for s in self.steps(a))

    def reference_defect(self, a, ins, opset):
        try:
            types = self._types(a, ins)
        except IndexError:
            types = None  # given the leading input types only
        if types is None:
            # each step sees the motif inputs it reads where given, else the first one's type
            types = ([[ins[r.k] if isinstance(r, In) and r.k < len(ins) else ins[0] for r in s.inputs]
                      for s in self.steps(a)],) if ins else ([[] for _ in self.steps(a)],)
        for s, sins in zip(self.steps(a), types[0]):
            why = get(s.op).reference_defect(s.attrs, sins, opset)
            if why:
                return f"{s.op} in the motif: {why}"
        return None

    # -- materialization ------------------------------------------------------------------
    def onnx(self, b, a, xs, ys):
        steps = self.steps(a)
        final = {(r.j, r.o): y for r, y in zip(self.outputs(a), ys)}
        names: list = []
        for j, s in enumerate(steps):
            spec = get(s.op)
            ins = [resolve(r, xs, names, lambda c: b.const(c.value, hint=c.hint, bits=c.bits)) for r in s.inputs]
            outs = [final.get((j, o)) or b.fresh("m") for o in range(spec.n_outputs)]
            spec.onnx(b, s.attrs, ins, outs)
            names.append(outs)

    def _run(self, a: dict, xs, hook=None):
        """Every step's inputs and outputs, as PyTorch tensors; ``hook(spec, attrs, ins,
        outs)``, when given, returns the outputs the next steps see (see ``torch_steps``)."""
        import torch

        step_ins, step_outs = [], []
        for s in self.steps(a):
            sins = [resolve(r, xs, step_outs, lambda c: torch.from_numpy(np.array(c.value, copy=True)))
                    for r in s.inputs]
            spec = get(s.op)
            y = spec.torch(s.attrs, *sins)
            y = list(y) if isinstance(y, (tuple, list)) else [y]
            if hook is not None:
                y = hook(spec, s.attrs, sins, y)
            step_ins.append(sins)
            step_outs.append(y)
        return step_ins, step_outs

    def torch_steps(self, a: dict, xs, hook) -> list:
        """The motif's outputs (a list) with ``hook(spec, attrs, ins, outs)``, when given,
        applied to every step's outputs: the instability check perturbs each step's rounding, as it does each
        operator's (a rounding step inside the motif can be amplified by a later step, which
        the motif's outputs alone do not show: Cos of an Exp)."""
        _, outs = self._run(a, xs, hook)
        return [outs[r.j][r.o] for r in self.outputs(a)]

    def torch(self, a, *xs):
        ys = self.torch_steps(a, xs, None)
        return ys[0] if len(ys) == 1 else tuple(ys)

    def losses(self, a, *xs):
        step_ins, _ = self._run(a, xs)
        out = []
        for s, sins in zip(self.steps(a), step_ins):
            out += get(s.op).losses(s.attrs, *sins)
        return out

    def undefined(self, a, ins, out_types):
        step_ins, step_outs = self._run(a, ins)
        for s, sins, souts in zip(self.steps(a), step_ins, step_outs):
            types = [TensorType(str(y.dtype).replace("torch.", ""), tuple(y.shape)) for y in souts]
            why = get(s.op).undefined(s.attrs, sins, types)
            if why:
                return f"{s.op} in the motif: {why}"
        return None


class WholeMotif(Motif):
    """A motif whose ONNX lowering and PyTorch reference are its own, not a chain of step
    specs: for a rewrite whose pattern computes shapes at run time (a Reshape or Expand to
    ``Concat(Gather(Shape(x)))``) and must stay valid at every binding of symbolic
    dimensions, which a chain of specs that record their shapes in their attributes cannot
    be. Its ``requires``, ``infer``, ``onnx`` and ``torch`` are written whole, like an idiom
    spec's; ``tests/test_specs.py`` holds them to onnx.reference like every spec."""

    def steps(self, a):
        raise TypeError(f"{self.name} has no steps: its lowering is its own")

    def torch_steps(self, a: dict, xs, hook) -> list:
        y = self.torch(a, *xs)
        return list(y) if isinstance(y, (tuple, list)) else [y]

    def requires(self, ins, a):
        raise NotImplementedError

    def infer(self, ins, a):
        raise NotImplementedError

    def onnx(self, b, a, xs, ys):
        raise NotImplementedError

    def torch(self, a, *xs):
        raise NotImplementedError

    # what Motif derives from its steps, a whole motif takes from OpSpec (or defines itself)
    input_type = OpSpec.input_type
    input_domain = OpSpec.input_domain
    input_range = OpSpec.input_range
    input_nonzero = OpSpec.input_nonzero
    input_possible = OpSpec.input_possible
    discontinuous = OpSpec.discontinuous
    reference_defect = OpSpec.reference_defect
    losses = OpSpec.losses
    undefined = OpSpec.undefined
