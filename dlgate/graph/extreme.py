"""Extreme values: graph inputs and constants at the edges of each dtype and of each
operator's special regions, for a seeded share of cases (``GenConfig.extreme_share``).

Ordinary cases keep every value a few units from zero and every intermediate finite, so
overflow, float16 saturation, integer wrap-around, subnormals and the handling of NaN and
infinities are never exercised. An *extreme* case (``graph.extreme`` set) takes its
ordinary starting values and plants, in some elements of its leaves, values of these
kinds (``KINDS``):

* ``nan``, ``inf``: NaN and +/-Inf;
* ``huge``: magnitudes at or near the dtype's largest finite value (float32's 3.4e38,
  float64's 1.8e308); ``f16_edge``: float16's largest finite value 65504 and values
  just beyond it (65520 rounds to inf in float16, 65519.99 to 65504); ``beyond_f32``:
  float64 values beyond float32's range (a Cast to float32 makes them +/-inf);
* ``subnormal``: the smallest and largest subnormals of the tensor's own float type and of
  the narrower ones (float16's in a float32 tensor), and the smallest normal numbers;
* ``signed_zero``: +0.0 and -0.0;
* ``round_tie``: halves (2.5, -0.5) that Round takes to even; ``cast_tie``: midpoints
  between neighbouring float16 (or float32) values, which a narrowing Cast takes to even;
  ``quant_tie``: x with x / scale exactly k + 0.5 before a QuantizeLinear (ties to even);
* ``int_limit``: an integer type's min and max (and one inside them); ``int_wrap``:
  integers beyond a narrower integer type's range (a narrowing Cast wraps them); only
  where every operator an integer path reaches defines every value (``INT_DEFINED``).

The values respect what the specification leaves undefined: NaN and +/-Inf go only where
every operator they can reach defines them (``OpSpec.nonfinite``, see :func:`allowed`),
huge magnitudes only where the overflow they can cause is defined too (and never into
Sin, Cos or Tan, whose accuracy at huge arguments depends on the implementation's
argument reduction); finite kinds stay inside the range ``domain_spans`` carries back
from a restricted operator unless NaN is defined all the way from that leaf (Sqrt(-1)
is NaN); integer extremes go only where every operator reached defines them. The input
search (``dlgate.inputs.search``) then accepts a run only if every special value an
operator sees or makes is one its spec defines, and no operator's result is undefined.

Everything is drawn from seeded NumPy streams: the same seed gives the same values.
"""
from __future__ import annotations

import math
import random

import numpy as np

from dlgate import dtypes as dt
from dlgate.graph.ir import domain_spans
from dlgate.ops.nonfinite import INF, NAN
from dlgate.ops.registry import all_specs, get
from dlgate.seeds import sub_seed

HUGE = "huge"  # in ``allowed``: finite magnitudes that may overflow downstream
KINDS = ("nan", "inf", "huge", "f16_edge", "beyond_f32", "subnormal", "signed_zero", "round_tie", "cast_tie",
         "quant_tie", "int_limit", "int_wrap")
#: The kinds a planted element draws from half the time, where a leaf may hold them.
SPECIAL = ("nan", "inf", "huge", "f16_edge", "beyond_f32")
#: Probability that each leaf is planted (at least one is), and the most elements planted.
LEAF_PROB = 0.75
MAX_PLANTED = 16
#: Operators whose result at huge arguments depends on the implementation's argument reduction.
PERIODIC = ("Sin", "Cos", "Tan")
_ALL = frozenset({NAN, INF, HUGE})
F16_MAX = 65504.0
#: The largest magnitude a planted value may have where overflow downstream is not defined.
SMALL = 8.0
F32_MAX = float(np.finfo(np.float32).max)


def allowed(graph) -> dict:
    """Tensor id -> the special values it may hold (``"nan"``, ``"inf"``, ``"huge"``):
    those every operator it reaches defines, through the float outputs of operators that
    define them (and, for ``"huge"``, through integer operators too: a large integer cast
    to a float type is a large float). A graph output is compared as it is (NaN and Inf
    positions exactly)."""
    specs = [get(n.op) for n in graph.nodes]
    cons = graph.consumers()
    memo: dict = {}

    def of(t: int) -> frozenset:
        if t in memo:
            return memo[t]
        acc = _ALL
        for i in cons[t]:
            node, spec = graph.nodes[i], specs[i]
            reads = [p for p, u in enumerate(node.inputs) if u == t and
                     (spec.value_inputs is None or p in spec.value_inputs)]
            if not reads:
                continue  # only its type or shape is read (CastLike's target, a Shape anchor)
            if dt.is_float(graph.tensors[t].dtype):
                d = set(spec.defines_nonfinite(node.attrs, [graph.tensors[u] for u in node.inputs]))
                if INF in d and spec.onnx_op not in PERIODIC:
                    d.add(HUGE)
                acc &= frozenset(d)
            for o in node.outputs:
                if acc and graph.tensors[o].dtype != dt.BOOL:
                    acc &= of(o)
        memo[t] = acc
        return acc

    return {t: of(t) for t in range(len(graph.tensors))}


