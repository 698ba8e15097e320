"""Control flow with generated subgraphs: If, Loop and Scan.

Each body (an If branch, a Loop or Scan body) is a small graph made by dlgate's own
generator (:class:`_BodyGenerator`: the graph generator driven from given input types,
forward insertion only) over a modest set of bounded element-wise operators, with a few
shape-changing ones whose outputs can feed scan outputs. The body is kept in the node's
attributes as ``{"graph": Graph.to_json(), "values": [[tensor, value], ...]}`` (its
constants' values as nested lists), so a case regenerates byte for byte from its JSON and
the reducer can shrink the node's plain attributes (a trip count halves, the scan outputs
follow). The reference runs the bodies node by node with each operator's own PyTorch
implementation; the lowering writes them as ``GraphProto`` attributes
(:func:`dlgate.materialize.onnx_model.lower_graph`), adding the adapters a construct needs
(the iteration number cast to the data type, Identity where a body output is one of its
inputs, the Loop's condition output).

A body's outputs are picked among the tensors its operators produce that have the type
the construct needs (a loop-carried value keeps its type; both If branches give the
outputs the types of the If's inputs); where no operator produced one, the output is an
input passed through (an Identity written by the lowering). Operators no output depends
on are pruned. Bodies that are iterated (Loop, Scan) use no operator that grows its input
geometrically (Mul, Exp...), and a body whose value bounds, carried through every
iteration, leave a safe range for its dtype is generated again.
"""
from __future__ import annotations

import math
import random
from functools import lru_cache
from typing import ClassVar

import numpy as np
import torch
from onnx import TensorProto, helper

from dlgate import dtypes as dt
from dlgate.graph.generator import GenConfig, Generator, _State
from dlgate.graph.ir import Graph, domain_spans, random_values
from dlgate.seeds import sub_seed
from dlgate.spec.base import UNBOUNDED, Ctx, OpSpec, TensorType

# -- body operators -----------------------------------------------------------------------

#: Bounded or linear element-wise operators (and a few shape-changing ones whose outputs
#: can become scan outputs), none with a restricted domain or a jump.
FLOAT_OPS = ("Abs", "Neg", "Relu", "LeakyRelu", "Sin", "Cos", "Atan", "Tanh", "Sigmoid", "Softsign", "Erf",
             "Add", "Sub", "Max", "Min", "Clip", "Identity", "Transpose", "ReduceMax", "ReduceMean")
INT_OPS = ("Abs", "Neg", "Relu", "Max", "Min", "Clip", "Identity", "Transpose", "ReduceMax")
#: Integer sums only where the values cannot come near the type's range.
WIDE_INT_OPS = ("Add", "Sub")
BOOL_OPS = ("Not", "And", "Or", "Xor", "Identity", "Transpose")
#: Only in bodies run once (If branches): products grow geometrically when iterated.
ONCE_OPS = ("Mul",)
#: (operator, dtype) pairs onnxruntime 1.32 has no kernel for: a body using one would make
#: the whole construct unsupported there (and support probing would drop it for the dtype).
NO_KERNEL = frozenset({("Atan", dt.FLOAT64), ("Erf", dt.FLOAT64), ("LeakyRelu", dt.FLOAT64),
                       ("Softsign", dt.FLOAT64), ("Relu", dt.INT64)})
BODY_MAX_NODES = 3
#: Attempts at a body whose outputs all come from its operators.
BODY_TRIES = 4
#: Largest magnitude an iterated body's values may reach (from the generator's starting
#: values), per dtype: well inside each type's range, so the input search has room.
GROWTH_CAP = {dt.FLOAT16: 2e3, dt.FLOAT32: 1e6, dt.FLOAT64: 1e6, dt.INT8: 100, dt.UINT8: 255,
              dt.INT32: 1e6, dt.INT64: 1e6, dt.BOOL: 1}
#: Where the generator draws starting values (``graph.ir.random_values``), per dtype.
START = {dt.UINT8: (0.0, 15.0), dt.BOOL: (0.0, 1.0)}
MAX_TRIPS = 5


def body_ops(dtype: str, once: bool) -> tuple:
    """The operators a body over ``dtype`` is generated from (``once``: an If branch)."""
    return tuple(op for op in _body_ops(dtype, once) if (op, dtype) not in NO_KERNEL)


def _body_ops(dtype: str, once: bool) -> tuple:
    if dtype == dt.BOOL:
        return BOOL_OPS
    if dt.is_float(dtype):
        return FLOAT_OPS + (ONCE_OPS if once else ())
    if dtype in (dt.INT32, dt.INT64):
        return INT_OPS + WIDE_INT_OPS + (ONCE_OPS if once else ())
    return INT_OPS + (("Add", "Sub") if dtype == dt.UINT8 else ())  # uint8 wraps around (defined)


def _start(dtype: str) -> tuple:
    if dt.is_float(dtype):
        return (-4.0, 4.0)
    return START.get(dtype, (-8.0, 8.0))


