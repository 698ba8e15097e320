"""What the control operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations

import random

import numpy as np
import torch

from dlgate import dtypes as dt
from dlgate.graph.ir import Graph, Node
from dlgate.materialize.onnx_model import lower_graph
from dlgate.ops.base import UNBOUNDED, Ctx, TensorType
from dlgate.ops.registry import get
from dlgate.seeds import sub_seed


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
    if ctx.body_graph is None:
        raise RuntimeError("a control operator's body is drawn through Ctx.body_graph (the generator's "
                           "dlgate.graph.generator.body_graph): this Ctx has none")
    best = None
    for k in range(BODY_TRIES):
        g = ctx.body_graph(sub_seed(seed, f"body{k}"), in_types, ops, dtypes, ctx.opset, ctx.limits, BODY_MAX_NODES)
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
