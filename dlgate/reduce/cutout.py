"""The rest of a case once operators are cut out of it: what hides behind a failure.

A model stops at its first failure: a compiler that crashes on one operator, refuses one
it has no converter for, or gets one wrong, says nothing about the others. Cutting those
operators out (the reducer's cut, :func:`dlgate.reduce.candidates.cut_map`) leaves a model of
the others in which every tensor the cut operators made and a kept operator consumes is fed
the *reference's* value of that tensor on the case's inputs: the kept operators see exactly
the values they saw in the whole model, so what fails there fails in the whole model too,
and nothing is solved or searched again.

The rest is static, at the case's own shapes, even when the case declares symbolic dims: a
compiler that refuses those must still be asked about the rest.

A fed tensor is a constant where the compiler could know its value before the run in the
whole model (it derives only from constants and from input shapes: ``Shape``, ``Size``,
``EyeLike``), so a shape computation stays foldable as it was; every other fed tensor is a
graph input, as computed data is.
"""
from __future__ import annotations

import re

from dlgate.check import Prepared
from dlgate.graph.ir import Graph
from dlgate.ops.registry import get
from dlgate.reduce.candidates import _checks, as_case, cut_map, fed, intermediates

#: Operators whose outputs depend only on their inputs' shapes (and attributes).
SHAPE_ONLY = ("Shape", "Size", "EyeLike")


def static_tensors(graph: Graph) -> set:
    """The tensors whose values are known before the run: constants, the outputs of
    shape-only operators, and the outputs of operators that read only such tensors."""
    known = set(graph.consts)
    for n in graph.nodes:  # topological order
        if get(n.op).onnx_op in SHAPE_ONLY or all(t in known for t in n.inputs):
            known.update(n.outputs)
    return known


def reference_values(case: Prepared) -> dict:
    """Every tensor's value in the reference run of the whole case (what a cut feeds)."""
    return intermediates(case.graph, case.inputs)


def cut_out(case: Prepared, env: dict, removed, tag: str):
    """``(case, keep)``: ``case`` without the operators ``removed`` (indices), the tensors
    the others consume from them fed ``env``'s values, ``keep`` the indices of the
    operators left, in order (operator ``k`` of the cut case is operator ``keep[k]`` of
    ``case``); None when no operator is left."""
    keep = [i for i in range(len(case.graph.nodes)) if i not in set(removed)]
    if not keep:
        return None
    static = static_tensors(case.graph)
    g, feeds, _ = cut_map(case.graph, env, keep, as_const=[t for t in fed(case.graph, keep) if t in static])
    g.dynamic = None  # the rest runs static, at the case's own shapes: a refusal of symbolic dims hides nothing
    if not g.outputs:
        return None
    cut = as_case(case, g, feeds, tag)
    cut.meta.update(id=cut.id, operators=[n.op for n in g.nodes])  # its folder runs as itself
    return cut, keep


def valid(case: Prepared) -> bool:
    """ONNX's full checker accepts the case's model (a cut model it refuses would judge
    the cut, not the compiler)."""
    return _checks(case.model)


def _types(op: str) -> tuple:
    spec = get(op)
    return (spec.onnx_op,) + tuple(spec.onnx_ops)


def refused(graph: Graph, error: dict | None) -> list:
    """Indices of the operators whose ONNX operator types a refusal names (TVM lists the
    operator types it has no converter for; onnxruntime names the operator and its node),
    matched as whole, case-sensitive words; empty when it names none of them."""
    text = f"{(error or {}).get('type', '')}: {(error or {}).get('message', '')}"
    named = {t for n in graph.nodes for t in _types(n.op)
             if re.search(rf"(?<![A-Za-z0-9]){re.escape(t)}(?![A-Za-z0-9])", text)}
    return [i for i, n in enumerate(graph.nodes) if named & set(_types(n.op))]