class _BodyGenerator(Generator):
    """The graph generator driven from given input types: the inputs are the first
    placeholders and operators are only inserted forward, so every input stays an input
    (a body may ignore one); further placeholders become constants."""

    def body(self, seed: int, in_types: list) -> Graph:
        cfg = self.cfg
        rng = random.Random(sub_seed(seed, "graph"))
        self.solver.reset()
        opset = self.opset = cfg.opset
        specs = [s for s in self.specs if s.available(opset) and self._sigs(s)]
        ctx = Ctx(rng, cfg.limits, cfg.dtypes, opset)
        st = _State()
        for t in in_types:
            st.placeholders.append(st.add_tensor(t))
        target = rng.randint(cfg.min_nodes, cfg.max_nodes)
        budget = 40 * target + 40
        while specs and len(st.nodes) < target and budget > 0:
            budget -= 1
            if not self._forward(st, specs[rng.randrange(len(specs))], ctx, rng):
                self.stats["failed"] += 1
        k = len(in_types)
        consts = [p for p in st.placeholders[k:] if st.uses[p] > 0]
        g = Graph(tensors=list(st.tensors), nodes=list(st.nodes), inputs=list(range(k)), consts=consts,
                  outputs=[], opset=opset)
        from dlgate.spec.registry import all_specs

        vrng = np.random.Generator(np.random.PCG64(sub_seed(seed, "values")))
        spans = domain_spans(g, all_specs())
        g.values = {t: random_values(vrng, g.tensors[t], spans.get(t)) for t in consts}
        return g


@lru_cache(maxsize=64)
def _generator(ops: tuple, dtypes: tuple, opset: int, limits) -> _BodyGenerator:
    return _BodyGenerator(GenConfig(min_nodes=1, max_nodes=BODY_MAX_NODES, limits=limits, dtypes=dtypes, ops=ops,
                                    opset=opset, forward_prob=1.0, extra_output_prob=0.0))


# -- bodies as attributes --------------------------------------------------------------------

def encode(g: Graph) -> dict:
    """A body as a JSON-serialisable attribute."""
    return {"graph": g.to_json(), "values": [[t, np.asarray(g.values[t]).tolist()] for t in g.consts]}


def decode(body: dict) -> Graph:
    g = Graph.from_json(body["graph"])
    g.values = {t: np.asarray(v, dtype=dt.NUMPY[g.tensors[t].dtype]).reshape(g.tensors[t].shape)
                for t, v in body["values"]}
    return g


def _pick(g: Graph, need: list, rng: random.Random, fits) -> tuple:
    """Body tensors for the outputs: ``need`` holds a type per output, or None for any type
    ``fits`` accepts (a scan output). Tensors no operator consumes come first, then any
    operator's output, then (for a typed output) an input of that type. Returns (tensor
    ids or None, whether every output came from an operator)."""
    produced = [t for n in g.nodes for t in n.outputs]
    consumed = {t for n in g.nodes for t in n.inputs}
    chosen, from_ops = [], True
    for want in need:
        ok = [t for t in produced if t not in chosen and (g.tensors[t] == want if want is not None
                                                          else fits(g.tensors[t]))]
        sinks = [t for t in ok if t not in consumed]
        pool = sinks or ok
        if pool:
            chosen.append(pool[rng.randrange(len(pool))])
            continue
        from_ops = False
        ins = [t for t in g.inputs if (g.tensors[t] == want if want is not None else fits(g.tensors[t]))]
        if not ins:
            return None, False
        chosen.append(ins[rng.randrange(len(ins))])
    return chosen, from_ops


def _prune(g: Graph, outs: list) -> Graph:
    """Only the operators some output depends on; every input kept (in order), the
    constants the kept operators read; tensors renumbered."""
    live, keep = set(outs), []
    for n in reversed(g.nodes):
        if any(t in live for t in n.outputs):
            keep.append(n)
            live.update(n.inputs)
    keep.reverse()
    consts = [t for t in g.consts if t in live]
    remap: dict = {}
    for t in list(g.inputs) + consts + [t for n in keep for t in n.outputs]:
        remap.setdefault(t, len(remap))
    tensors = [None] * len(remap)
    for old, new in remap.items():
        tensors[new] = g.tensors[old]
    from dlgate.graph.ir import Node

    return Graph(tensors=tensors,
                 nodes=[Node(n.op, n.attrs, [remap[t] for t in n.inputs], [remap[t] for t in n.outputs]) for n in keep],
                 inputs=[remap[t] for t in g.inputs], consts=[remap[t] for t in consts],
                 outputs=[remap[t] for t in outs], opset=g.opset,
                 values={remap[t]: g.values[t] for t in consts})


def make_body(ctx: Ctx, in_types: list, need: list, once: bool, fits=lambda t: True) -> Graph | None:
    """A generated body over ``in_types`` whose outputs have the types ``need`` asks for
    (see ``_pick``), pruned; None when no attempt gives one."""
    seed = ctx.rng.getrandbits(63)
    dtypes = tuple(sorted({t.dtype for t in in_types}))
    ops = tuple(sorted({op for d in dtypes for op in body_ops(d, once)}))
    gen = _generator(ops, dtypes, ctx.opset, ctx.limits)
    best = None
    for k in range(BODY_TRIES):
        g = gen.body(sub_seed(seed, f"body{k}"), in_types)
        outs, from_ops = _pick(g, need, random.Random(sub_seed(seed, f"pick{k}")), fits)
        if outs is None:
            continue
        best = _prune(g, outs)
        if from_ops:
            break
    return best


