"""The generated graph: the data type the generator hands to materialization."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dlgate.ops.base import TensorType, sampling_window


@dataclass
class Node:
    op: str  # spec name
    attrs: dict
    inputs: list
    outputs: list

    def to_json(self) -> dict:
        return {"op": self.op, "attrs": self.attrs, "inputs": self.inputs, "outputs": self.outputs}


@dataclass
class Graph:
    """A DAG over tensors. Every tensor is a graph input, a constant (initializer) or the
    output of exactly one node; ``nodes`` is in topological order."""

    tensors: list
    nodes: list
    inputs: list
    consts: list
    outputs: list
    opset: int
    values: dict = field(default_factory=dict)  # const tensor id -> np.ndarray
    #: Symbolic input dimensions (``dlgate.graph.dynamic``), or None for a static graph:
    #: ``{"dims": [[input position, axis, symbol], ...], "bindings": [{symbol: size}, ...]}``;
    #: the tensors hold the first binding's shapes, ``bindings`` the further ones.
    dynamic: dict | None = None
    #: For a case drawn with extreme values (``dlgate.graph.extreme``): ``{"kinds": [...]}``,
    #: the kinds of special value its leaves may hold; None for an ordinary case.
    extreme: dict | None = None
    #: For a case whose first draw failed (``Generator.generate``): ``{"attempts", "reason"}``
    #: and, for the one-operator fallback, ``"fallback"`` (its operator); None otherwise.
    #: How the case was made, not part of the graph: written in the case's ``meta.json``.
    redrawn: dict | None = None
    #: For a case drawn to exercise a change's target (``GenConfig.aims``): ``{"target":
    #: key}`` (and ``"degenerate": True`` when it drew degenerate attribute values).
    aimed: dict | None = None

    def name(self, t: int) -> str:
        return f"t{t}"

    def consumers(self) -> dict:
        out: dict = {t: [] for t in range(len(self.tensors))}
        for i, n in enumerate(self.nodes):
            for t in n.inputs:
                out[t].append(i)
        return out

    def producers(self) -> dict:
        return {t: i for i, n in enumerate(self.nodes) for t in n.outputs}

    def ancestors(self, tensors) -> list:
        """Indices of the operators that ``tensors`` depend on (their producers included), in order."""
        producer = self.producers()
        todo, seen = [producer[t] for t in tensors if t in producer], set()
        while todo:
            i = todo.pop()
            if i not in seen:
                seen.add(i)
                todo.extend(producer[t] for t in self.nodes[i].inputs if t in producer)
        return sorted(seen)

    def op_names(self) -> list:
        return [n.op for n in self.nodes]

    def to_json(self) -> dict:
        d = {
            "opset": self.opset,
            "tensors": [t.to_json() for t in self.tensors],
            "nodes": [n.to_json() for n in self.nodes],
            "inputs": self.inputs,
            "consts": self.consts,
            "outputs": self.outputs,
        }
        if self.dynamic is not None:
            d["dynamic"] = self.dynamic
        if self.extreme is not None:
            d["extreme"] = self.extreme
        return d

    @staticmethod
    def from_json(d: dict, values: dict | None = None) -> "Graph":
        return Graph(
            tensors=[TensorType.from_json(t) for t in d["tensors"]],
            nodes=[Node(n["op"], n["attrs"], list(n["inputs"]), list(n["outputs"])) for n in d["nodes"]],
            inputs=list(d["inputs"]),
            consts=list(d["consts"]),
            outputs=list(d["outputs"]),
            opset=d["opset"],
            values=dict(values or {}),
            dynamic=d.get("dynamic"),
            extreme=d.get("extreme"),
        )

    def input_types(self) -> list:
        return [self.tensors[t] for t in self.inputs]

    def output_types(self) -> list:
        return [self.tensors[t] for t in self.outputs]


def random_values(rng: np.random.Generator, t: TensorType, span: tuple | None = None) -> np.ndarray:
    """Plain random values of the right dtype: the starting point before any input search.
    ``span`` narrows floating-point values to a range (e.g. inside an operator's domain)."""
    shape = tuple(t.shape)
    if span is not None and t.dtype in ("float16", "float32", "float64"):
        return rng.uniform(span[0], span[1], size=shape).astype(t.dtype)
    if t.dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if t.dtype == "uint8":
        return rng.integers(0, 16, size=shape).astype(np.uint8)
    if t.dtype in ("int8", "int32", "int64"):
        return rng.integers(-8, 9, size=shape).astype(t.dtype)
    return rng.uniform(-4.0, 4.0, size=shape).astype(t.dtype)


def domain_spans(graph: "Graph", specs: dict) -> dict:
    """Tensor id -> a value range to draw starting values from, for graph inputs and
    constants that reach an operator with a restricted domain: the operator's own
    ``input_range`` (a range inside its domain), carried back through the operators
    between (``OpSpec.input_span``: ranges kept by Reshape or ReduceMax, inverted by Exp).
    Consumers are taken from the last node back (a range carried back through monotone
    operators also keeps those operators within their domains, so the deepest constraint
    is the most informative); ranges reaching one tensor intersect when they overlap, else
    the first stays. Ranges are carried whole and narrowed to a sampling-friendly width
    (``sampling_window``) only at the end. ``specs`` maps spec names to specs."""
    spans: dict = {}
    leaves = set(graph.inputs) | set(graph.consts)
    producer = graph.producers()

    def carry(t: int, span: tuple, depth: int) -> None:
        if depth > SPAN_DEPTH:
            return
        if t in leaves:
            old = spans.get(t)
            if old is None:
                spans[t] = span
            elif max(old[0], span[0]) <= min(old[1], span[1]):
                spans[t] = (max(old[0], span[0]), min(old[1], span[1]))  # both consumers' wishes
            return
        node = graph.nodes[producer[t]]
        spec = specs[node.op]
        if t != node.outputs[0] and not (spec.keeps_range and graph.tensors[t].dtype == graph.tensors[node.inputs[0]].dtype):
            return  # only outputs that carry the input's values (not TopK's indices)
        ins = [graph.tensors[u] for u in node.inputs]
        for i, u in enumerate(node.inputs):
            s = _sane(spec.input_span(node.attrs, i, span, ins))
            if s is not None:
                carry(u, s, depth + 1)

    for node in reversed(graph.nodes):
        spec = specs[node.op]
        for i, t in enumerate(node.inputs):
            span = _sane(spec.input_range(node.attrs, i))
            if span is not None:
                carry(t, span, 0)
    return {t: sampling_window(*r) for t, r in spans.items()}


def _sane(span: tuple | None) -> tuple | None:
    """A finite, ordered range with plain float ends (no -0.0 upper end), rounded to 7
    significant digits, or None. Carried ranges come from transcendental functions, which
    may differ in the last bit between CPUs and math libraries; the rounding keeps the
    values drawn from them, and so the generated model's bytes, the same everywhere."""
    if span is None:
        return None
    lo, hi = float(f"{float(span[0]):.6e}") + 0.0, float(f"{float(span[1]):.6e}") + 0.0
    return (lo, hi) if np.isfinite(lo) and np.isfinite(hi) and lo <= hi else None


#: How many operators a starting-value range is carried back through.
SPAN_DEPTH = 12
