"""What every rewrite shares: the twin it makes, the identity chains inserted on one tensor
(in the ONNX model and in the graph alike), and the validity check every twin passes."""
from __future__ import annotations

import copy
import hashlib
import random
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dlgate.graph.ir import Graph, Node
from dlgate.ops.base import TensorType

#: The domain of the model-local functions a rewrite writes.
LOCAL_DOMAIN = "dlgate.local"
#: The prefix of every name (node, tensor, constant) a rewrite adds to the ONNX model.
PREFIX = "rw"


@dataclass
class Twin:
    """A rewritten model equivalent to the case's: ``model`` (ONNX bytes) for the backends
    that read ONNX, ``graph`` for those that read dlgate's graph (PyTorch-based ones).
    ``graph_changed`` is False for a rewrite of the ONNX form alone (a local function):
    those backends then have no twin to run. ``where`` records what was done, and where."""

    kind: str
    where: dict
    model: bytes
    graph: Graph
    graph_changed: bool = True
    seed: int = 0

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.model).hexdigest()

    def meta(self) -> dict:
        return {"kind": self.kind, "where": self.where, "seed": self.seed, "sha256": self.sha256,
                "graph_changed": self.graph_changed}


class Rewrite:
    """One semantics-preserving rewrite. ``applies`` says where, in words (the docs table);
    ``apply`` returns the twin, or None when the case has no place it applies. It must be
    a pure function of (graph, model, rng): same inputs, byte-identical twin."""

    name: str = ""
    applies: str = ""

    def apply(self, graph: Graph, model: onnx.ModelProto, rng: random.Random, prefer: dict | None = None) -> Twin | None:
        """``prefer``: the ``where`` of an earlier twin; a rewrite that picks a site picks
        among those like it first (the reducer keeps a finding's site through its cuts)."""
        raise NotImplementedError


class NotEquivalent(ValueError):
    """A twin that fails ONNX's full checker: dlgate's mistake, never run."""


def validate(model: onnx.ModelProto) -> None:
    """ONNX's full checker, strict shape inference included: a twin that fails it is never
    run (a compiler owes nothing to an invalid model)."""
    try:
        onnx.checker.check_model(model, full_check=True)
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except Exception as e:  # onnx raises ValidationError and InferenceError
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise NotEquivalent(f"the rewritten model is not valid ONNX: {first[:300]}") from None


def copy_graph(g: Graph) -> Graph:
    """A copy whose node and tensor lists can be edited without touching ``g``."""
    return Graph(list(g.tensors), [Node(n.op, dict(n.attrs), list(n.inputs), list(n.outputs)) for n in g.nodes],
                 list(g.inputs), list(g.consts), list(g.outputs), g.opset, dict(g.values), g.dynamic, g.extreme,
                 g.redrawn, g.aimed)