# -- running a body ------------------------------------------------------------------------

def run_body(g: Graph, feeds: list, check: bool = False) -> tuple:
    """(outputs, why undefined or None) of body ``g`` on torch tensors ``feeds``, node by
    node with each operator's PyTorch implementation. Float16 inputs given as float64 (the
    oracle's widened evaluation) widen the body's float16 constants too. With ``check``,
    each operator's ``undefined`` is asked on its inputs (signed overflow...)."""
    from dlgate.spec.registry import get

    wide = any(g.tensors[t].dtype == dt.FLOAT16 and x.dtype == torch.float64 for t, x in zip(g.inputs, feeds))
    env = dict(zip(g.inputs, feeds))
    for t in g.consts:
        x = torch.from_numpy(np.array(g.values[t], copy=True))
        env[t] = x.double() if wide and g.tensors[t].dtype == dt.FLOAT16 else x
    why = None
    for i, n in enumerate(g.nodes):
        spec = get(n.op)
        ins = [env[t] for t in n.inputs]
        outs = spec.torch(n.attrs, *ins)
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        if check and why is None:
            w = spec.undefined(n.attrs, ins, [g.tensors[t] for t in n.outputs])
            if w:
                why = f"{n.op} (body node {i}): {w}"
        for t, y in zip(n.outputs, outs):
            env[t] = y
    return [env[t] for t in g.outputs], why


def body_ranges(g: Graph, in_ranges: list) -> list:
    """Bounds on the body's outputs given bounds on its inputs, from each operator's own
    ``out_bounds`` (constants' values are known exactly: the input search does not move
    them)."""
    from dlgate.spec.registry import get

    r = dict(zip(g.inputs, in_ranges))
    for t in g.consts:
        v = np.asarray(g.values[t], dtype=np.float64)
        r[t] = (float(v.min()), float(v.max())) if v.size else UNBOUNDED
    for n in g.nodes:
        spec = get(n.op)
        outs = spec.out_bounds(n.attrs, [r[t] for t in n.inputs], [g.tensors[t] for t in n.inputs],
                               [g.tensors[t] for t in n.outputs])
        for t, b in zip(n.outputs, outs):
            r[t] = b
    return [r[t] for t in g.outputs]


def _union(p: tuple, q: tuple) -> tuple:
    return (min(p[0], q[0]), max(p[1], q[1]))


def _within(r: tuple, dtype: str) -> bool:
    cap = GROWTH_CAP[dtype]
    return -cap <= r[0] and r[1] <= cap


def _discontinuous(*bodies) -> bool:
    from dlgate.spec.registry import get

    return any(get(n.op).discontinuous(n.attrs) for body in bodies for n in decode(body).nodes)


def _reference_defect(*bodies) -> str | None:
    """A defect of onnx.reference's evaluation of a body's operators."""
    for body in bodies:
        g = decode(body)
        if any(n.op == "Softsign" and g.tensors[n.inputs[0]].rank == 0 for n in g.nodes):
            return ("onnx.reference's Softsign writes into a NumPy scalar for a rank-0 input (TypeError 'return "
                    "arrays must be of ArrayType')")
    return None


def _emit(sb, g: Graph, names: dict) -> tuple:
    """Lower body ``g`` into ``sb``: (outputs as (name, type) pairs, value infos). A body
    output that is one of its inputs (or a repeat) becomes an Identity of it."""
    from dlgate.materialize.onnx_model import lower_graph

    names = lower_graph(sb, g, names)
    inputs, used, outs = set(g.inputs), set(), []
    for t in g.outputs:
        n = names[t]
        if t in inputs or n in used:
            n = sb.node("Identity", [n], [sb.fresh("out")])[0]
        used.add(n)
        outs.append((n, g.tensors[t]))
    vis = [(names[t], g.tensors[t]) for nd in g.nodes for t in nd.outputs if names[t] not in used]
    return outs, vis


def _partner(ctx: Ctx, t: TensorType, cap: int = 256) -> TensorType:
    """The type of a second input: the first's, or another small shape of its dtype."""
    if ctx.coin(0.5):
        return t
    rank = ctx.rng.randint(0, min(3, ctx.limits.max_rank))
    return TensorType(t.dtype, ctx.shape(rank, min(cap, ctx.limits.max_elems)))


