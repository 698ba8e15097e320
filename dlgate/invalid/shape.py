"""Incompatible input shapes: one input of a broadcasting operator (Add, Where, Equal...)
or of MatMul is doubled along one axis, just before it (a Concat of the tensor with
itself), where the other operands' size there makes the shapes incompatible: neither
equal nor 1 for broadcasting, or a contraction dimension that no longer matches for
MatMul. The Concat itself is valid; the node that reads it is not."""
from __future__ import annotations

import random

from onnx import helper

from dlgate.invalid.base import PREFIX, Known, Rule, Site, insert_before

#: Operators whose inputs broadcast in both directions (NumPy's rules).
BROADCASTING = frozenset((
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "And", "Or", "Xor", "Equal", "Greater", "GreaterOrEqual", "Less",
    "LessOrEqual", "Max", "Min", "Mean", "Sum", "Where", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"))


def _broadcast_axes(shapes: list, j: int) -> list:
    """Axes of input ``j`` that, doubled, no longer broadcast with the others: its size
    there ``d`` is known, and another input's size at the aligned axis is known, above 1
    and not ``2d``."""
    rank = max(len(s) for s in shapes)
    out = []
    for a, d in enumerate(shapes[j]):
        if d is None or d < 1:
            continue
        pos = rank - len(shapes[j]) + a
        for k, s in enumerate(shapes):
            at = pos - (rank - len(s))
            if k != j and 0 <= at < len(s) and s[at] is not None and s[at] > 1 and s[at] != 2 * d:
                out.append(a)
                break
    return out


def _matmul_axes(shapes: list, j: int) -> list:
    """The contraction axis of MatMul's input ``j`` (A's last, B's second to last, a 1-D
    operand's only one) when both operands' sizes there are known."""
    a, b = shapes
    if not a or not b:
        return []
    ka, kb = a[-1], (b[-2] if len(b) > 1 else b[0])
    if ka is None or kb is None or ka < 1 or kb < 1:
        return []
    return [len(a) - 1] if j == 0 else [len(b) - 2 if len(b) > 1 else 0]


class IncompatibleShapes(Rule):
    name = "shape"
    breaks = "an operator's input shapes do not broadcast or multiply"

    def _axes(self, known: Known, node, j: int) -> list:
        names = list(node.input)
        if node.op_type not in BROADCASTING | {"MatMul"} or len(names) < 2 or not all(names):
            return []
        shapes = [known.shape(n) for n in names]
        if any(s is None for s in shapes) or not shapes[j]:
            return []
        return _matmul_axes(shapes, j) if node.op_type == "MatMul" else _broadcast_axes(shapes, j)

    def sites(self, model, known: Known) -> list:
        return [Site(i, (j, a)) for i, node in enumerate(model.graph.node) for j in range(len(node.input))
                for a in self._axes(known, node, j)]

    def apply(self, model, known: Known, site: Site, rng: random.Random) -> dict:
        node = model.graph.node[site.node]
        j, a = site.what
        src = node.input[j]
        doubled = f"{PREFIX}doubled_{site.node}_{j}"
        insert_before(model, site.node, helper.make_node("Concat", [src, src], [doubled],
                                                         name=f"{PREFIX}concat_{site.node}", axis=a))
        model.graph.node[site.node + 1].input[j] = doubled
        shape = list(known.shape(src))
        wide = shape[:a] + [2 * shape[a]] + shape[a + 1:]
        others = [known.shape(n) for k, n in enumerate(node.input) if k != j]
        return {"detail": f"input {j} ({src}) doubled along axis {a}: {shape} -> {wide}, against "
                          f"{', '.join(str(s) for s in others)}", "input": j, "axis": a}