def opset_of(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


# -- identity chains --------------------------------------------------------------------

@dataclass
class Step:
    """One operator of an identity chain: a spec of dlgate's catalogue (``op``, ``attrs``,
    the graph side) and its ONNX node (``onnx_attrs``; ``const``: a second input, written
    as an initializer). ``out``: the type it produces."""

    op: str
    attrs: dict
    out: TensorType
    onnx_attrs: dict = field(default_factory=dict)
    const: np.ndarray | None = None
    #: A second input of the ONNX node only (Reshape's target shape, which the graph's
    #: Reshape holds as an attribute).
    onnx_const: np.ndarray | None = None


def sites(graph: Graph, ok) -> list:
    """``(tensor, mode)`` pairs where a chain may go, in a fixed order: ``consumers`` (every
    node reading the tensor reads the chain's end instead; the tensor has readers) and
    ``producer`` (its producing node writes a fresh tensor that the chain turns back into
    it; every reader, and the graph's outputs, keep their name). ``ok(TensorType)``:
    whether the chain fits the tensor's type."""
    consumers = graph.consumers()
    produced = graph.producers()
    out = []
    for t, ty in enumerate(graph.tensors):
        if not ok(ty):
            continue
        if consumers.get(t):
            out.append((t, "consumers"))
        if t in produced:
            out.append((t, "producer"))
    return out


def insert_chain(graph: Graph, model: onnx.ModelProto, t: int, mode: str, steps: list) -> tuple:
    """``(graph', model')`` with ``steps`` inserted on tensor ``t`` (see :func:`sites`), in
    both forms: the ONNX model is the case's own, edited (every other node, name and
    attribute spelling is kept byte for byte), and the graph the same edit in dlgate's
    terms. New tensors take the graph's next ids and their ``t<id>`` names."""
    g = copy_graph(graph)
    m = copy.deepcopy(model)
    names = _names(m)
    start = len(g.tensors)
    chain_ids: list = []  # the tensor each step writes
    nodes_g: list = []
    nodes_o: list = []
    inits: list = []
    src = t
    if mode == "producer":
        fresh = len(g.tensors)
        g.tensors.append(graph.tensors[t])
        src = fresh
    cur = src
    for k, s in enumerate(steps):
        last = k == len(steps) - 1
        if last and mode == "producer":
            dst = t
        else:
            dst = len(g.tensors)
            g.tensors.append(s.out)
        ins = [cur]
        if s.const is not None:
            c = len(g.tensors)
            g.tensors.append(TensorType(s.const.dtype.name, tuple(s.const.shape)))
            g.consts.append(c)
            g.values[c] = s.const
            ins.append(c)
            inits.append(numpy_helper.from_array(s.const, g.name(c)))
        onnx_ins = [g.name(i) for i in ins]
        if s.onnx_const is not None:
            onnx_ins.append(f"{PREFIX}{k}_{s.op}_c")
            inits.append(numpy_helper.from_array(s.onnx_const, onnx_ins[-1]))
        nodes_g.append(Node(s.op, dict(s.attrs), ins, [dst]))
        nodes_o.append(helper.make_node(_onnx_op(s.op), onnx_ins, [g.name(dst)],
                                        name=f"{PREFIX}{k}_{s.op}", **s.onnx_attrs))
        chain_ids.append(dst)
        cur = dst
    clash = names & ({n.name for n in nodes_o} | {i.name for i in inits}
                     | {g.name(i) for i in range(start, len(g.tensors))})
    if clash:
        raise NotEquivalent(f"names the rewrite would add already exist: {sorted(clash)[:3]}")
    end = cur
    produced = graph.producers()
    # the graph
    if mode == "producer":
        p = produced[t]
        g.nodes[p].outputs = [src if o == t else o for o in g.nodes[p].outputs]
        g.nodes[p + 1:p + 1] = nodes_g
    else:
        for n in g.nodes:
            n.inputs = [end if i == t else i for i in n.inputs]
        at = produced[t] + 1 if t in produced else 0
        g.nodes[at:at] = nodes_g
    # the ONNX model: the node writing t (a dlgate operator may lower to several nodes)
    name = graph.name(t)
    onodes = list(m.graph.node)
    writer = next((i for i, n in enumerate(onodes) if name in n.output), None)
    if mode == "producer":
        node = onodes[writer]
        for i, o in enumerate(node.output):
            if o == name:
                node.output[i] = g.name(src)
    else:
        for n in onodes:
            for i, x in enumerate(n.input):
                if x == name:
                    n.input[i] = g.name(end)
    at = writer + 1 if writer is not None else 0
    onodes[at:at] = nodes_o
    del m.graph.node[:]
    m.graph.node.extend(onodes)
    m.graph.initializer.extend(inits)
    return g, m


def _onnx_op(spec: str) -> str:
    from dlgate.ops.registry import get  # local: the catalogue imports torch; only a rewrite needs it

    return get(spec).onnx_op


def _names(m: onnx.ModelProto) -> set:
    """Every name the main graph uses: tensors, initializers, nodes."""
    out = {i.name for i in m.graph.input} | {o.name for o in m.graph.output} | {i.name for i in m.graph.initializer}
    for n in m.graph.node:
        out.update(n.input)
        out.update(n.output)
        out.add(n.name)
    return out


def _site_key(graph: Graph, t: int, mode: str) -> tuple:
    """A site's mode, dtype and the operator producing its tensor (``input``, ``constant``)."""
    p = graph.producers().get(t)
    src = graph.nodes[p].op if p is not None else "constant" if t in graph.consts else "input"
    return mode, graph.tensors[t].dtype, src


def chain_twin(rw: Rewrite, graph: Graph, model: onnx.ModelProto, rng: random.Random, ok, make,
               prefer: dict | None = None) -> Twin | None:
    """The twin of an identity-chain rewrite: a site drawn from :func:`sites` (``ok`` its
    type test), the chain ``make(type, rng) -> (steps, where)`` inserted there. With
    ``prefer`` (an earlier twin's ``where``), the draw is among the sites of the same mode,
    dtype and producing operator, where there are any."""
    where_ok = sites(graph, ok)
    if not where_ok:
        return None
    if prefer:
        want = (prefer.get("mode"), str(prefer.get("type", "")).split("[")[0], prefer.get("producer"))
        like = [s for s in where_ok if _site_key(graph, *s) == want]
        where_ok = like or where_ok
    t, mode = where_ok[rng.randrange(len(where_ok))]
    steps, detail = make(graph.tensors[t], rng)
    g, m = insert_chain(graph, model, t, mode, steps)
    validate(m)
    where = {"tensor": graph.name(t), "mode": mode, "type": str(graph.tensors[t]),
             "producer": _site_key(graph, t, mode)[2], **detail}
    return Twin(rw.name, where, m.SerializeToString(), g)



# -- ONNX scopes --------------------------------------------------------------------------

def reads(node: onnx.NodeProto) -> list:
    """The names ``node`` reads, in order: its inputs, then what its subgraph attributes
    (If branches, Loop and Scan bodies) read from the enclosing scope."""
    out = [x for x in node.input if x]
    for a in node.attribute:
        for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else
                    list(a.graphs) if a.type == onnx.AttributeProto.GRAPHS else []):
            out.extend(x for x in outer_reads(sub) if x not in out)
    return out