def _numel(shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1


_BAD = {"invalid": True}  # attributes no instance accepts (no body could be generated)

#: What no body holds, for every construct.
BODY_GAPS = (
    ("nested control flow (If, Loop or Scan inside a body)", "bodies draw from a fixed set of element-wise "
     "operators, which keeps them small, bounded and reducible"),
    ("body operators onnxruntime 1.32 has no kernel for at a dtype (NO_KERNEL: float64 Atan, Erf, LeakyRelu, "
     "Softsign; int64 Relu)", "one would make the whole construct unsupported there, and support probing would "
     "drop it for that dtype"),
)


# -- If --------------------------------------------------------------------------------------

def _eighths(v: float) -> float:
    """``v`` to the nearest multiple of 1/8: a threshold every float type holds exactly."""
    return round(v * 8) / 8


class If(OpSpec):
    """``If(cond)`` whose branches read the two inputs ``x`` and ``y`` from the outer scope
    (as exporters write them) and give one or two outputs of the types of ``x`` (and
    ``y``); both branches are generated bodies with the same output types.

    The condition is computed from ``x`` by the lowering: ``ReduceSum(x) > thr``,
    ``ReduceMax(x) > thr`` (``keepdims`` 0, or 1: a single-element condition of ``x``'s
    rank), the first element ``> thr`` (a scalar from Reshape and Gather, or a
    one-element tensor from Slice), or for bool ``x`` the first element itself or "any"
    (Cast to int32, ReduceMax, Cast back). Thresholds are picked so that either branch is
    about as likely on the generator's starting values; the branch taken jumps, so the
    spec is discontinuous, and a float sum within rounding of its threshold is reported
    as ill-conditioned (``undefined``).

    Not generated: a data input of another dtype than ``x``'s (``sample`` sees only the
    first input, and both branches must be generated there); branch outputs whose shapes
    differ (legal from opset 11 on, but dlgate's types are static); If as a body operator.
    """

    onnx_op = "If"
    onnx_ops = ("ReduceSum", "ReduceMax", "Greater", "Reshape", "Gather", "Slice", "Cast", "Identity")
    #: The inputs are none of If's formal inputs: the branches read them from the outer scope.
    schema_inputs = ()
    arity = 2
    n_outputs = 2
    dtypes = tuple((t, t) for t in dt.ALL)
    ranks = (0, 1, 2, 3, 4)
    symbolic_ok = False
    jumps = True
    gaps: ClassVar[tuple] = (
        ("a data input of another dtype than the condition's source", "sample() sees only the first input, and "
         "both branches (over every input) are generated there"),
        ("branch outputs whose shapes differ (opset 11+ allows it)", "dlgate's tensor types are static"),
        ("Exp and operators with restricted domains or jumps inside branches", "keeps every branch's values "
         "bounded and defined whatever the inputs"),
    ) + BODY_GAPS

    def _cond_modes(self, dtype: str) -> tuple:
        if dtype == dt.BOOL:
            return ("any", "first", "first1")
        if dtype in (dt.INT8, dt.UINT8):
            return ("max", "first", "first1")
        return ("sum", "max", "first", "first1")

    def _threshold(self, ctx, mode: str, dtype: str, n: int) -> float | int | None:
        if dtype == dt.BOOL:
            return None
        lo, hi = _start(dtype)
        if mode == "sum":
            return _eighths(ctx.choice((0.0, 0.0, 0.5, -0.5))) if dt.is_float(dtype) else 0
        if mode == "max":  # the median of the maximum of n uniform values
            m = lo + (hi - lo) * 0.5 ** (1.0 / max(1, n))
        else:
            m = (lo + hi) / 2
        return _eighths(m) if dt.is_float(dtype) else int(math.floor(m))

    def sample(self, ctx, ins):
        x = ins[0]
        y = _partner(ctx, x)
        mode = ctx.choice(self._cond_modes(x.dtype))
        a = {"cond": mode, "keep": int(mode in ("sum", "max") and ctx.coin(0.25)),
             "thr": self._threshold(ctx, mode, x.dtype, _numel(x.shape)), "n_out": ctx.choice((1, 2))}
        need = [x, y][:a["n_out"]]
        for key in ("then", "else"):
            g = make_body(ctx, [x, y], need, once=True)
            if g is None:
                return dict(_BAD)
            a[key] = encode(g)
        return a

    def _types(self, a) -> list:
        return decode(a["then"]).input_types()

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0] if a.get("invalid") else self._types(a)[i]

    def requires(self, ins, a):
        # every attribute checked against the bodies: the reducer tries other values
        if a.get("invalid") or a.get("n_out") not in (1, 2) or a.get("keep") not in (0, 1):
            return [False]
        t, e = decode(a["then"]), decode(a["else"])
        x = ins[0]
        ok = (list(ins) == t.input_types() == e.input_types()
              and t.output_types() == e.output_types() == list(ins[:a["n_out"]])
              and a["cond"] in self._cond_modes(x.dtype) and (a["thr"] is None) == (x.dtype == dt.BOOL))
        return [ok]

    def infer(self, ins, a):
        return list(ins[:a["n_out"]])

    def backward(self, ctx, out):
        if out.rank not in self.ranks:
            return None
        a = self.sample(ctx, [out])
        if a.get("invalid"):
            return None
        return self._types(a), a

    def value_range(self, a, ranges, ins):
        t = body_ranges(decode(a["then"]), ranges)
        e = body_ranges(decode(a["else"]), ranges)
        return [_union(p, q) for p, q in zip(t, e)]

    def discontinuous(self, a):
        return True

    def reference_defect(self, a, ins, opset):
        return _reference_defect(a["then"], a["else"])

    # -- the condition --
    def _cond(self, a, x) -> bool:
        mode, thr = a["cond"], a["thr"]
        if mode == "any":
            return bool(x.any())
        if mode in ("first", "first1"):
            v = x.reshape(-1)[0]
            return bool(v) if x.dtype == torch.bool else bool(v.double() > thr)
        if mode == "max":
            return bool(x.max().double() > thr)
        return bool(x.double().sum() > thr)

    def undefined(self, a, ins, out_types):
        x, y = ins
        if a["cond"] == "sum" and x.is_floating_point():
            xd = x.detach().double()
            s, mag = float(xd.sum()), float(xd.abs().sum())
            eps = torch.finfo(dt.torch_dtype(self._types(a)[0].dtype)).eps
            if abs(s - a["thr"]) <= 2 * xd.numel() * eps * mag:
                return (f"ill-conditioned: the condition ReduceSum(x) = {s:.6g} is within rounding of its "
                        f"threshold {a['thr']}, so the branch taken depends on the summation order")
        g = decode(a["then"] if self._cond(a, x) else a["else"])
        return run_body(g, [x, y], check=True)[1]

    def torch(self, a, x, y):
        g = decode(a["then"] if self._cond(a, x) else a["else"])
        outs = run_body(g, [x, y])[0]
        return tuple(outs) if len(outs) > 1 else outs[0]

    def _cond_onnx(self, b, a, x: str) -> str:
        mode, t = a["cond"], self._types(a)[0].dtype
        if mode == "any":
            i = b.node("Cast", [x], 1, to=TensorProto.INT32)[0]
            m = self._reduce(b, "ReduceMax", i, 0)
            return b.node("Cast", [m], 1, to=TensorProto.BOOL)[0]
        if mode in ("first", "first1"):
            flat = b.node("Reshape", [x, b.ints([-1])], 1)[0]
            if mode == "first":
                v = b.node("Gather", [flat, b.const(np.int64(0))], 1, axis=b.opt(0, 0))[0]
            else:
                v = b.node("Slice", [flat, b.ints([0]), b.ints([1])], 1)[0]
        else:
            v = self._reduce(b, "ReduceSum" if mode == "sum" else "ReduceMax", x, a["keep"])
        if t == dt.BOOL:
            return v
        return b.node("Greater", [v, b.const(a["thr"], t)], 1)[0]

    @staticmethod
    def _reduce(b, op: str, x: str, keep: int) -> str:
        # axes omitted: every axis (an input from opset 13 for ReduceSum, 18 for ReduceMax)
        return b.node(op, [x], 1, keepdims=keep)[0]

    def onnx(self, b, a, xs, ys):
        from dlgate.materialize.onnx_model import SubBuilder, make_subgraph

        cond = self._cond_onnx(b, a, xs[0])
        prefix = b.fresh("if")
        branches = {}
        for key in ("then", "else"):
            g = decode(a[key])
            sb = SubBuilder(b.opset, b.rng, f"{prefix}_{key}_")
            outs, vis = _emit(sb, g, {g.inputs[0]: xs[0], g.inputs[1]: xs[1]})
            branches[f"{key}_branch"] = make_subgraph(sb, f"{prefix}_{key}", [], outs, vis)
        b.node("If", [cond], ys, **branches)


