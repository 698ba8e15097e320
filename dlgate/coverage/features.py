"""Coverage features of a generated graph: HirFuzz's three criteria, extended.

Each feature is a string whose prefix (before the first ``:``) names its criterion:

* ``op_dtype:Op:sig``   an operator inserted with that input dtype signature (HirFuzz's
  operator x dtype; the signature, not one dtype, since Cast and QuantizeLinear differ by
  their second type);
* ``op_shape:Op:2x3``   an operator whose first output has that shape (HirFuzz's operator x
  output shape; ``scalar`` for rank 0);
* ``edge:A>B``          an edge from an operator to an operator (HirFuzz's operator edge);
* ``path3:A>B>C``       a path of three operators (HirFuzz's extension of edges to paths);
* ``motif:Name:intent`` a motif and the side of its rewrite's decision it was drawn on
  (``fires`` or ``declines:<condition>``).

Which rewrites a compiler applied (``rewrite:<backend>:<kind>``) is not a property of the
graph: it comes from the backends (``Backend.rewrites``) and is kept in the coverage state
(:mod:`dlgate.coverage.state`) only.

Operators are named by spec (``ConvBnFusion``, ``GeluErfIdiom``), the generator's unit of
choice. Features are a pure function of the graph.
"""
from __future__ import annotations

from dlgate.graph.ir import Graph
from dlgate.ops.motif import Motif
from dlgate.ops.registry import get

CRITERIA = ("op_dtype", "op_shape", "edge", "path3", "motif")
#: HirFuzz's three criteria, the ones its paper counts.
HIRFUZZ = ("op_dtype", "op_shape", "edge")


def op_dtype(op: str, sig) -> str:
    return f"op_dtype:{op}:{','.join(sig)}"


def edge(a: str, b: str) -> str:
    return f"edge:{a}>{b}"


def path3(a: str, b: str, c: str) -> str:
    return f"path3:{a}>{b}>{c}"


def motif(name: str, intent: str) -> str:
    return f"motif:{name}:{intent}"


def shape_text(shape) -> str:
    return "x".join(str(d) for d in shape) if len(shape) else "scalar"


def graph_features(graph: Graph) -> list:
    """The graph's coverage features, sorted."""
    out: set = set()
    producer = graph.producers()
    preds: list = []  # per node: the operator names of its producing nodes
    for n in graph.nodes:
        spec = get(n.op)
        out.add(op_dtype(n.op, [graph.tensors[t].dtype for t in n.inputs]))
        if n.outputs:
            out.add(f"op_shape:{n.op}:{shape_text(graph.tensors[n.outputs[0]].shape)}")
        if isinstance(spec, Motif):
            out.add(motif(n.op, spec.intent(n.attrs)))
        ps = sorted({producer[t] for t in n.inputs if t in producer})
        preds.append(ps)
    for k, n in enumerate(graph.nodes):
        for p in preds[k]:
            pn = graph.nodes[p]
            out.add(edge(pn.op, n.op))
            for q in preds[p]:
                out.add(path3(graph.nodes[q].op, pn.op, n.op))
    return sorted(out)


def criterion(feature: str) -> str:
    return feature.split(":", 1)[0]