def outer_reads(g: onnx.GraphProto) -> list:
    """The names a subgraph reads that it does not define (its outer-scope references)."""
    defined = {i.name for i in g.input} | {i.name for i in g.initializer}
    out: list = []
    for n in g.node:
        for x in reads(n):
            if x not in defined and x not in out:
                out.append(x)
        defined.update(n.output)
    return out + [o.name for o in g.output if o.name not in defined and o.name not in out]


def topo_order(deps: list, rng: random.Random) -> list | None:
    """Another topological order of nodes ``0..n-1`` (``deps[i]``: the nodes ``i`` reads
    from), drawn by ``rng``; None when the current order is the only one. Kahn's algorithm
    picking a random ready node; where the draw gives back the current order, the order
    that differs at the first step with a choice is taken instead."""
    n = len(deps)

    def kahn(pick) -> tuple:
        left = [set(d) for d in deps]
        users: dict = {i: [] for i in range(n)}
        for i, d in enumerate(deps):
            for j in d:
                users[j].append(i)
        ready = sorted(i for i in range(n) if not left[i])
        order, choice = [], False
        while ready:
            k = pick(ready)
            choice = choice or len(ready) > 1
            i = ready.pop(k)
            order.append(i)
            for u in users[i]:
                left[u].discard(i)
                if not left[u]:
                    ready.append(u)
            ready.sort()
        return order, choice

    order, choice = kahn(lambda ready: rng.randrange(len(ready)))
    if not choice:
        return None
    if order == list(range(n)):
        first = [True]

        def second(ready):
            if len(ready) > 1 and first[0]:
                first[0] = False
                return 1
            return 0

        order, _ = kahn(second)
    return order
