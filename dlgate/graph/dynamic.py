"""Dynamic shapes: graphs whose inputs declare symbolic dimensions (ONNX ``dim_param``).

Exporters mark the batch axis, and the sequence axis of sequence models, as symbolic; the
importers and runtimes under test then compile once for every size. A dynamic graph is a
static one (the generator's, at its first *binding* of the symbols) plus further bindings
at which it is just as valid: every operator's ``requires`` holds and its ``infer`` gives
the shapes, with the attributes and constants unchanged. Sizes that no binding can change
(a Reshape to a constant shape, a constant that must broadcast) stay fixed, because no
further binding of them passes; such a graph stays static.

A case runs each binding against the reference; a backend compiles the symbolic model once
and runs it at every binding (``dlgate.check``).
"""
from __future__ import annotations

import random

from dlgate.graph.ir import Graph
from dlgate.ops.base import Limits, all_true
from dlgate.ops.registry import get

#: Symbols exporters use, and the input axes they name: the batch on axis 0, the sequence on
#: axis 1 of inputs of rank 3 or more.
SYMBOLS = (("batch", 0, 1), ("seq", 1, 3))
#: How many further bindings a dynamic graph gets, and tries to find each.
BINDINGS = 2
TRIES = 6


def reinfer(graph: Graph, types: list, nodes: list | None = None) -> Graph | None:
    """The graph with ``nodes`` (default: its own) and every operator's output types
    re-inferred by its spec from ``types`` (whose graph inputs may have changed), or None
    when a spec rejects them."""
    nodes = graph.nodes if nodes is None else nodes
    types = list(types)
    for n in nodes:
        spec = get(n.op)
        ins = [types[i] for i in n.inputs]
        try:
            if not all_true(spec.requires(ins, n.attrs)):
                return None
            outs = spec.infer(ins, n.attrs)
        except Exception:  # attributes that encode the old shapes, or cannot go together
            return None
        if any(not isinstance(d, int) or d < 1 for o in outs for d in o.shape):
            return None
        for o, ty in zip(n.outputs, outs):
            types[o] = ty
    return Graph(types, nodes, graph.inputs, graph.consts, graph.outputs, graph.opset, dict(graph.values),
                 graph.dynamic, graph.extreme)


def _bound_types(graph: Graph, binding: dict) -> list:
    types = list(graph.tensors)
    for pos, axis, sym in graph.dynamic["dims"]:
        t = graph.inputs[pos]
        shape = list(types[t].shape)
        shape[axis] = binding[sym]
        types[t] = types[t].with_shape(shape)
    return types


def first_binding(graph: Graph) -> dict:
    """The symbols' sizes in the graph's own (first) shapes."""
    out = {}
    for pos, axis, sym in graph.dynamic["dims"]:
        out.setdefault(sym, graph.tensors[graph.inputs[pos]].shape[axis])
    return out


def bindings(graph: Graph) -> list:
    """Every binding of a dynamic graph, its own first; [] for a static graph."""
    if not graph.dynamic:
        return []
    return [first_binding(graph)] + [dict(b) for b in graph.dynamic["bindings"]]


def at(graph: Graph, k: int) -> Graph:
    """The static graph at binding ``k`` (0: the graph's own shapes)."""
    if k == 0:
        return Graph(graph.tensors, graph.nodes, graph.inputs, graph.consts, graph.outputs, graph.opset,
                     dict(graph.values), extreme=graph.extreme)
    g = reinfer(graph, _bound_types(graph, graph.dynamic["bindings"][k - 1]))
    if g is None:
        raise ValueError(f"binding {k} of the dynamic graph no longer type-checks")
    g.dynamic = None
    return g


def _fits(g: Graph, limits: Limits) -> bool:
    return all(t.rank <= limits.max_rank and t.numel <= limits.max_elems and max(t.shape, default=1) <= 4 * limits.max_dim
               for t in g.tensors)


def make_dynamic(graph: Graph, rng: random.Random, limits: Limits = Limits()) -> Graph:
    """The graph with symbolic input dimensions and further bindings, when some symbol can
    take other sizes; else the graph unchanged. Deterministic in ``rng``."""
    dims = []
    # inputs read by a motif whose rewrite needs symbolic dims (``Motif.needs_dynamic``) first,
    # so the symbols take their sizes
    wanting = {t for n in graph.nodes if get(n.op).needs_dynamic for t in n.inputs}
    order = sorted(range(len(graph.inputs)), key=lambda pos: graph.inputs[pos] not in wanting)
    for sym, axis, min_rank in SYMBOLS:
        # the axis of every input whose size there equals the first such input's: exporters
        # give related inputs one symbol
        size = None
        for pos in order:
            t = graph.inputs[pos]
            ty = graph.tensors[t]
            if ty.rank >= max(min_rank, axis + 1) and (size is None or ty.shape[axis] == size):
                size = ty.shape[axis]
                dims.append([pos, axis, sym])
    if not dims:
        return graph
    rng.shuffle(dims)
    # Try all the candidate dims, then fewer (a Reshape may fix the batch but not the sequence).
    for keep in (dims, *([d] for d in dims[:3])):
        trial = Graph(graph.tensors, graph.nodes, graph.inputs, graph.consts, graph.outputs, graph.opset,
                      graph.values, {"dims": sorted(keep), "bindings": []}, graph.extreme)
        own = first_binding(trial)
        found = []
        for _ in range(TRIES):
            if len(found) == BINDINGS:
                break
            b = {s: rng.randint(1, 2 * max(v, 2)) for s, v in sorted(own.items())}
            if b == own or b in found:
                continue
            g = reinfer(trial, _bound_types(trial, b))
            if g is not None and _fits(g, limits):
                found.append(b)
        if found:
            trial.dynamic["bindings"] = found
            return trial
    return graph


def symbolic_shapes(graph: Graph) -> dict:
    """Tensor id -> its shape with a symbol's name where the size follows that symbol at
    every binding, ``None`` where it varies otherwise, the size where it never varies."""
    binds = bindings(graph)
    graphs = [graph] + [at(graph, k) for k in range(1, len(binds))]
    out = {}
    for t, ty in enumerate(graph.tensors):
        shape = []
        for axis, size in enumerate(ty.shape):
            sizes = [g.tensors[t].shape[axis] for g in graphs]
            if len(set(sizes)) == 1:
                shape.append(size)
                continue
            sym = next((s for s in binds[0] if [b[s] for b in binds] == sizes), None)
            shape.append(sym)
        out[t] = tuple(shape)
    for pos, axis, sym in graph.dynamic["dims"]:  # declared symbolic, whatever the bindings
        t = graph.inputs[pos]
        out[t] = out[t][:axis] + (sym,) + out[t][axis + 1:]
    return out


def describe(binding: dict) -> str:
    return ", ".join(f"{s}={v}" for s, v in sorted(binding.items()))