# -- Loop ------------------------------------------------------------------------------------

class Loop(OpSpec):
    """``Loop(M, cond, v, [w])`` with a constant trip count ``M`` in 1..5 and no early exit.

    The body maps the loop-carried ``v`` to a new ``v`` of the same type and gives 0..2
    scan outputs (any of its tensors, stacked over the iterations on a new axis 0). The
    second input ``w`` is read by the body from the outer scope (``w="outer"``), carried
    and updated like ``v`` (``"carried"``), or carried unchanged (``"pass"``, an Identity
    in the body: how exporters hand a tensor into a loop). ``iter``: the body also reads
    the iteration number (cast to the data type). ``cond_in``: the condition input is a
    constant True or absent (""); ``cond_out``: the body passes its condition input on
    or outputs a Constant True.

    Not generated: early exit (a condition computed from the data), an absent trip count
    (both make the trip count, and the scan outputs' shapes, depend on values); a zero
    trip count (zero-size tensors are never generated); carried values that change shape
    across iterations; products and exponentials in bodies (geometric growth).
    """

    onnx_op = "Loop"
    onnx_ops = ("Cast", "Identity", "Constant")
    schema_inputs = (2,)  # the data inputs are v_initial
    arity = 2
    n_outputs = 2
    dtypes = tuple((t, t) for t in dt.ALL)
    ranks = (0, 1, 2, 3, 4)
    symbolic_ok = False
    gaps: ClassVar[tuple] = (
        ("early exit (a condition computed from the data) and an absent trip count M", "the trip count, and the "
         "scan outputs' shapes with it, would depend on values; dlgate's types are static"),
        ("M = 0", "zero-size tensors are never generated"),
        ("loop-carried values that change shape across iterations", "dlgate's tensor types are static"),
        ("Mul, Exp and operators with restricted domains or jumps in bodies", "values iterated up to 5 times must "
         "stay bounded and defined"),
    ) + BODY_GAPS

    def sample(self, ctx, ins):
        v = ins[0]
        w = _partner(ctx, v)
        trips = ctx.rng.randint(1, MAX_TRIPS)
        a = {"trips": trips, "w": ctx.choice(("outer", "carried", "pass")),
             "iter": int(v.dtype != dt.BOOL and ctx.coin(0.5)),
             "cond_in": ctx.choice(("const", "empty")), "cond_out": ctx.choice(("pass", "const")),
             "n_scan": ctx.choice((0, 1, 1, 2))}
        in_types = [v, w] + ([TensorType(v.dtype, ())] if a["iter"] else [])
        need = [v] + ([w] if a["w"] == "carried" else []) + [None] * a["n_scan"]
        fits = (lambda t: trips * _numel(t.shape) <= ctx.limits.max_elems and t.rank < ctx.limits.max_rank)
        for _ in range(3):
            g = make_body(ctx, in_types, need, once=False, fits=fits)
            if g is None:
                break
            a["body"] = encode(g)
            lo, hi = _start(v.dtype)
            if all(_within(r, v.dtype) for r in self.value_range(a, [(lo, hi), (lo, hi)], [v, w])):
                return a
        return dict(_BAD)

    def _body(self, a) -> Graph:
        return decode(a["body"])

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0] if a.get("invalid") else self._body(a).input_types()[i]

    def requires(self, ins, a):
        if a.get("invalid"):
            return [False]
        if a.get("iter") not in (0, 1) or not isinstance(a.get("trips"), int) or a["trips"] < 1 \
                or a.get("n_scan", -1) < 0:
            return [False]
        g = self._body(a)
        n_car = 2 if a["w"] == "carried" else 1
        types, outs = g.input_types(), g.output_types()
        ok = (list(ins) == types[:2] and len(types) == 2 + a["iter"] and len(outs) == n_car + a["n_scan"]
              and outs[:n_car] == list(ins[:n_car]) and not (a["iter"] and ins[0].dtype == dt.BOOL))
        return [ok]

    def infer(self, ins, a):
        g = self._body(a)
        outs = g.output_types()
        n_car = 2 if a["w"] == "carried" else 1
        scans = [TensorType(t.dtype, (a["trips"],) + tuple(t.shape)) for t in outs[n_car:]]
        return list(ins[:1]) + ([ins[1]] if a["w"] != "outer" else []) + scans

    def backward(self, ctx, out):
        if out.rank not in self.ranks:
            return None
        a = self.sample(ctx, [out])
        if a.get("invalid"):
            return None
        return self._body(a).input_types()[:2], a

    def value_range(self, a, ranges, ins):
        g = self._body(a)
        n_car = 2 if a["w"] == "carried" else 1
        v, w = ranges[0], ranges[1]
        acc = None
        for _ in range(a["trips"]):
            outs = body_ranges(g, [v, w] + ([(0.0, float(a["trips"] - 1))] if a["iter"] else []))
            v = outs[0]
            if n_car == 2:
                w = outs[1]
            acc = outs[n_car:] if acc is None else [_union(p, q) for p, q in zip(acc, outs[n_car:])]
        return [v] + ([w] if a["w"] != "outer" else []) + list(acc or [])

    def _execute(self, a, v, w, check=False):
        g = self._body(a)
        n_car = 2 if a["w"] == "carried" else 1
        why = None
        scans = [[] for _ in g.outputs[n_car:]]
        for i in range(a["trips"]):
            feeds = [v, w]
            if a["iter"]:
                feeds.append(torch.tensor(i, dtype=v.dtype))
            outs, w_ = run_body(g, feeds, check)
            why = why or w_
            v = outs[0]
            if n_car == 2:
                w = outs[1]
            for s, y in zip(scans, outs[n_car:]):
                s.append(y)
        res = [v] + ([w] if a["w"] != "outer" else []) + [torch.stack(s, 0) for s in scans]
        return res, why

    def undefined(self, a, ins, out_types):
        return self._execute(a, *ins, check=True)[1]

    def discontinuous(self, a):
        return _discontinuous(a["body"])

    def reference_defect(self, a, ins, opset):
        if _reference_defect(a["body"]):
            return _reference_defect(a["body"])
        if a["cond_in"] == "empty":
            return "onnx.reference's Loop runs no iteration when the condition input is absent (while None)"
        ranks = [t.rank for t in self._body(a).output_types()[2 if a["w"] == "carried" else 1:]]
        if any(r != 1 for r in ranks):
            return "onnx.reference's Loop stacks scan outputs with np.vstack, wrong unless they are 1-D"
        return None

    def torch(self, a, v, w):
        outs = self._execute(a, v, w)[0]
        return tuple(outs) if len(outs) > 1 else outs[0]

    def onnx(self, b, a, xs, ys):
        from dlgate.materialize.onnx_model import SubBuilder, make_subgraph

        g = self._body(a)
        v, w = g.input_types()[:2]
        prefix = b.fresh("loop")
        sb = SubBuilder(b.opset, b.rng, f"{prefix}_")
        it, c_in = f"{prefix}_iter", f"{prefix}_cond_in"
        formal = [(it, TensorType(dt.INT64, ())), (c_in, TensorType(dt.BOOL, ())), (f"{prefix}_v", v)]
        names = {g.inputs[0]: f"{prefix}_v"}
        if a["w"] == "outer":
            names[g.inputs[1]] = xs[1]
        else:
            formal.append((f"{prefix}_w", w))
            names[g.inputs[1]] = f"{prefix}_w"
        vis = []
        if a["iter"]:
            names[g.inputs[2]] = sb.node("Cast", [it], [f"{prefix}_it"], to=dt.ONNX[v.dtype])[0]
            vis.append((f"{prefix}_it", TensorType(v.dtype, ())))
        outs, more = _emit(sb, g, names)
        if a["w"] == "pass":
            outs.insert(1, (sb.node("Identity", [f"{prefix}_w"], [sb.fresh("w_out")])[0], w))
        if a["cond_out"] == "pass":
            c_out = sb.node("Identity", [c_in], [f"{prefix}_cond_out"])[0]
        else:
            c_out = sb.node("Constant", [], [f"{prefix}_cond_out"],
                            value=helper.make_tensor("value", TensorProto.BOOL, [], [True]))[0]
        body = make_subgraph(sb, f"{prefix}_body", formal, [(c_out, TensorType(dt.BOOL, ()))] + outs, vis + more)
        trips = b.const(np.int64(a["trips"]))
        cond = b.const(np.bool_(True)) if a["cond_in"] == "const" else ""
        b.node("Loop", [trips, cond, xs[0]] + ([xs[1]] if a["w"] != "outer" else []), ys, body=body)