#: Operators (spec names) that define their result for every integer value, or whose
#: signed overflow the input search rejects as undefined (``OpSpec.undefined``): integer
#: extremes go only where every operator an integer path reaches is one of them.
INT_DEFINED = frozenset((
    "Cast", "CastLike", "Add", "Sub", "Mul", "Neg", "Abs", "Sign", "Max", "Min", "Max4", "Min4", "Relu", "Clip",
    "DivInt", "ModInt", "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Where", "Identity", "Reshape",
    "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Expand", "Tile", "Concat", "Concat3", "Concat5", "Split",
    "Split3", "Split5", "DepthToSpace", "SpaceToDepth", "Slice", "Pad", "Gather", "GatherElements", "GatherND",
    "ReverseSequence", "Trilu", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "ReduceMax", "ReduceMin",
    "ReduceSum", "Shape", "Size"))


def integers_allowed(graph, ok: dict) -> dict:
    """Tensor id -> whether an integer tensor may hold its type's extremes: every operator
    reading it is in ``INT_DEFINED``, its integer outputs may too, and its float outputs
    (a Cast) may hold huge magnitudes (``ok``, from :func:`allowed`)."""
    cons = graph.consumers()
    memo: dict = {}

    def of(t: int) -> bool:
        if t not in memo:
            memo[t] = True
            for i in cons[t]:
                node, spec = graph.nodes[i], get(graph.nodes[i].op)
                if not any(u == t and (spec.value_inputs is None or p in spec.value_inputs)
                           for p, u in enumerate(node.inputs)):
                    continue
                if node.op not in INT_DEFINED:
                    memo[t] = False
                for o in node.outputs:
                    d = graph.tensors[o].dtype
                    if memo[t] and (dt.is_int(d) and not of(o) or dt.is_float(d) and HUGE not in ok[o]):
                        memo[t] = False
        return memo[t]

    return {t: dt.is_int(ty.dtype) and of(t) for t, ty in enumerate(graph.tensors)}


def _exact(v: float, dtype: str) -> bool:
    with np.errstate(over="ignore"):
        x = np.asarray(v, dtype=dt.NUMPY[dtype])
    return (math.isnan(v) and bool(np.isnan(x))) or float(x) == v


def _subnormals(dtype: str) -> list:
    """The subnormal edges of ``dtype`` and of the narrower float types, and their
    smallest normal numbers, that ``dtype`` holds exactly."""
    out = []
    for d in (dt.FLOAT16, dt.FLOAT32, dt.FLOAT64):
        f = np.finfo(d)
        for v in (float(f.smallest_subnormal), float(f.smallest_normal) - float(f.smallest_subnormal),
                  float(f.smallest_normal)):
            out += [v, -v]
        if d == dtype:
            break
    return out


def _midpoints(dtype: str) -> list:
    """Values exactly halfway between neighbouring values of a narrower float type."""
    out = []
    if dtype in (dt.FLOAT32, dt.FLOAT64):
        out += [1 + 2.0**-11, 1 + 3 * 2.0**-11, -(1 + 2.0**-11), 2049.0, 2051.0, -2051.0, 65488.0]
    if dtype == dt.FLOAT64:
        out += [1 + 2.0**-24, -(1 + 3 * 2.0**-24), 16777217.0]
    return out


def _float_pool(dtype: str, ok: frozenset, span: tuple | None) -> list:
    """(kind, value) pairs a float leaf may take. Values beyond ``SMALL`` in magnitude go
    only where overflow downstream is defined: an operator whose function body overflows
    where its exact value is finite (log(exp(x) + 1)) would otherwise disagree with itself."""
    fmax = float(np.finfo(dt.NUMPY[dtype]).max)
    pool = [("subnormal", v) for v in _subnormals(dtype)]
    pool += [("signed_zero", 0.0), ("signed_zero", -0.0)]
    pool += [("round_tie", v) for v in (0.5, -0.5, 1.5, 2.5, -2.5, 3.5, -4.5)]
    pool += [("cast_tie", v) for v in _midpoints(dtype)]
    if HUGE in ok:
        pool += [("huge", v) for v in (fmax, -fmax, fmax / 2, -fmax * 0.75) if dtype != dt.FLOAT16]
        pool += [("f16_edge", v) for v in (F16_MAX, -F16_MAX, 65519.9921875, 65520.0, -65536.0, 70000.0)]
        if dtype == dt.FLOAT64:
            pool += [("beyond_f32", v) for v in (F32_MAX, -F32_MAX, F32_MAX + 2.0**103, 3.5e38, -1e39, 1e300)]
    if NAN in ok:
        pool.append(("nan", math.nan))
    if INF in ok:
        pool += [("inf", math.inf), ("inf", -math.inf)]
    pool = [(k, v) for k, v in pool if _exact(v, dtype) and (HUGE in ok or not abs(v) > SMALL)]
    if span is not None and NAN not in ok:
        lo, hi = span
        pool = [(k, v) for k, v in pool if math.isfinite(v) and lo <= v <= hi]
    return pool


def _int_pool(dtype: str) -> list:
    info = np.iinfo(dt.NUMPY[dtype])
    lo, hi = int(info.min), int(info.max)
    pool = [("int_limit", v) for v in (lo, hi, lo + 1, hi - 1)]
    wrap = {dt.INT64: (2**31, 2**31 + 5, -2**31 - 1, 2**32 + 3, 2**40 + 7, -(2**33)),
            dt.INT32: (128, 200, 256, 300, -129, -1000, 70000),
            dt.UINT8: (128, 200, 255)}.get(dtype, ())
    return pool + [("int_wrap", v) for v in wrap]


def _quant_ties(graph, t: int, dtype: str) -> list:
    """Values x whose x / scale is exactly k + 0.5 for a QuantizeLinear reading ``t`` with
    one power-of-two scale (exact in every precision the scale may ask for)."""
    out = []
    for i in graph.consumers()[t]:
        node = graph.nodes[i]
        s = node.attrs.get("scale")
        if node.op != "QuantizeLinear" or node.inputs[0] != t or s is None:
            continue
        flat = np.asarray(s, dtype=np.float64).reshape(-1)
        if flat.size != 1 or not flat[0] > 0 or math.frexp(float(flat[0]))[0] != 0.5:
            continue
        out += [("quant_tie", (k + 0.5) * float(flat[0])) for k in (-3, -2, -1, 0, 1, 2)]
    return [(k, v) for k, v in out if _exact(v, dtype)]


class Planter:
    """The extreme values each leaf (graph input or constant) of one graph may take."""

    def __init__(self, graph, spans: dict):
        ok = allowed(graph)
        ints = integers_allowed(graph, ok)
        self.graph = graph
        self.pools: dict = {}
        for t in list(graph.inputs) + list(graph.consts):
            dtype = graph.tensors[t].dtype
            if dt.is_float(dtype):
                pool = _float_pool(dtype, ok[t], spans.get(t)) + _quant_ties(graph, t, dtype)
            elif dt.is_int(dtype) and ints[t]:
                pool = _int_pool(dtype)
            else:
                pool = []
            if pool and graph.tensors[t].numel:
                self.pools[t] = pool

    def _special(self, t: int) -> bool:
        return any(k in (NAN, INF) for k, _ in self.pools[t])

    def kinds(self) -> list:
        return sorted({k for pool in self.pools.values() for k, _ in pool})

    def plant(self, rng: np.random.Generator, values: dict) -> dict:
        """``values`` (tensor id -> array, for some leaves) with extreme values planted in
        some elements of each leaf with a pool (each with probability ``LEAF_PROB``, at
        least one, always those that may hold NaN or an infinity): a kind drawn evenly from
        the leaf's special kinds (NaN, Inf, magnitudes) half the time, from the others
        otherwise, then one of its values."""
        leaves = [t for t in values if t in self.pools]
        if not leaves:
            return values
        picked = [t for t in leaves if rng.random() < LEAF_PROB or self._special(t)] or \
            [leaves[int(rng.integers(len(leaves)))]]
        out = dict(values)
        for t in picked:
            x = np.array(values[t], copy=True)
            pool = self.pools[t]
            kinds = sorted({k for k, _ in pool})
            special = [k for k in kinds if k in SPECIAL]
            plain = [k for k in kinds if k not in SPECIAL]
            n = x.size
            m = int(rng.integers(1, min(n, MAX_PLANTED) + 1))
            where = rng.choice(n, size=m, replace=False)
            flat = x.reshape(-1)
            for pos in where:
                group = special if special and (not plain or rng.random() < 0.5) else plain
                kind = group[int(rng.integers(len(group)))]
                vals = [v for k, v in pool if k == kind]
                flat[int(pos)] = vals[int(rng.integers(len(vals)))]
            out[t] = flat.reshape(x.shape)
        return out

    def plant_inputs(self, rng: np.random.Generator, inputs: list) -> list:
        planted = self.plant(rng, dict(zip(self.graph.inputs, inputs)))
        return [planted[t] for t in self.graph.inputs]