# -- Scan ------------------------------------------------------------------------------------

class Scan(OpSpec):
    """``Scan(s, x)`` (the opset 9+ form) over one scan input ``x`` of sequence length 1..5
    along ``scan_input_axes`` (sometimes spelled negatively), forward or reversed
    (``scan_input_directions``), with ``n_state`` (0 or 1) state variables (``s``) and
    0..2 scan outputs (1..2 without a state), each stacked along its own
    ``scan_output_axes`` entry, appended or prepended (``scan_output_directions``). The
    body may also read ``s`` from the outer scope (``outer``; always without a state).
    Each scanned element is ``x``'s shape without the scan axis: the state's shape half of
    the time, so the body combines them element-wise.

    Not generated: more than one scan input (the spec's arity is fixed); zero-length
    sequences (zero-size tensors are never generated); the opset 8 form (batch axis).
    """

    onnx_op = "Scan"
    onnx_ops = ("Identity",)
    arity = 2
    n_outputs = 2
    dtypes = tuple((t, t) for t in dt.ALL)
    ranks = (0, 1, 2, 3)
    symbolic_ok = False
    gaps: ClassVar[tuple] = (
        ("more than one scan input", "a spec's arity is fixed; one scan input covers the axis and direction "
         "attributes"),
        ("zero-length sequences", "zero-size tensors are never generated"),
        ("Mul, Exp and operators with restricted domains or jumps in bodies", "values carried through the "
         "sequence must stay bounded and defined"),
    ) + BODY_GAPS

    def sample(self, ctx, ins):
        s = ins[0]
        length = ctx.rng.randint(1, MAX_TRIPS)
        cap = max(1, ctx.limits.max_elems // length)
        elem = s if ctx.coin(0.5) and s.numel <= cap and s.rank < ctx.limits.max_rank else \
            TensorType(s.dtype, ctx.shape(ctx.rng.randint(0, min(2, ctx.limits.max_rank - 1)), min(cap, 256)))
        ax = ctx.rng.randint(0, elem.rank)
        xr = elem.rank + 1
        n_state = int(ctx.coin(0.8))
        a = {"length": length, "n_state": n_state, "outer": int(n_state == 0 or ctx.coin(0.3)),
             "in_axis": ax - xr if ctx.coin(0.3) else ax, "in_dir": int(ctx.coin(0.5)),
             "x": list(elem.shape[:ax]) + [length] + list(elem.shape[ax:])}
        in_types = [s] * n_state + [elem] + [s] * a["outer"]
        k = ctx.choice((1, 1, 2) if n_state == 0 else (0, 1, 1, 2))
        need = [s] * n_state + [None] * k
        fits = (lambda t: length * _numel(t.shape) <= ctx.limits.max_elems and t.rank < ctx.limits.max_rank)
        for _ in range(3):
            g = make_body(ctx, in_types, need, once=False, fits=fits)
            if g is None:
                break
            a["body"] = encode(g)
            ranks = [t.rank + 1 for t in g.output_types()[n_state:]]
            axes = [ctx.rng.randrange(r) for r in ranks]
            a["out_axes"] = [x - r if ctx.coin(0.3) else x for x, r in zip(axes, ranks)]
            a["out_dirs"] = [int(ctx.coin(0.5)) for _ in ranks]
            lo, hi = _start(s.dtype)
            if all(_within(r, s.dtype) for r in self.value_range(a, [(lo, hi), (lo, hi)], [s, self._x(a, s.dtype)])):
                return a
        return dict(_BAD)

    @staticmethod
    def _x(a, dtype) -> TensorType:
        return TensorType(dtype, tuple(a["x"]))

    def _body(self, a) -> Graph:
        return decode(a["body"])

    def input_type(self, ctx, i, ins, a, dtype):
        return ins[0] if a.get("invalid") else self._x(a, ins[0].dtype)

    def requires(self, ins, a):
        if a.get("invalid"):
            return [False]
        n, xr = a.get("n_state"), len(a["x"])
        if n not in (0, 1) or a.get("outer") not in (0, 1) or not (n or a["outer"]) \
                or a.get("in_dir") not in (0, 1) or not -xr <= a["in_axis"] < xr:
            return [False]
        g = self._body(a)
        types, outs = g.input_types(), g.output_types()
        if len(types) != n + 1 + a["outer"] or len(outs) != n + len(a["out_axes"]) \
                or len(a["out_dirs"]) != len(a["out_axes"]):
            return [False]
        ax = a["in_axis"] % xr
        elem = tuple(a["x"][:ax] + a["x"][ax + 1:])
        ok = (ins[0] == types[0] == types[-1] if n and a["outer"] else ins[0] == types[0] if n else ins[0] == types[-1])
        ok = (ok and ins[1] == self._x(a, ins[0].dtype) and types[n].shape == elem and a["length"] == a["x"][ax]
              and outs[:n] == list(ins[:n]) and all(d in (0, 1) for d in a["out_dirs"])
              and all(-(t.rank + 1) <= x <= t.rank for x, t in zip(a["out_axes"], outs[n:])))
        return [ok]

    def infer(self, ins, a):
        g = self._body(a)
        outs = g.output_types()
        n = a["n_state"]
        scans = []
        for t, ax in zip(outs[n:], a["out_axes"]):
            ax %= t.rank + 1
            scans.append(TensorType(t.dtype, tuple(t.shape[:ax]) + (a["length"],) + tuple(t.shape[ax:])))
        return list(outs[:n]) + scans

    def backward(self, ctx, out):
        if out.rank not in self.ranks:
            return None
        for _ in range(2):
            a = self.sample(ctx, [out])
            if not a.get("invalid") and a["n_state"] == 1:
                return [out, self._x(a, out.dtype)], a
        return None

    def value_range(self, a, ranges, ins):
        g = self._body(a)
        n = a["n_state"]
        s0, x = ranges[0], ranges[1]
        s, acc = s0, None
        for _ in range(a["length"]):
            outs = body_ranges(g, [s] * n + [x] + [s0] * a["outer"])
            if n:
                s = outs[0]
            acc = outs[n:] if acc is None else [_union(p, q) for p, q in zip(acc, outs[n:])]
        return [s] * n + list(acc or [])

    def _execute(self, a, s0, x, check=False):
        g = self._body(a)
        n = a["n_state"]
        ax = a["in_axis"] % x.dim()
        steps = range(a["length"])
        if a["in_dir"]:
            steps = reversed(steps)
        s, why = s0, None
        scans = [[] for _ in g.outputs[n:]]
        for j in steps:
            outs, w = run_body(g, [s] * n + [x.select(ax, j)] + [s0] * a["outer"], check)
            why = why or w
            if n:
                s = outs[0]
            for acc, y in zip(scans, outs[n:]):
                acc.append(y)
        res = [s] * n
        for acc, oax, d in zip(scans, a["out_axes"], a["out_dirs"]):
            if d:
                acc = acc[::-1]
            res.append(torch.stack(acc, oax % (acc[0].dim() + 1)))
        return res, why

    def undefined(self, a, ins, out_types):
        return self._execute(a, *ins, check=True)[1]

    def discontinuous(self, a):
        return _discontinuous(a["body"])

    def reference_defect(self, a, ins, opset):
        if _reference_defect(a["body"]):
            return _reference_defect(a["body"])
        if a["in_axis"] != 0 or a["in_dir"] or any(a["out_axes"]) or any(a["out_dirs"]):
            return ("onnx.reference's Scan implements only axis 0 and forward directions (RuntimeError "
                    "'Scan is not implemented for other ...')")
        return None

    def torch(self, a, s, x):
        outs = self._execute(a, s, x)[0]
        return tuple(outs) if len(outs) > 1 else outs[0]

    def onnx(self, b, a, xs, ys):
        from dlgate.materialize.onnx_model import SubBuilder, make_subgraph

        g = self._body(a)
        types = g.input_types()
        n = a["n_state"]
        prefix = b.fresh("scan")
        sb = SubBuilder(b.opset, b.rng, f"{prefix}_")
        formal, names = [], {}
        if n:
            formal.append((f"{prefix}_s", types[0]))
            names[g.inputs[0]] = f"{prefix}_s"
        formal.append((f"{prefix}_e", types[n]))
        names[g.inputs[n]] = f"{prefix}_e"
        if a["outer"]:
            names[g.inputs[n + 1]] = xs[0]
        outs, vis = _emit(sb, g, names)
        body = make_subgraph(sb, f"{prefix}_body", formal, outs, vis)
        k = len(a["out_axes"])
        attrs = {"body": body, "num_scan_inputs": 1,
                 "scan_input_axes": b.opt([a["in_axis"]], [0]),
                 "scan_input_directions": b.opt([a["in_dir"]], [0])}
        if k:
            attrs["scan_output_axes"] = b.opt(list(a["out_axes"]), [0] * k)
            attrs["scan_output_directions"] = b.opt(list(a["out_dirs"]), [0] * k)
        b.node("Scan", ([xs[0]] if n else []) + [xs[1]], ys, **attrs)


OPS = [If, Loop, Scan]