def apply(graph, seed: int, share: float):
    """For a ``share`` of seeds (its own stream), the graph marked extreme, its constants
    planted with extreme values; otherwise the graph unchanged."""
    if share <= 0 or random.Random(sub_seed(seed, "extreme")).random() >= share:
        return graph
    planter = Planter(graph, domain_spans(graph, all_specs()))
    if not planter.pools:
        return graph
    rng = np.random.Generator(np.random.PCG64(sub_seed(seed, "extreme-values")))
    consts = {t: graph.values[t] for t in graph.consts}
    graph.values = {**graph.values, **planter.plant(rng, consts)}
    graph.extreme = {"kinds": planter.kinds()}
    return graph


def kinds_in(graph, inputs: list, consts: dict) -> list:
    """The kinds of extreme value the leaves hold (classified by value; ``quant_tie`` by
    the scale of a QuantizeLinear that reads the leaf)."""
    found: set = set()
    leaves = list(zip(graph.inputs, inputs)) + [(t, consts[t]) for t in graph.consts]
    for t, x in leaves:
        x = np.asarray(x)
        found |= classify(x)
        if dt.is_float(str(x.dtype)):
            ties = {v for _, v in _quant_ties(graph, t, str(x.dtype))}
            if ties and any(float(v) in ties for v in x.reshape(-1)):
                found.add("quant_tie")
    return sorted(found)


def classify(x: np.ndarray) -> set:
    """The kinds of extreme value in one array."""
    name, out = str(x.dtype), set()
    if not x.size:
        return out
    if dt.is_float(name):
        v = x.astype(np.float64)
        fin = np.isfinite(v)
        a = np.abs(np.where(fin, v, 0.0))
        if np.isnan(v).any():
            out.add("nan")
        if np.isinf(v).any():
            out.add("inf")
        if ((v == 0) & np.signbit(v)).any():
            out.add("signed_zero")
        if ((a > 0) & (a < float(np.finfo(np.float16).smallest_normal) * 1.0000001)).any() or \
                ((a > 0) & (a <= float(np.finfo(x.dtype).smallest_normal))).any():
            out.add("subnormal")
        if (a >= 0.5 * float(np.finfo(x.dtype).max)).any() and name != dt.FLOAT16:
            out.add("huge")
        if ((a >= F16_MAX) & (a <= 70000.0)).any():
            out.add("f16_edge")
        if name == dt.FLOAT64 and (a >= F32_MAX).any():
            out.add("beyond_f32")
        small = fin & (a < 2.0**20)
        if (small & (v - np.floor(np.where(small, v, 0.0)) == 0.5)).any():
            out.add("round_tie")
        if name != dt.FLOAT16 and _has_midpoint(v[fin & (a < F16_MAX)], np.float16) or \
                name == dt.FLOAT64 and _has_midpoint(v[fin & (a < F32_MAX)], np.float32):
            out.add("cast_tie")
    elif dt.is_int(name):
        info = np.iinfo(x.dtype)
        v = x.astype(np.int64)
        if (v == int(info.max)).any() or (name != dt.UINT8 and (v == int(info.min)).any()):
            out.add("int_limit")  # uint8's 0 is no edge worth naming
        lo, hi = {dt.INT64: (-2**31, 2**31 - 1), dt.INT32: (-128, 127), dt.UINT8: (0, 127)}.get(name, (None, None))
        if lo is not None and ((v < lo) | (v > hi)).any():
            out.add("int_wrap")
    return out


def _has_midpoint(v: np.ndarray, narrow) -> bool:
    """Whether some value lies exactly halfway between two neighbouring ``narrow`` values."""
    if not v.size:
        return False
    with np.errstate(over="ignore"):
        r = v.astype(narrow).astype(np.float64)
        other = 2 * v - r  # the value's mirror image across it: a neighbour when v is a midpoint
        exact = other.astype(narrow).astype(np.float64) == other
        near = np.nextafter(r.astype(narrow), np.where(v > r, np.inf, -np.inf).astype(narrow)).astype(np.float64)
    return bool(((r != v) & exact & (near == other)).any())
